package sliceclass_test

// The Go snippets of docs/*.md that are not in readme_test.go, verbatim, so
// that they compile and run; TestDocSnippetsCompile fails when a snippet of
// README.md or docs/*.md is in neither file.

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/cappedresources"
	managerflags "github.com/sliceclass/sliceclass/examples/manager/flags"
	"github.com/sliceclass/sliceclass/flags"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// cp is the control plane of the snippets that need one (docs/testing.md).
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { os.Exit(controlplane.RunSuite(m, &cp)) }

// docs/testing.md

func TestGoldOnAServer(t *testing.T) {
	cp.Require(t) // var cp *controlplane.ControlPlane, from controlplane.RunSuite in TestMain
	ctx := context.Background()
	ns, err := envkit.CreateConsumer(ctx, cp.Client, "alice")
	require.NoError(t, err)
	envkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "gold", capped)
	})
	rs := slicetest.NewSlice("s1", slicetest.WithNamespace(ns), slicetest.WithConsumer("alice"),
		slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "16"))
	require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, rs))
	envkit.Eventually(t, "s1 capped at 8 CPU", func() bool {
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), rs))
		return conditions.IsAccepted(rs) && rs.Status.Resources.Cpu().Equal(resource.MustParse("8"))
	})
}

func TestGoldReclaimsFromSpot(t *testing.T) {
	b, err := budget.New("shared", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}, budget.WithPreemption())
	require.NoError(t, err)
	spot := slicetest.NewSlice("spot-1", slicetest.WithClass("spot"), slicetest.WithRequest("cpu", "8"),
		slicetest.Decided(authv1beta1.ResourceSliceConditionAccepted, "Granted"))
	spot.Status.Resources = spot.Spec.Resources.DeepCopy() // spot holds 8 of the 10 CPUs
	gold := slicetest.NewSlice("gold-1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))

	h := slicetest.New(t, "gold", capped, slicetest.WithObjects(spot, gold),
		slicetest.WithReconcilerOptions(resourceslice.WithBudget(b), resourceslice.WithPriority(10)),
		slicetest.WithAnotherClass("spot", capped, resourceslice.WithBudget(b)))
	require.Equal(t, authv1beta1.ResourceSliceConditionDenied, h.Reconcile(gold).Decision) // 2 CPUs free: gold waits
	h.ReconcilePending()                                                                   // the reclaim, then the waiter

	shrunk := h.Reconcile(spot)
	assert.Equal(t, budget.ReasonReclaimed, shrunk.Reason)
	assert.True(t, shrunk.Resources.Cpu().Equal(resource.MustParse("4")))
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, h.Reconcile(gold).Decision)
}

// docs/deploying.md

func userMain() error {
	v := flags.Bind(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(v.Logger())
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil { // Kubernetes' types: node pools, owned ConfigMaps
		return err
	}
	for _, add := range []func(*runtime.Scheme) error{
		authv1beta1.AddToScheme,       // Liqo's ResourceSlices and Tenants
		offloadingv1beta1.AddToScheme, // Liqo's Quotas, which budgets count
		v1alpha1.AddToScheme,          // SliceBudgets
	} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	cfg, err := v.RESTConfig() // --kubeconfig, else KUBECONFIG, in-cluster, ~/.kube/config
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, v.ManagerOptions(scheme)) // metrics, probes, leader election
	if err != nil {
		return err
	}
	if err := flags.AddProbes(mgr); err != nil { // /healthz, and /readyz once the cache synced
		return err
	}
	classes, err := v.ClassConfigs(mgr) // checks the flags; each class of the chart's --classes-file, whole
	if err != nil {
		return err
	}
	set, err := resourceslice.NewClassSet(mgr) // many classes, one set
	if err != nil {
		return err
	}
	for _, c := range classes {
		// The flags' options, then the file's: its budgets (a SliceBudget,
		// its own, shared ones), its priority.
		if err := set.Serve(c.Name, capped, c.Options...); err != nil {
			return err
		}
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

var _ = userMain

// TestDocDeployingListsEveryFlag checks the example manager's --help
// paragraph of docs/deploying.md against the flag set the manager parses
// (examples/manager/flags.NewFlagSet): every flag it has is named there,
// and no flag it lacks.
func TestDocDeployingListsEveryFlag(t *testing.T) {
	raw, err := os.ReadFile("docs/deploying.md")
	require.NoError(t, err)
	_, para, ok := strings.Cut(string(raw), "`--help` lists every flag")
	require.True(t, ok, "docs/deploying.md: the paragraph listing the example manager's flags is gone")
	para, _, _ = strings.Cut(para, "\n\n")
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`--([a-z][a-z-]*)").FindAllStringSubmatch(para, -1) {
		named[m[1]] = true
	}
	has := map[string]bool{}
	managerflags.NewFlagSet(&managerflags.Values{}).VisitAll(func(f *flag.Flag) { has[f.Name] = true })
	require.NotEmpty(t, has, "the manager's flag set has no flag")
	for name := range has {
		assert.True(t, named[name], "docs/deploying.md: the --help paragraph does not name --%s", name)
	}
	for name := range named {
		assert.True(t, has[name], "docs/deploying.md: the --help paragraph names --%s, which the manager does not have", name)
	}
}

// docs/coming-from-the-template.md

// templateCapped is the template's capped policy as an SDK handler: a
// resource without a cap passes through as asked, and every slice is
// Accepted, an empty request too.
func templateCapped(caps corev1.ResourceList) handler.Func {
	return func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		offer := corev1.ResourceList{}
		for name, asked := range rs.Spec.Resources {
			if limit, ok := caps[name]; ok && asked.Cmp(limit) > 0 {
				offer[name] = limit
				continue
			}
			offer[name] = asked
		}
		rs.Status.Resources = offer
		conditions.Accept(rs, "ResourceSliceResourcesAccepted", "ResourceSlice resources accepted")
		return ctrl.Result{}, nil
	}
}

func setupPorted(mgr ctrl.Manager, class string) error {
	caps, err := flags.ParseResourceList("cpu=4,memory=8Gi,pods=110,ephemeral-storage=20Gi")
	if err != nil {
		return err
	}
	return resourceslice.AddToManager(mgr, class, templateCapped(caps))
}

var _ = setupPorted

// What docs/coming-from-the-template.md says of the two capped policies,
// run on the harness: the template's passes an uncapped resource through
// and accepts an empty request; the SDK's example drops the one and denies
// the other.
func TestTemplateAndExampleDiffer(t *testing.T) {
	caps, err := cappedresources.ParseCaps("cpu=4")
	require.NoError(t, err)
	example, err := cappedresources.New(caps)
	require.NoError(t, err)
	gpus := slicetest.NewSlice("gpus", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "8"), slicetest.WithRequest("nvidia.com/gpu", "1000"))
	empty := slicetest.NewSlice("empty", slicetest.WithClass("gold"))
	// decide reconciles a copy of slice once, on a harness of its own.
	decide := func(h handler.Handler, slice *authv1beta1.ResourceSlice) slicetest.Result {
		slice = slice.DeepCopy()
		return slicetest.New(t, "gold", h, slicetest.WithObjects(slice)).Reconcile(slice)
	}

	res := decide(templateCapped(caps), gpus)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision)
	gpu := res.Resources["nvidia.com/gpu"]
	assert.Equal(t, int64(1000), gpu.Value(), "the template passes an uncapped resource through")
	assert.True(t, res.Resources.Cpu().Equal(resource.MustParse("4")))
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, decide(templateCapped(caps), empty).Decision,
		"the template accepts an empty request")

	res = decide(example, gpus)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision)
	assert.NotContains(t, res.Resources, corev1.ResourceName("nvidia.com/gpu"), "the example drops it")
	assert.Contains(t, res.Message, "nvidia.com/gpu", "and names it")
	res = decide(example, empty)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, res.Decision)
	assert.Equal(t, cappedresources.ReasonNoResources, res.Reason)
}

// TestDocSnippetsCompile checks that every Go snippet in README.md and
// docs/*.md is in readme_test.go, docs_test.go or docs_fromobject_test.go,
// so a snippet that does not compile fails the build.
func TestDocSnippetsCompile(t *testing.T) {
	var self string
	for _, f := range []string{"readme_test.go", "docs_test.go", "docs_fromobject_test.go"} {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		self += string(raw)
	}
	pages, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, pages, "docs/ has pages")
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	snippets := 0
	for _, page := range append([]string{"README.md"}, pages...) {
		raw, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, b := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
			snippets++
			assert.Contains(t, norm(self), norm(b[1]), "%s: a Go snippet in neither readme_test.go nor docs_test.go:\n%s", page, b[1])
		}
	}
	assert.GreaterOrEqual(t, snippets, 10, "the snippets were not found: the pattern or the pages are broken")
}
