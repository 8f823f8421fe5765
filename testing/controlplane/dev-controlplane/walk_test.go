package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// repoRoot is where the walk's commands run (hack/slices.columns,
// ./examples/manager).
const repoRoot = "../../.."

// walkBlock finds the walk's marked blocks in docs/budgets.md: the marker
// names the block's part (control plane, manager, kubectl).
var walkBlock = regexp.MustCompile("(?s)<!-- walk: ([a-z ]+) -->\n```[a-z]*\n(.*?)```")

// walkStep is one command of a kubectl block and the output the doc shows.
type walkStep struct {
	command string
	want    []string
}

// walk is docs/budgets.md's on-call walk.
type walk struct {
	controlPlane string
	manager      string
	steps        []walkStep
}

// readWalk extracts the walk from docs/budgets.md.
func readWalk(t *testing.T) walk {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", "budgets.md"))
	require.NoError(t, err)
	var w walk
	for _, m := range walkBlock.FindAllStringSubmatch(string(raw), -1) {
		switch m[1] {
		case "control plane":
			w.controlPlane = m[2]
		case "manager":
			w.manager = m[2]
		case "kubectl":
			w.steps = append(w.steps, consoleSteps(m[2])...)
		default:
			t.Fatalf("docs/budgets.md: unknown walk block %q", m[1])
		}
	}
	require.NotEmpty(t, w.controlPlane, "docs/budgets.md: no walk block for the control plane")
	require.NotEmpty(t, w.manager, "docs/budgets.md: no walk block for the manager")
	require.NotEmpty(t, w.steps, "docs/budgets.md: no kubectl walk block")
	return w
}

// consoleSteps splits a console block into its commands ("$ " lines, with
// the here document that follows one ending in <<'EOF') and the output
// shown after each.
func consoleSteps(block string) []walkStep {
	var steps []walkStep
	lines := strings.Split(strings.TrimRight(block, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		cmd, ok := strings.CutPrefix(lines[i], "$ ")
		if !ok {
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, lines[i])
			continue
		}
		if strings.HasSuffix(cmd, "<<'EOF'") {
			for i++; i < len(lines); i++ {
				cmd += "\n" + lines[i]
				if lines[i] == "EOF" {
					break
				}
			}
		}
		steps = append(steps, walkStep{command: cmd})
	}
	return steps
}

func TestConsoleSteps(t *testing.T) {
	got := consoleSteps("$ export A=b\n$ kubectl apply -f - <<'EOF'\nkind: X\n$ not a command\nEOF\ncreated\n$ kubectl get x\nNAME\nx\n")
	assert.Equal(t, []walkStep{
		{command: "export A=b"},
		{command: "kubectl apply -f - <<'EOF'\nkind: X\n$ not a command\nEOF", want: []string{"created"}},
		{command: "kubectl get x", want: []string{"NAME", "x"}},
	}, got)
}

// age matches what kubectl prints for an age (AGE, LAST SEEN, events' Age).
var age = regexp.MustCompile(`^(<invalid>|(\d+d)?(\d+h)?(\d+m)?(\d+s)?)$`)

// normalize makes a line comparable across runs: its fields, single-spaced,
// with ages replaced.
func normalize(line string) string {
	fields := strings.Fields(line)
	for i, f := range fields {
		if f != "" && age.MatchString(f) {
			fields[i] = "<age>"
		}
	}
	return strings.Join(fields, " ")
}

// matches says whether got is the output want shows: the same lines, or,
// when want has a "..." line (lines skipped), want's other lines in order
// among got's.
func matches(want []string, got string) bool {
	var gotLines []string
	for _, l := range strings.Split(strings.TrimRight(got, "\n"), "\n") {
		gotLines = append(gotLines, normalize(l))
	}
	elided := false
	var wantLines []string
	for _, l := range want {
		if strings.TrimSpace(l) == "..." {
			elided = true
			continue
		}
		wantLines = append(wantLines, normalize(l))
	}
	if !elided {
		return strings.Join(wantLines, "\n") == strings.Join(gotLines, "\n")
	}
	next := 0
	for _, l := range gotLines {
		if next < len(wantLines) && l == wantLines[next] {
			next++
		}
	}
	return next == len(wantLines)
}

func TestMatches(t *testing.T) {
	got := "NAME   AGE\npremium   2m3s\nother 1\n"
	assert.True(t, matches([]string{"NAME AGE", "premium   40s", "other 1"}, got), "ages aside")
	assert.False(t, matches([]string{"NAME AGE", "premium   40s"}, got), "a line missing")
	assert.True(t, matches([]string{"...", "other    1"}, got), "lines skipped")
	assert.False(t, matches([]string{"other 1", "...", "NAME AGE"}, got), "out of order")
}

// kubectlBinary finds kubectl: $KUBECTL, beside the control plane's binaries
// (install-envtest -kubectl builds it there), then on PATH.
func kubectlBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KUBECTL"); p != "" {
		return p
	}
	if dir, err := controlplane.AssetsDir(); err == nil {
		if p := filepath.Join(dir, "kubectl"); isExecutable(p) {
			return p
		}
	}
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	const why = "no kubectl: set KUBECTL, or build it beside the control plane's binaries (make envtest, or install-envtest -kubectl)"
	if os.Getenv(controlplane.RequireEnv) != "" {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// TestOnCallWalk runs docs/budgets.md's on-call walk as a user does: the
// dev control plane (run, as `make dev-controlplane` runs it), the manager
// with the block's own shell, and each kubectl command, until its output is
// the one the doc shows (a decision or a budget's status takes a moment). It
// writes nothing in the repo: the kubeconfig ($PWD/dev-controlplane.kubeconfig
// in the doc) and the classes file (/tmp/) go to the test's directory.
func TestOnCallWalk(t *testing.T) {
	envkit.SkipWithoutControlPlane(t)
	kubectl := kubectlBinary(t)
	w := readWalk(t)
	require.Equal(t, "make dev-controlplane", strings.TrimSpace(w.controlPlane), "the control plane's block is the command run runs")
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "dev-controlplane.kubeconfig")
	rewrite := strings.NewReplacer("$PWD/dev-controlplane.kubeconfig", kubeconfig, "/tmp/", dir+"/").Replace

	ctx, interrupt := context.WithCancel(context.Background())
	outPath := filepath.Join(dir, "dev-controlplane.out")
	out, err := os.Create(outPath)
	require.NoError(t, err)
	printed := func() string {
		b, err := os.ReadFile(outPath)
		require.NoError(t, err)
		return string(b)
	}
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runErr = run(ctx, []string{"-kubeconfig", kubeconfig}, out, testr.New(t))
	}()
	t.Cleanup(func() {
		interrupt()
		select {
		case <-done:
			assert.NoError(t, runErr, "stopping the dev control plane")
		case <-time.After(envkit.WaitTimeout):
			t.Errorf("the dev control plane did not stop within %s", envkit.WaitTimeout)
		}
		_ = out.Close()
	})
	envkit.Eventually(t, "the dev control plane's instructions", func() bool {
		select {
		case <-done:
			t.Fatalf("the dev control plane ended: %v\n%s", runErr, printed())
		default:
		}
		return strings.Contains(printed(), "Running until interrupted")
	})

	managerLog := filepath.Join(dir, "manager.log")
	managerExited := startManager(t, rewrite(w.manager), managerLog)

	env := append(os.Environ(), "PATH="+filepath.Dir(kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var exports []string
	// The first decision waits for the manager's build (go run) too, which
	// on a loaded machine takes minutes of its own; the rest for a decision
	// or a status write.
	timeout := 3 * envkit.WaitTimeout
	for _, s := range w.steps {
		cmd := rewrite(s.command)
		if strings.HasPrefix(cmd, "export ") {
			exports = append(exports, cmd)
			continue
		}
		script := strings.Join(append(exports[:len(exports):len(exports)], cmd), "\n") + "\n"
		var last string
		ok := false
		for deadline := time.Now().Add(timeout); !ok && time.Now().Before(deadline); {
			select {
			case <-managerExited:
				b, _ := os.ReadFile(managerLog)
				t.Fatalf("docs/budgets.md's walk: the manager ended before %s:\n%s", s.command, b)
			default:
			}
			sh := exec.Command("sh", "-c", script)
			sh.Dir, sh.Env = repoRoot, env
			b, err := sh.CombinedOutput()
			last = string(b)
			if err != nil {
				last += "(" + err.Error() + ")"
			}
			if ok = err == nil && matches(s.want, last); !ok {
				time.Sleep(500 * time.Millisecond) // the poll's interval: the output is awaited, not timed
			}
		}
		if !ok {
			t.Fatalf("docs/budgets.md's walk: %s\nwant:\n%s\ngot, after %v:\n%s", s.command, strings.Join(s.want, "\n"), timeout, last)
		}
		if strings.Contains(cmd, " get ") || strings.Contains(cmd, " describe ") {
			timeout = envkit.WaitTimeout
		}
	}
}

// startManager runs the walk's manager block with sh in the repo, its
// output to logPath, and stops it (its whole process group: go run and the
// manager) when the test ends. The returned channel is closed if it ends
// before.
func startManager(t *testing.T, script, logPath string) <-chan struct{} {
	t.Helper()
	log, err := os.Create(logPath)
	require.NoError(t, err)
	sh := exec.Command("sh", "-c", script)
	sh.Dir = repoRoot
	sh.Stdout, sh.Stderr = log, log
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, sh.Start())
	exited := make(chan error, 1)
	ended := make(chan struct{})
	go func() {
		exited <- sh.Wait()
		close(ended)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-sh.Process.Pid, syscall.SIGTERM)
		select {
		case err := <-exited:
			t.Logf("the manager's shell ended: %v", err) // killed: an error is expected
		case <-time.After(envkit.WaitTimeout):
			_ = syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
			t.Errorf("the manager did not stop within %s of SIGTERM: killed (%v)", envkit.WaitTimeout, <-exited)
		}
		_ = log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("the manager's output:\n%s", b)
		}
	})
	return ended
}
