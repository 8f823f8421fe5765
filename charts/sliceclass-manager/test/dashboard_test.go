package charttest

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/examples/cappedresources"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// dashboardFile is the Grafana dashboard the chart ships.
const dashboardFile = "../dashboards/sliceclass.json"

// recorder is a prometheus registry that remembers the name of every metric
// registered on it, and which are histograms (exported as _bucket, _sum and
// _count series).
type recorder struct {
	*prometheus.Registry
	mu         sync.Mutex
	names      map[string]bool
	histograms map[string]bool
}

func newRecorder() *recorder {
	return &recorder{Registry: prometheus.NewRegistry(), names: map[string]bool{}, histograms: map[string]bool{}}
}

// descName reads a Desc's fully-qualified name from its String, the only
// place client_golang shows it.
var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Register implements prometheus.Registerer.
func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	_, histogram := c.(*prometheus.HistogramVec)
	if _, ok := c.(prometheus.Histogram); ok {
		histogram = true
	}
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	for d := range ch {
		m := descName.FindStringSubmatch(d.String())
		if m == nil {
			panic("cannot read the name of " + d.String())
		}
		r.names[m[1]] = true
		if histogram {
			r.histograms[m[1]] = true
		}
	}
	return nil
}

// MustRegister implements prometheus.Registerer.
func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Gather implements prometheus.Gatherer.
func (r *recorder) Gather() ([]*dto.MetricFamily, error) { return r.Registry.Gather() }

// exports returns whether series is a series the recorded metrics export.
func (r *recorder) exports(series string) bool {
	if r.names[series] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(series, suffix); ok && r.histograms[base] {
			return true
		}
	}
	return false
}

// sdkMetrics builds what a manager serving a budgeted class, with the
// unserved-slices reporter, registers, and returns the metrics it exports:
// asked of the SDK itself, so that a renamed metric fails the dashboard's
// test instead of leaving a panel silently empty.
func sdkMetrics(t *testing.T) *recorder {
	t.Helper()
	rec := newRecorder()
	// AddUnservedReporter registers on controller-runtime's registry.
	saved := ctrlmetrics.Registry
	ctrlmetrics.Registry = rec
	t.Cleanup(func() { ctrlmetrics.Registry = saved })

	mgr, err := manager.New(cp.Config, manager.Options{
		Scheme: cp.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	caps := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	policy, err := cappedresources.New(caps)
	require.NoError(t, err)
	b, err := budget.New("shared", caps)
	require.NoError(t, err)
	require.NoError(t, resourceslice.AddToManager(mgr, "gold", policy,
		resourceslice.WithMetricsRegisterer(rec), resourceslice.WithBudget(b), resourceslice.WithClassLease("liqo")))
	require.NoError(t, resourceslice.AddUnservedReporter(mgr, "liqo", time.Minute))
	require.NotEmpty(t, rec.names, "the SDK registered no metric")
	return rec
}

// promIdentifier is a metric, label or function name in PromQL.
var promIdentifier = regexp.MustCompile(`\$?[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)

// promStripped are the parts of a PromQL expression that name no metric:
// strings, label matchers, ranges, and grouping clauses' label lists.
var promStripped = []*regexp.Regexp{
	regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`),
	regexp.MustCompile(`\{[^}]*\}`),
	regexp.MustCompile(`\[[^\]]*\]`),
	regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`),
}

// promKeywords are PromQL's operators and constants spelt as words.
var promKeywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
	"group_left", "group_right", "inf", "nan", "Inf", "NaN"}

// labelValues is Grafana's label_values(metric, label) query.
var labelValues = regexp.MustCompile(`^\s*label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// metricNames lists the metrics a PromQL expression (or a Grafana
// label_values query) reads.
func metricNames(expr string) []string {
	if m := labelValues.FindStringSubmatch(expr); m != nil {
		return []string{m[1]}
	}
	for _, re := range promStripped {
		expr = re.ReplaceAllString(expr, " ")
	}
	var out []string
	for _, tok := range promIdentifier.FindAllString(expr, -1) {
		tok = strings.TrimSpace(tok)
		switch {
		case strings.HasPrefix(tok, "$"), strings.HasSuffix(tok, "("), slices.Contains(promKeywords, tok):
			// a dashboard variable, a function or aggregation, a keyword
		default:
			out = append(out, tok)
		}
	}
	return out
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		reason, expr string
		want         []string
	}{
		{"matchers, ranges and grouping labels are not metrics",
			`sum by (class, outcome) (rate(sliceclass_decisions_total{class=~"$class"}[$__rate_interval]))`,
			[]string{"sliceclass_decisions_total"}},
		{"both sides of a binary operator",
			`sum(a_used) / on (budget) group_left (x) sum without (resource) (b_total) > bool 0`,
			[]string{"a_used", "b_total"}},
		{"a misspelt metric is a metric", `histogram_quantile(0.99, rate(sliceclass_handler_duraton_seconds_bucket[5m]))`,
			[]string{"sliceclass_handler_duraton_seconds_bucket"}},
		{"Grafana's label_values", `label_values(sliceclass_decisions_total, class)`, []string{"sliceclass_decisions_total"}},
	} {
		assert.Equal(t, tc.want, metricNames(tc.expr), tc.reason)
	}
}

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// TestDashboardReadsExportedMetrics checks every PromQL expression of the
// dashboard (panel targets and template queries): each must read at least
// one metric, and every metric it reads must be one the SDK exports.
func TestDashboardReadsExportedMetrics(t *testing.T) {
	cp.Require(t)
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	require.NotEmpty(t, d.Panels)
	sdk := sdkMetrics(t)

	type query struct{ where, expr string }
	var queries []query
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, q := range p.Targets {
			queries = append(queries, query{"panel " + p.Title, q.Expr})
		}
	}
	for _, v := range d.Templating.List {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) == nil && q.Query != "" {
			queries = append(queries, query{"variable " + v.Name, q.Query})
		}
	}
	read := map[string]bool{}
	for _, q := range queries {
		names := metricNames(q.expr)
		assert.NotEmpty(t, names, "%s: %q reads no metric", q.where, q.expr)
		for _, n := range names {
			read[n] = true
			assert.True(t, sdk.exports(n), "%s: %s is not a metric the SDK exports (it exports %v)", q.where, n, slices.Sorted(maps.Keys(sdk.names)))
		}
	}
	t.Logf("the dashboard reads %v", slices.Sorted(maps.Keys(read)))
	// The per-consumer panel: what each consumer holds now and its
	// CPU-hours over the range (issue 52).
	for _, m := range []string{"sliceclass_consumer_granted", "sliceclass_consumer_granted_seconds_total"} {
		assert.True(t, read[m], "the dashboard shows %s", m)
	}
}

// TestDashboardConfigMap checks the dashboard option: the JSON, verbatim,
// in a ConfigMap labelled for Grafana's sidecar; off by default.
func TestDashboardConfigMap(t *testing.T) {
	for _, r := range objsOf(render(t, "liqo", ""), "ConfigMap") {
		assert.NotContains(t, r.obj.GetLabels(), "grafana_dashboard", "no dashboard by default")
	}
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var found bool
	for _, r := range objsOf(render(t, "sc-all", everyOptionIn("sc-all")), "ConfigMap") {
		if r.obj.GetLabels()["grafana_dashboard"] != "1" {
			continue
		}
		found = true
		cm := typed[corev1.ConfigMap](t, r.obj)
		assert.Equal(t, "sc-all-grafana", cm.Namespace)
		assert.JSONEq(t, string(raw), cm.Data["sliceclass.json"])
	}
	assert.True(t, found, "no ConfigMap labelled grafana_dashboard=1")
}
