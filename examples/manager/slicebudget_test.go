package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	sdkflags "github.com/sliceclass/sliceclass/flags"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// A class names a SliceBudget instead of a budget of its own, in either
// form of the file, beside shared budgets of the file.
func TestParseClassesFileSliceBudget(t *testing.T) {
	cfg, err := parseClassesFile([]byte(`
- name: gold
  caps: {cpu: "8"}
  sliceBudget: premium
  priority: 100
- name: spot
  caps: {cpu: "8"}
  sliceBudget: premium
- name: silver
  budget: {cpu: "4"}
`))
	require.NoError(t, err)
	require.Len(t, cfg.Classes, 3)
	assert.Equal(t, "premium", cfg.Classes[0].SliceBudget)
	assert.Equal(t, "premium", cfg.Classes[1].SliceBudget, "classes share a SliceBudget by naming it")
	assert.Empty(t, cfg.Classes[2].SliceBudget, "the inline form still works")
	_, own := cfg.Classes[0].OwnBudget()
	assert.False(t, own, "a SliceBudget is not a budget the file builds")

	cfg, err = parseClassesFile([]byte(`
budgets:
  - {name: provider, pool: {selector: {}, resources: [cpu]}}
classes:
  - {name: gold, caps: {cpu: "8"}, sliceBudget: gpu.example.com, budgets: [provider]}
`))
	require.NoError(t, err)
	assert.Equal(t, "gpu.example.com", cfg.Classes[0].SliceBudget)
	assert.Equal(t, []string{"provider"}, cfg.Classes[0].Budgets, "a SliceBudget and shared budgets, all at once")

	for _, tc := range []struct{ reason, file, want string }{
		{"both forms of a class's budget at once: which one rules?",
			"- {name: gold, sliceBudget: premium, budget: {cpu: 4}}\n",
			`class "gold": sliceBudget "premium" and budget or pool are exclusive`},
		{"a SliceBudget and a node pool of the class's own",
			"- {name: gold, sliceBudget: premium, pool: {selector: {}}}\n",
			`class "gold": sliceBudget "premium" and budget or pool are exclusive`},
		{"a consumer limit beside a SliceBudget would be ignored: it belongs in the object",
			"- {name: gold, sliceBudget: premium, consumerLimit: {cpu: 1}}\n",
			"edit the object (kubectl edit sb premium)"},
		{"preemption beside a SliceBudget",
			"- {name: gold, sliceBudget: premium, preemption: {withinBudget: LowerPriority}}\n",
			"of a SliceBudget are in its spec"},
		{"not an object name", "- {name: gold, sliceBudget: Premium_Budget}\n",
			`sliceBudget "Premium_Budget" is not an object name`},
		{"a typo in the key must not be ignored", "- {name: gold, sliceBuget: premium}\n",
			"unknown field"},
		{"a shared budget of the same name would share its metric series",
			"budgets: [{name: premium, total: {cpu: 1}}]\nclasses: [{name: gold, sliceBudget: premium}]\n",
			`class "gold": sliceBudget "premium": the file builds a budget of that name too`},
		{"so would a class's own budget, named after the class",
			"- {name: premium, budget: {cpu: 1}}\n- {name: gold, sliceBudget: premium}\n",
			`sliceBudget "premium": the file builds a budget of that name too`},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := parseClassesFile([]byte(tc.file))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// With --classes-file the scheme knows SliceBudgets, whether or not the
// file names one yet; without it, it does not.
func TestManagerOptionsSchemeHasSliceBudgetsWithAFile(t *testing.T) {
	o, err := parseFlags([]string{"--classes-file", "/etc/classes.yaml", "--cap", "cpu=2"}, io.Discard)
	require.NoError(t, err)
	opts, err := managerOptions(o)
	require.NoError(t, err)
	assert.True(t, opts.Scheme.Recognizes(v1alpha1.GroupVersion.WithKind("SliceBudget")))

	o, err = parseFlags([]string{"--class-name", "gold", "--cap", "cpu=2"}, io.Discard)
	require.NoError(t, err)
	opts, err = managerOptions(o)
	require.NoError(t, err)
	assert.False(t, opts.Scheme.Recognizes(v1alpha1.GroupVersion.WithKind("SliceBudget")))
}

// objectBudgets stands in for budget.FromObject in a test: it builds a
// fixed budget of 10 CPU per object name and counts the calls; names in
// fail are refused.
type objectBudgets struct {
	mu    sync.Mutex
	calls map[string]int
	fail  map[string]bool
}

func (o *objectBudgets) fromObject(name string) (*budget.Budget, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls[name]++
	if o.fail[name] {
		return nil, errors.New("refused by the test")
	}
	return budget.New(name, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")})
}

func (o *objectBudgets) called(name string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls[name]
}

// Two classes naming one SliceBudget draw from one budget, built once and
// kept across reloads of the file; a class naming a SliceBudget whose
// budget cannot be built leaves the running set as it was, and is tried
// again. budget.FromObject is stood in for (objectBudgets): this tests the
// file's wiring, not the object's following.
func TestClassesFileSharesOneBudgetPerSliceBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := controlplane.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = slicetest.DefaultNamespace
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	path := filepath.Join(t.TempDir(), "classes.yaml")
	replaceFile(t, path, "- {name: sbgold, caps: {cpu: 6}, sliceBudget: premium}\n- {name: sbspot, caps: {cpu: 6}, sliceBudget: premium}\n")

	o, err := parseFlags([]string{"--classes-file", path, "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, io.Discard)
	require.NoError(t, err)
	opts, err := managerOptions(o)
	require.NoError(t, err)
	mgr, err := manager.New(cp.Config, opts)
	require.NoError(t, err)
	set, err := resourceslice.NewClassSet(mgr, o.ClassDefaults()...)
	require.NoError(t, err)
	objects := &objectBudgets{calls: map[string]int{}, fail: map[string]bool{"broken": true}}
	build := sdkflags.NewClassBuilder(mgr)
	build.FromObject = objects.fromObject
	f, err := newClassesFile(path, set, o.caps, nil, "", build, mgr.GetLogger())
	require.NoError(t, err)
	f.interval = 100 * time.Millisecond
	require.NoError(t, mgr.Add(f))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(envkit.WaitTimeout):
			t.Error("manager did not stop")
		}
	})

	for _, s := range []struct{ name, class string }{{"gold-1", "sbgold"}, {"spot-1", "sbspot"}} {
		require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client,
			slicetest.NewSlice(s.name, slicetest.WithClass(s.class), slicetest.WithRequest("cpu", "6"))))
	}
	reasons := map[string]string{}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range []string{"gold-1", "spot-1"} {
			var rs authv1beta1.ResourceSlice
			if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &rs); err != nil {
				return false, err
			}
			c := conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeResources)
			if c == nil {
				return false, nil
			}
			reasons[name] = string(c.Status)
		}
		return true, nil
	})
	require.NoError(t, err, "waiting for both slices to be decided")
	assert.ElementsMatch(t, []string{string(authv1beta1.ResourceSliceConditionAccepted), string(authv1beta1.ResourceSliceConditionDenied)}, []string{reasons["gold-1"], reasons["spot-1"]},
		"6 + 6 CPU from one budget of 10: one slice fits, the other waits")
	assert.Equal(t, 1, objects.called("premium"), "one budget for the two classes")

	rewrite := func(content, result string) {
		t.Helper()
		before := testutil.ToFloat64(reloadsTotal.WithLabelValues(result))
		replaceFile(t, path, content)
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, envkit.WaitTimeout, true, func(context.Context) (bool, error) {
			return testutil.ToFloat64(reloadsTotal.WithLabelValues(result)) > before, nil
		}), "waiting for the manager to read the file as %s", result)
	}
	rewrite("- {name: sbgold, caps: {cpu: 5}, sliceBudget: premium}\n", "applied")
	assert.Equal(t, 1, objects.called("premium"), "a reload keeps the budget following the object")
	assert.Equal(t, []string{"sbgold"}, set.Classes())

	rewrite("- {name: sbgold, caps: {cpu: 5}, sliceBudget: premium}\n- {name: sbbroken, caps: {cpu: 5}, sliceBudget: broken}\n", "failed")
	assert.Equal(t, []string{"sbgold"}, set.Classes(), "a class whose budget cannot be built is not served")
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, envkit.WaitTimeout, true, func(context.Context) (bool, error) {
		return objects.called("broken") >= 2, nil
	}), "a budget that could not be built is tried again at the next read")
	assert.Equal(t, 1, objects.called("premium"))
}

// A manager whose file names a SliceBudget builds (its scheme has the
// API: budget.FromObject checks, and never adds to it); one whose file
// names none needs no SliceBudget CRD.
func TestClassesFileNamingASliceBudgetBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := controlplane.Start(t)
	path := filepath.Join(t.TempDir(), "classes.yaml")
	// Each manager's set asks controller-runtime's process-wide
	// controller-name check (on, as by default) the first time it serves a
	// class: the classes are named for this run, and each manager's apart.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	require.NoError(t, os.WriteFile(path, []byte("- {name: gold-"+run+", caps: {cpu: 2}, sliceBudget: premium}\n"), 0o600))
	o, err := parseFlags([]string{"--classes-file", path, "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, io.Discard)
	require.NoError(t, err)
	_, err = newManager(o, cp.Config)
	require.NoError(t, err)

	require.NoError(t, os.WriteFile(path, []byte("- {name: inline-"+run+", caps: {cpu: 2}, budget: {cpu: 4}}\n"), 0o600))
	_, err = newManager(o, cp.Config)
	require.NoError(t, err, "the inline form needs no SliceBudget CRD")
}
