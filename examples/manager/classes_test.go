package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/sliceclass/sliceclass/conditions"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

func TestParseClassesFile(t *testing.T) {
	specs, err := parseClassesFile([]byte(`
- name: gold
  caps: {cpu: 4, memory: 8Gi}
  budget: {cpu: "64"}
- name: silver
`))
	require.NoError(t, err)
	require.Len(t, specs, 2)
	assert.Equal(t, "gold", specs[0].Name)
	assert.Equal(t, int64(4), specs[0].Caps.Cpu().Value(), "an unquoted number is a quantity too")
	assert.Equal(t, "8Gi", specs[0].Caps.Memory().String())
	assert.Equal(t, int64(64), specs[0].Budget.Cpu().Value())
	assert.Nil(t, specs[1].Caps, "no caps: --cap applies")
	assert.Nil(t, specs[1].Budget, "no budget: --budget applies")

	none, err := parseClassesFile([]byte("[]\n"))
	require.NoError(t, err, "an explicit empty list serves no class")
	assert.Empty(t, none)

	bad := []struct {
		reason string
		file   string
	}{
		{"an empty file is more likely half written than meant", "  \n"},
		{"not a list", "name: gold\n"},
		{"not YAML", "- name: [gold\n"},
		{"a typo in a field name must not be ignored", "- name: gold\n  bugdet: {cpu: 1}\n"},
		{"a class needs a name", "- caps: {cpu: 1}\n"},
		{"Liqo serves the default class itself", "- name: default\n"},
		{"not a valid class name", "- name: Gold Class\n"},
		{"a class given twice", "- name: gold\n- name: gold\n"},
		{"a negative cap", "- name: gold\n  caps: {cpu: -1}\n"},
		{"a cap beyond int64 would be reported wrong", "- name: gold\n  caps: {cpu: 1000E}\n"},
		{"not a quantity", "- name: gold\n  caps: {cpu: lots}\n"},
		{"a negative budget", "- name: gold\n  budget: {cpu: -1}\n"},
	}
	for _, tc := range bad {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := parseClassesFile([]byte(tc.file))
			assert.Error(t, err, "file %q", tc.file)
		})
	}
}

func TestParseFlagsClassesFile(t *testing.T) {
	o, err := parseFlags([]string{"--classes-file", "/etc/classes.yaml", "--cap", "cpu=2"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "sliceclass-classes-file", o.leaderElectionName(), "the file's classes change while the lease is held")
	o, err = parseFlags([]string{"--classes-file", "/etc/classes.yaml", "--leader-election-id", "mine"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "mine", o.leaderElectionName())
	_, err = parseFlags([]string{"--classes-file", "/etc/classes.yaml", "--class-name", "gold"}, io.Discard)
	assert.Error(t, err, "--class-name and --classes-file are exclusive")
}

func TestClassesFileFollowsTheFile(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := controlplane.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = slicetest.DefaultNamespace
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	path := filepath.Join(t.TempDir(), "classes.yaml")
	write := func(content string) {
		t.Helper()
		// As the kubelet updates a mounted ConfigMap: a new file renamed
		// over the old one.
		tmp := path + ".tmp"
		require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
		require.NoError(t, os.Rename(tmp, path))
	}
	write("- name: filegold\n  caps: {cpu: 2}\n")

	o, err := parseFlags([]string{"--classes-file", "/nonexistent/classes.yaml", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, io.Discard)
	require.NoError(t, err)
	_, err = newManager(o, cp.Config)
	require.Error(t, err, "a missing file at start-up is an error: there is no running set to keep")

	o, err = parseFlags([]string{"--classes-file", path, "--cap", "cpu=8", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, io.Discard)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, cp.Config) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("manager did not stop")
		}
	})

	create := func(name, class string) {
		t.Helper()
		require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client,
			slicetest.NewSlice(name, slicetest.WithClass(class), slicetest.WithRequest("cpu", "16"))))
	}
	grantedCPU := func(name string) func() (int64, bool) {
		return func() (int64, bool) {
			var rs authv1beta1.ResourceSlice
			if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &rs); err != nil || !conditions.IsAccepted(&rs) {
				return 0, false
			}
			return rs.Status.Resources.Cpu().Value(), true
		}
	}
	waitFor := func(what string, name string, want int64) {
		t.Helper()
		get := grantedCPU(name)
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			select {
			case err := <-done:
				return false, errors.Join(errors.New("run returned"), err)
			default:
			}
			got, ok := get()
			return ok && got == want, nil
		})
		require.NoError(t, err, "waiting for %s: %s granted cpu=%d", what, name, want)
	}

	create("g1", "filegold")
	waitFor("the file's class to be served with its caps", "g1", 2)

	// rewrite writes the file and waits until the manager has read it with
	// result ("applied" or "refused").
	rewrite := func(content, result string) {
		t.Helper()
		before := testutil.ToFloat64(reloadsTotal.WithLabelValues(result))
		write(content)
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return testutil.ToFloat64(reloadsTotal.WithLabelValues(result)) > before, nil
		})
		require.NoError(t, err, "waiting for the manager to read the file as %s", result)
	}
	rewrite("- name: filegold\n  caps: {cpu: 3}\n- name: filesilver\n", "applied")
	create("s1", "filesilver")
	waitFor("a class added to the file, with --cap as its caps", "s1", 8)
	waitFor("a changed class to be served again, re-evaluating its slices", "g1", 3)

	rewrite("- name: filegold\n  caps: {cpu: -3}\n", "refused")
	create("s2", "filesilver")
	waitFor("the running set to be kept after a bad file", "s2", 8)
	got, _ := grantedCPU("g1")()
	assert.Equal(t, int64(3), got, "a bad file changes nothing")

	rewrite("- name: filegold\n  caps: {cpu: 3}\n", "applied")
	create("s3", "filesilver")
	waitFor("filegold to keep serving (unchanged entries are not served again)", "g1", 3)
	stillWaiting := func() bool {
		var rs authv1beta1.ResourceSlice
		require.NoError(t, cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "s3"}, &rs))
		return !conditions.IsDecided(&rs)
	}
	// The removal was applied before s3 was created: s3 must stay
	// undecided (a bounded wait for "nothing happens").
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		require.True(t, stillWaiting(), "a class removed from the file decides nothing more")
		time.Sleep(200 * time.Millisecond)
	}
}

// The shipped ConfigMap's file is one the manager accepts.
func TestShippedClassesConfigMapParses(t *testing.T) {
	raw, err := os.ReadFile("deploy/classes-configmap.yaml")
	require.NoError(t, err)
	var cm corev1.ConfigMap
	require.NoError(t, yaml.UnmarshalStrict(raw, &cm))
	specs, err := parseClassesFile([]byte(cm.Data["classes.yaml"]))
	require.NoError(t, err)
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"gold", "silver"}, names)
}
