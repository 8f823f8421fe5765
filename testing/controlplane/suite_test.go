package controlplane_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// childEnv, set in a process TestRunSuite starts, makes this package's
// TestMain a RunSuite TestMain and runs the TestChild tests: one that needs
// the control plane, one that does not.
const childEnv = "SLICECLASS_TEST_RUNSUITE_CHILD"

// suite is the control plane RunSuite gives the child.
var suite *controlplane.ControlPlane

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "" {
		os.Exit(m.Run())
	}
	os.Exit(controlplane.RunSuite(m, &suite))
}

func TestChildUsesTheControlPlane(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestRunSuite in a process of its own")
	}
	suite.Require(t)
	var list authv1beta1.ResourceSliceList
	require.NoError(t, suite.Client.List(context.Background(), &list))
	fmt.Println("child: control-plane test ran")
}

func TestChildNeedsNoControlPlane(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestRunSuite in a process of its own")
	}
	fmt.Println("child: unit test ran")
}

// TestChildForgetsRequire uses the control plane without Require: under
// -short it fails, with an error saying what to add.
func TestChildForgetsRequire(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestRunSuite in a process of its own")
	}
	var list authv1beta1.ResourceSliceList
	require.NoError(t, suite.Client.List(context.Background(), &list))
	_, err := suite.AddUser("someone")
	require.NoError(t, err)
}

// RunSuite runs a package's unit tests whether or not it starts a control
// plane; the tests that Require one are skipped, and counted on standard
// error without -v, when it does not.
func TestRunSuite(t *testing.T) {
	cases := map[string]struct {
		reason string
		// short runs the child with -test.short; assets gives it the
		// envtest binaries this process finds.
		short, assets, require bool
		// run names the child's tests (default: the two TestChild ones
		// that use Require properly).
		run           string
		wantExit      int
		want, wantNot []string
	}{
		"Short": {
			reason: "-short starts nothing and runs the unit tests; the control-plane test says why it skipped",
			short:  true, assets: true,
			want:    []string{"child: unit test ran", "controlplane: 1 test skipped: not started under -short"},
			wantNot: []string{"child: control-plane test ran"},
		},
		"NoBinaries": {
			reason: "without binaries the unit tests run and the skip line names what is missing and how to get it",
			want: []string{"child: unit test ran", "controlplane: 1 test skipped: no envtest binaries",
				"install-envtest", "KUBEBUILDER_ASSETS"},
			wantNot: []string{"child: control-plane test ran"},
		},
		"NoBinariesRequired": {
			reason:  "with SLICECLASS_REQUIRE_ENVTEST missing binaries fail the package",
			require: true, wantExit: 1,
			want:    []string{"controlplane: no envtest binaries"},
			wantNot: []string{"child: unit test ran", "tests skipped"},
		},
		"ShortRequired": {
			reason: "-short wins over SLICECLASS_REQUIRE_ENVTEST: nothing is started, nothing fails",
			short:  true, require: true,
			want:    []string{"child: unit test ran", "controlplane: 1 test skipped: not started under -short"},
			wantNot: []string{"child: control-plane test ran"},
		},
		"ForgottenRequire": {
			reason: "a test that uses the control plane without Require fails saying what to add, instead of a nil dereference",
			short:  true, run: "^TestChildForgetsRequire$", wantExit: 1,
			want: []string{"controlplane: not started under -short: a test that uses the control plane calls cp.Require(t) first"},
		},
		"Started": {
			reason:  "with binaries every test runs and nothing is reported skipped",
			assets:  true,
			want:    []string{"child: unit test ran", "child: control-plane test ran"},
			wantNot: []string{"skipped"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env := []string{childEnv + "=1", "KUBEBUILDER_ASSETS=", controlplane.AssetsDirEnv + "=" + t.TempDir(), controlplane.RequireEnv + "="}
			if tc.assets {
				if !tc.short {
					envkit.SkipWithoutControlPlane(t) // the child starts one
				}
				if assets, err := controlplane.AssetsDir(); err == nil {
					env = append(env, "KUBEBUILDER_ASSETS="+assets)
				}
			}
			if tc.require {
				env = append(env, controlplane.RequireEnv+"=1")
			}
			run := tc.run
			if run == "" {
				run = "^TestChild(UsesTheControlPlane|NeedsNoControlPlane)$"
			}
			args := []string{"-test.run=" + run, "-test.count=1"}
			if tc.short {
				args = append(args, "-test.short")
			}
			cmd := exec.Command(os.Args[0], args...)
			if !tc.assets {
				// Away from any bin/envtest of an enclosing directory (the
				// others stay here, where `go list` finds Liqo's CRDs).
				cmd.Dir = t.TempDir()
			}
			cmd.Env = append(os.Environ(), env...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			exit := 0
			var exitErr *exec.ExitError
			switch err := cmd.Run(); {
			case errors.As(err, &exitErr):
				exit = exitErr.ExitCode()
			default:
				require.NoError(t, err)
			}
			assert.Equal(t, tc.wantExit, exit, "%s\n%s", tc.reason, out.String())
			for _, w := range tc.want {
				assert.Contains(t, out.String(), w, tc.reason)
			}
			for _, w := range tc.wantNot {
				assert.NotContains(t, out.String(), w, tc.reason)
			}
		})
	}
}

// TestChildHoldsTheControlPlane starts (through RunSuite) a control plane,
// says so, and waits to be killed.
func TestChildHoldsTheControlPlane(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestControlPlaneDiesWithItsTestProcess in a process of its own")
	}
	suite.Require(t)
	fmt.Println("child: holding the control plane")
	time.Sleep(envkit.WaitTimeout)
}

// A test process killed mid-run (SIGKILL: no deferred Stop, no TestMain
// clean-up) takes its etcd and kube-apiserver with it.
func TestControlPlaneDiesWithItsTestProcess(t *testing.T) {
	envkit.SkipWithoutControlPlane(t)
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv (util-linux): the control plane cannot be tied to its parent here")
	}
	assets, err := controlplane.AssetsDir()
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildHoldsTheControlPlane$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1", "KUBEBUILDER_ASSETS="+assets)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	ready := make(chan error, 1)
	go func() {
		scan := bufio.NewScanner(out)
		for scan.Scan() {
			if strings.Contains(scan.Text(), "child: holding the control plane") {
				ready <- nil
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
		ready <- fmt.Errorf("the child ended before it held a control plane: %w", scan.Err())
	}()
	select {
	case err := <-ready:
		require.NoError(t, err)
	case <-time.After(envkit.WaitTimeout):
		t.Fatal("timed out waiting for the child to start its control plane")
	}
	children := childrenOf(t, cmd.Process.Pid)
	names := map[string]int{}
	for _, pid := range children {
		names[commOf(pid)] = pid
	}
	require.Contains(t, names, "etcd", "the child's processes: %v", names)
	require.Contains(t, names, "kube-apiserver", "the child's processes: %v", names)

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	for _, name := range []string{"etcd", "kube-apiserver"} {
		pid := names[name]
		envkit.Eventually(t, fmt.Sprintf("%s (pid %d) gone with its parent", name, pid), func() bool { return !alive(pid) })
	}
}

// childrenOf lists pid's children (Linux: /proc/PID/task/*/children).
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	require.NoError(t, err)
	var pids []int
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(field); err == nil {
				pids = append(pids, p)
			}
		}
	}
	return pids
}

// commOf is a process's command name, "" once it is gone.
func commOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// alive reports whether pid runs: a zombie (killed, not yet reaped by
// whoever adopted it) does not.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name's closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}
