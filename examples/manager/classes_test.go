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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/cappedresources"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

func TestParseClassesFile(t *testing.T) {
	cfg, err := parseClassesFile([]byte(`
- name: gold
  caps: {cpu: 4, memory: 8Gi}
  budget: {cpu: "64"}
- name: silver
`))
	require.NoError(t, err)
	specs := cfg.Classes
	require.Len(t, specs, 2)
	assert.Equal(t, "gold", specs[0].Name)
	assert.Equal(t, int64(4), specs[0].Caps.Cpu().Value(), "an unquoted number is a quantity too")
	assert.Equal(t, "8Gi", specs[0].Caps.Memory().String())
	assert.Equal(t, int64(64), specs[0].Budget.Cpu().Value())
	assert.Nil(t, specs[1].Caps, "no caps: --cap applies")
	assert.Nil(t, specs[1].Budget, "no budget: --budget applies")

	cfg, err = parseClassesFile([]byte(`
budgets:
  - name: pool
    total: {cpu: "10"}
    preemption: {withinBudget: LowerPriority}
    evictionAfterSeconds: 600
    consumerLimits: [{consumer: globex, limits: {cpu: "0"}}]
classes:
  - name: spot
    budgets: [pool]
  - name: gold
    priority: 100
    budgets: [pool]
`))
	require.NoError(t, err)
	assert.Equal(t, &v1alpha1.SliceBudgetPreemption{WithinBudget: v1alpha1.PreemptionLowerPriority}, cfg.Budgets[0].Preemption)
	assert.Equal(t, ptr.To[int32](600), cfg.Budgets[0].EvictionAfterSeconds)
	require.Len(t, cfg.Budgets[0].ConsumerLimits, 1)
	assert.Equal(t, "globex", cfg.Budgets[0].ConsumerLimits[0].Consumer)
	globex := cfg.Budgets[0].ConsumerLimits[0].Limits.ResourceList()
	assert.True(t, globex.Cpu().IsZero(), "globex may hold nothing")
	assert.Equal(t, int32(100), cfg.Classes[1].Priority)

	none, err := parseClassesFile([]byte("[]\n"))
	require.NoError(t, err, "an explicit empty list serves no class")
	assert.Empty(t, none.Classes)
	none, err = parseClassesFile([]byte("classes: []\n"))
	require.NoError(t, err, "an explicit empty list serves no class")
	assert.Empty(t, none.Classes)

	cfg, err = parseClassesFile([]byte(`
budgets:
  - name: provider
    pool: {selector: {}, resources: [cpu, memory]}
    consumerLimit: {cpu: "32"}
  - name: premium
    total: {cpu: "64"}
classes:
  - name: gpu
    caps: {nvidia.com/gpu: 2}
    pool: {selector: {pool: gpu}, resources: [nvidia.com/gpu], reserve: {nvidia.com/gpu: 1}, sharePercent: 90, localPods: true}
    consumerLimit: {nvidia.com/gpu: 2}
  - name: gold
    budget: {cpu: "16"}
    consumerLimit: {cpu: "4"}
    budgets: [premium, provider]
`))
	require.NoError(t, err)
	require.Len(t, cfg.Budgets, 2)
	assert.Equal(t, "provider", cfg.Budgets[0].Name)
	assert.Equal(t, map[string]string{}, cfg.Budgets[0].Pool.Selector, "{} selects every node")
	require.Len(t, cfg.Classes, 2)
	gpu := cfg.Classes[0]
	require.NotNil(t, gpu.Pool)
	assert.Equal(t, map[string]string{"pool": "gpu"}, gpu.Pool.Selector)
	assert.Equal(t, 90, gpu.Pool.SharePercent)
	assert.True(t, gpu.Pool.LocalPods)
	assert.Equal(t, int64(2), gpu.ConsumerLimit.Name("nvidia.com/gpu", "").Value())
	assert.Equal(t, []string{"premium", "provider"}, cfg.Classes[1].Budgets)

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
		{"caps of nothing offer nothing", "- name: gold\n  caps: {}\n"},
		{"neither a list nor an object", "gold\n"},
		{"an object without classes", "budgets: []\n"},
		{"a typo in the object", "classes: []\nbudget_list: []\n"},
		{"budget and pool are exclusive", "- name: gold\n  budget: {cpu: 1}\n  pool: {selector: {}}\n"},
		{"a pool without a selector", "- name: gold\n  pool: {resources: [cpu]}\n"},
		{"a selector that is not a label", "- name: gold\n  pool: {selector: {\"a b\": c}}\n"},
		{"a share beyond 100", "- name: gold\n  pool: {selector: {}, sharePercent: 101}\n"},
		{"a negative share", "- name: gold\n  pool: {selector: {}, sharePercent: -1}\n"},
		{"a pool of no resource", "- name: gold\n  pool: {selector: {}, resources: []}\n"},
		{"a resource counted twice", "- name: gold\n  pool: {selector: {}, resources: [cpu, cpu]}\n"},
		{"a negative reserve", "- name: gold\n  pool: {selector: {}, reserve: {cpu: -1}}\n"},
		{"a consumer limit with no budget to limit", "- name: gold\n  consumerLimit: {cpu: 1}\n"},
		{"an empty consumer limit", "- name: gold\n  budget: {cpu: 1}\n  consumerLimit: {}\n"},
		{"a negative consumer limit", "- name: gold\n  budget: {cpu: 1}\n  consumerLimit: {cpu: -1}\n"},
		{"a budget the file does not declare", "classes: [{name: gold, budgets: [nope]}]\n"},
		{"a budget named twice by a class", "budgets: [{name: a, total: {cpu: 1}}]\nclasses: [{name: gold, budgets: [a, a]}]\n"},
		{"a shared budget declared twice", "budgets: [{name: a, total: {cpu: 1}}, {name: a, total: {cpu: 2}}]\nclasses: []\n"},
		{"a shared budget without a name", "budgets: [{total: {cpu: 1}}]\nclasses: []\n"},
		{"a shared budget of nothing", "budgets: [{name: a}]\nclasses: []\n"},
		{"a shared budget with total and pool", "budgets: [{name: a, total: {cpu: 1}, pool: {selector: {}}}]\nclasses: []\n"},
		{"a negative consumer limit override", "budgets: [{name: a, total: {cpu: 1}, consumerLimits: [{consumer: globex, limits: {cpu: -1}}]}]\nclasses: []\n"},
		{"a consumer given twice", "budgets: [{name: a, total: {cpu: 1}, consumerLimits: [{consumer: globex, limits: {cpu: 0}}, {consumer: globex, limits: {cpu: 1}}]}]\nclasses: []\n"},
		{"an override of no resource", "budgets: [{name: a, total: {cpu: 1}, consumerLimits: [{consumer: globex, limits: {}}]}]\nclasses: []\n"},
		{"preemption with no budget of the class's own", "- name: gold\n  preemption: {withinBudget: LowerPriority}\n"},
		{"an unknown preemption policy", "- name: gold\n  budget: {cpu: 1}\n  preemption: {withinBudget: Always}\n"},
		{"evictionAfterSeconds with no budget of the class's own", "- name: gold\n  evictionAfterSeconds: 60\n"},
		{"a negative evictionAfterSeconds", "budgets: [{name: a, total: {cpu: 1}, evictionAfterSeconds: -1}]\nclasses: []\n"},
		{"the old preemption: true", "budgets: [{name: a, total: {cpu: 1}, preemption: true}]\nclasses: []\n"},
		{"the old evictionAfter", "budgets: [{name: a, total: {cpu: 1}, evictionAfter: 10m}]\nclasses: []\n"},
		{"the old map of consumerLimits", "budgets: [{name: a, total: {cpu: 1}, consumerLimits: {globex: {cpu: 0}}}]\nclasses: []\n"},
		{"a class's own budget and a shared budget of one name would share metric series", "budgets: [{name: gold, total: {cpu: 1}}]\nclasses: [{name: gold, budget: {cpu: 2}}]\n"},
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
	assert.Equal(t, "sliceclass-classes-file", o.LeaderElectionName(), "the file's classes change while the lease is held")
	o, err = parseFlags([]string{"--classes-file", "/etc/classes.yaml", "--leader-election-id", "mine"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "mine", o.LeaderElectionName())
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
	write := func(content string) { t.Helper(); replaceFile(t, path, content) }
	write("- name: filegold\n  caps: {cpu: 2}\n")

	o, err := parseFlags([]string{"--classes-file", "/nonexistent/classes.yaml", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, io.Discard)
	require.NoError(t, err)
	_, err = newManager(o, cp.Config)
	require.Error(t, err, "a missing file at start-up is an error: there is no running set to keep")

	o, err = parseFlags([]string{"--classes-file", path, "--cap", "cpu=8", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, io.Discard)
	require.NoError(t, err)
	ended := serve(t, o, cp.Config)

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
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, func(context.Context) (bool, error) {
			if ended, err := ended(); ended {
				return false, errors.Join(errors.New("run returned"), err)
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
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, func(context.Context) (bool, error) {
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
	cfg, err := parseClassesFile([]byte(cm.Data["classes.yaml"]))
	require.NoError(t, err)
	names := make([]string, 0, len(cfg.Classes))
	for _, s := range cfg.Classes {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"gold", "silver"}, names)
}

// A file declaring a node pool as a shared budget with a consumer limit:
// the pool is sized from a Node created through the API, and one consumer
// gets no more than its limit from it.
func TestClassesFileNodePool(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := controlplane.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = slicetest.DefaultNamespace
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "pool-node", Labels: map[string]string{"pool": "test"}}}
	require.NoError(t, cp.Client.Create(ctx, node))
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	require.NoError(t, cp.Client.Status().Update(ctx, node))

	path := filepath.Join(t.TempDir(), "classes.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
budgets:
  - name: provider
    pool: {selector: {pool: test}, resources: [cpu]}
    consumerLimit: {cpu: "3"}
classes:
  - name: poolgold
    caps: {cpu: "2"}
    budgets: [provider]
`), 0o600))
	o, err := parseFlags([]string{"--classes-file", path, "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, io.Discard)
	require.NoError(t, err)
	serve(t, o, cp.Config)

	for _, name := range []string{"p1", "p2"} {
		require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client,
			slicetest.NewSlice(name, slicetest.WithClass("poolgold"), slicetest.WithRequest("cpu", "2"))))
	}
	reasons := map[string]int{}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		clear(reasons)
		for _, name := range []string{"p1", "p2"} {
			var rs authv1beta1.ResourceSlice
			if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &rs); err != nil {
				return false, err
			}
			c := conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeResources)
			if c == nil {
				return false, nil
			}
			reasons[string(c.Status)+"/"+c.Reason]++
		}
		return true, nil
	})
	require.NoError(t, err, "waiting for both slices to be decided")
	assert.Equal(t, map[string]int{"Accepted/" + cappedresources.ReasonGranted: 1, "Denied/" + budget.ReasonConsumerLimit: 1}, reasons,
		"the pool has 8 CPU, the consumer may hold 3: one slice of 2")
}

// A change of consumerLimits in the file is followed live, on the running
// budget (issue 27): the consumer's Accepted slice is shrunk to the new
// limit with reason Reclaimed, and removing the override lifts the cap, so
// the slice's next decision grows back.
func TestClassesFileFollowsConsumerLimitsLive(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := controlplane.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = slicetest.DefaultNamespace // the consumer is the namespace: it has no cluster-ID label
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	path := filepath.Join(t.TempDir(), "classes.yaml")
	write := func(content string) { t.Helper(); replaceFile(t, path, content) }
	file := func(limits string) string {
		return "budgets:\n  - name: pool\n    total: {cpu: 10}\n" + limits + "classes:\n  - name: limgold\n    caps: {cpu: 6}\n    budgets: [pool]\n"
	}
	write(file(""))
	o, err := parseFlags([]string{"--classes-file", path, "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, io.Discard)
	require.NoError(t, err)
	serve(t, o, cp.Config)
	require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, slicetest.NewSlice("g", slicetest.WithClass("limgold"), slicetest.WithRequest("cpu", "6"))))
	offer := func(reason string, cpu int64) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			var rs authv1beta1.ResourceSlice
			if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "g"}, &rs); err != nil {
				return false, nil
			}
			c := conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeResources)
			return c != nil && c.Status == authv1beta1.ResourceSliceConditionAccepted && (reason == "" || c.Reason == reason) && rs.Status.Resources.Cpu().Value() == cpu, nil
		}
	}
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, offer("", 6)), "g Accepted with 6")

	before := testutil.ToFloat64(reloadsTotal.WithLabelValues("applied"))
	write(file("    consumerLimits: [{consumer: " + ns + ", limits: {cpu: \"2\"}}]\n"))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, offer(budget.ReasonReclaimed, 2)),
		"g shrunk to the consumer's new limit, reason Reclaimed")
	assert.Greater(t, testutil.ToFloat64(reloadsTotal.WithLabelValues("applied")), before)

	write(file(""))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, offer("", 6)),
		"the override removed: g's offer grows back")
}

// replaceFile writes content to path as the kubelet updates a mounted
// ConfigMap: a new file renamed over the old one.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// A shared budget's rules in the file have a SliceBudget's shapes and
// meanings (issue 44): preemption: {withinBudget: LowerPriority} lets gold
// (priority 100) reclaim from spot, which is shrunk with reason Reclaimed;
// evictionAfterSeconds: 0, eviction at once, builds (WithEvictionAfter
// refuses a zero duration: the file's 0 is the least delay).
func TestClassesFileBudgetRulesInSliceBudgetShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := controlplane.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = slicetest.DefaultNamespace
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	path := filepath.Join(t.TempDir(), "classes.yaml")
	replaceFile(t, path, `budgets:
  - name: pool
    total: {cpu: 10}
    preemption: {withinBudget: LowerPriority}
    evictionAfterSeconds: 0
classes:
  - {name: prspot, caps: {cpu: 8}, budgets: [pool]}
  - {name: prgold, caps: {cpu: 8}, budgets: [pool], priority: 100}
`)
	o, err := parseFlags([]string{"--classes-file", path, "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, io.Discard)
	require.NoError(t, err)
	serve(t, o, cp.Config)
	offer := func(name, reason string, cpu int64) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			var rs authv1beta1.ResourceSlice
			if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &rs); err != nil {
				return false, nil
			}
			c := conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeResources)
			return c != nil && c.Status == authv1beta1.ResourceSliceConditionAccepted && (reason == "" || c.Reason == reason) && rs.Status.Resources.Cpu().Value() == cpu, nil
		}
	}
	require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, slicetest.NewSlice("spot", slicetest.WithClass("prspot"), slicetest.WithRequest("cpu", "8"))))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, offer("spot", "", 8)), "spot Accepted with 8")
	require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, slicetest.NewSlice("gold", slicetest.WithClass("prgold"), slicetest.WithRequest("cpu", "6"))))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, offer("spot", budget.ReasonReclaimed, 4)),
		"spot shrunk by what gold lacks, reason Reclaimed")
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, offer("gold", "", 6)), "gold Accepted with 6")
}
