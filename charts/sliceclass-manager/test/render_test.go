package charttest

import (
	"bytes"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart, relative to this package.
const chartDir = ".."

// repoRoot is the repository, relative to this package.
const repoRoot = "../../.."

// releaseName is the release the tests install: the chart's name, so that
// the objects are named as examples/manager/deploy names them.
const releaseName = "sliceclass-manager"

// everyOption turns every option of values.yaml on (and changes what can be
// changed), with the class Leases in a namespace of their own.
const everyOption = `
replicaCount: 3
leaderElection: {enabled: true, warmup: false}
classes:
  - name: gold
    caps: {cpu: "8", memory: 32Gi, pods: "110"}
    budget: {cpu: "64", memory: 256Gi}
  - name: silver
sliceBudgets:
  - {name: sc-every-option, spec: {total: {cpu: "64"}, preemption: {withinBudget: LowerPriority}}}
defaultCaps: cpu=2,memory=4Gi
sharedBudget: cpu=16,memory=64Gi
classLease: {enabled: true, namespace: LEASES}
maxConcurrentReconciles: 8
decisionEvents: none
grantRecords: {namespace: RECORDS}
metrics: {port: 9090}
health: {port: 9091}
logging: {development: true, level: debug}
extraArgs: ["--zap-stacktrace-level=panic"]
serviceAccount: {create: true, name: custom-sa, annotations: {example.com/role: manager}}
rbac:
  create: true
  nodePools: true
  budgets: true
  sliceBudgets: true
  ownedTypes:
    - apiGroups: [""]
      resources: [configmaps]
      verbs: [get, list, watch]
  namespaceRules:
    RATES:
      - {apiGroups: [""], resources: [secrets], resourceNames: [rates, discounts], verbs: [get]}
  unservedReporter: true
admissionPolicy: {enabled: true}
metricsService: {enabled: true}
serviceMonitor: {enabled: true, interval: 15s, labels: {release: prometheus}}
dashboard: {enabled: true, namespace: GRAFANA}
podAnnotations: {example.com/team: platform}
podLabels: {example.com/tier: control}
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: control, effect: NoSchedule}]
priorityClassName: system-cluster-critical
imagePullSecrets: [{name: registry}]
`

// rendered is one object the chart rendered, and the template it came from.
type rendered struct {
	template string
	obj      *unstructured.Unstructured
}

// render renders the chart as `helm install` would into namespace, with
// valuesYAML over the chart's defaults, and decodes every object.
func render(t *testing.T, namespace, valuesYAML string) []rendered {
	t.Helper()
	files := renderFiles(t, namespace, valuesYAML)
	var out []rendered
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, _helpers.tpl
		}
		for _, doc := range splitDocuments(files[name]) {
			var u unstructured.Unstructured
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &u.Object), "%s:\n%s", name, doc)
			if len(u.Object) == 0 {
				continue
			}
			out = append(out, rendered{template: filepath.Base(name), obj: &u})
		}
	}
	require.NotEmpty(t, out, "the chart rendered nothing")
	return out
}

// renderFiles runs helm's engine and returns each template's output.
func renderFiles(t *testing.T, namespace, valuesYAML string) map[string]string {
	t.Helper()
	files, err := renderValues(t, namespace, valuesYAML)
	require.NoError(t, err)
	return files
}

// renderValues runs helm's engine, returning its error.
func renderValues(t *testing.T, namespace, valuesYAML string) (map[string]string, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	require.NoError(t, err)
	vals, err := chartutil.ReadValues([]byte(valuesYAML))
	require.NoError(t, err)
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	require.NoError(t, err)
	return engine.Render(ch, top)
}

// documentSeparator splits a multi-document YAML stream.
var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// splitDocuments returns the non-blank documents of a YAML stream.
func splitDocuments(s string) []string {
	var docs []string
	for _, d := range documentSeparator.Split(s, -1) {
		if len(bytes.TrimSpace([]byte(d))) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

// only returns the rendered objects of kind, failing unless there are n.
func only(t *testing.T, objs []rendered, kind string, n int) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, r := range objs {
		if r.obj.GetKind() == kind {
			out = append(out, r.obj)
		}
	}
	require.Len(t, out, n, "rendered %s objects", kind)
	return out
}

// typed converts a rendered object into its Go type.
func typed[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	var v T
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, &v, true),
		"%s %s", u.GetKind(), u.GetName())
	return &v
}

// everyOptionIn is everyOption for a release in namespace, with the class
// Leases, the dashboard, the grant records and the namespaced rules in
// namespaces of their own.
func everyOptionIn(namespace string) string {
	return strings.NewReplacer("LEASES", namespace+"-leases", "GRAFANA", namespace+"-grafana", "RECORDS", namespace+"-records",
		"RATES", namespace+"-rates").Replace(everyOption)
}

// TestChartLeavesOutItsTests checks that .helmignore keeps this module out
// of the chart (and so out of a packaged chart).
func TestChartLeavesOutItsTests(t *testing.T) {
	ch, err := loader.Load(chartDir)
	require.NoError(t, err)
	require.NotEmpty(t, ch.Files, "the dashboard at least")
	for _, f := range append(ch.Files, ch.Templates...) {
		require.False(t, strings.HasPrefix(f.Name, "test/"), "the chart holds %s", f.Name)
	}
}
