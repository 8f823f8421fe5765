package resourceslice_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/internal/sdkscheme"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// logLines records what a logger writes.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) write(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, prefix+" "+args)
}

// with returns the lines containing every one of parts.
func (l *logLines) with(parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			out = append(out, line)
		}
	}
	return out
}

// A consumer's own limit is findable: it is the gauge
// sliceclass_budget_consumer_limit{budget,consumer,resource} while it lasts,
// and every change is a line on the manager's logger, which says when the
// budget knows no slice of the consumer (a mistyped ID). An override set
// before the budget was wired is logged once it is.
func TestConsumerLimitIsVisible(t *testing.T) {
	logs := &logLines{}
	scheme := runtime.NewScheme()
	require.NoError(t, sdkscheme.Add(scheme))
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, manager.Options{
		Scheme:                 scheme,
		Logger:                 funcr.New(logs.write, funcr.Options{}),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	limits := func() map[string]float64 {
		t.Helper()
		mfs, err := reg.Gather()
		require.NoError(t, err)
		out := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() != "sliceclass_budget_consumer_limit" {
				continue
			}
			for _, m := range mf.GetMetric() {
				var labels []string
				for _, lp := range m.GetLabel() {
					labels = append(labels, lp.GetName()+"="+lp.GetValue())
				}
				out[strings.Join(labels, ",")] = m.GetGauge().GetValue()
			}
		}
		return out
	}
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}

	b := cpuBudget(t, "8")
	require.NoError(t, b.SetConsumerLimit("early", cpu("1")))
	require.NoError(t, resourceslice.AddToManager(mgr, "gold", &budgetPolicy{},
		resourceslice.WithBudget(b), resourceslice.WithMetricsRegisterer(reg)))
	assert.Len(t, logs.with(`"budget"="pool"`, `"consumer"="early"`, "before the budget was fed", `"limit"="cpu 1"`), 1,
		"the override set before wiring is logged once the budget has a logger: %q", logs.lines)

	require.NoError(t, b.SetConsumerLimit("globx", cpu("2")))
	assert.Len(t, logs.with(`"budget"="pool"`, `"consumer"="globx"`, "knows no slice of", "check the consumer ID", `"limit"="cpu 2"`), 1,
		"an override for a consumer the budget has seen no slice of says so: %q", logs.lines)
	assert.Equal(t, map[string]float64{
		"budget=pool,consumer=early,resource=cpu": 1,
		"budget=pool,consumer=globx,resource=cpu": 2,
	}, limits())

	require.NoError(t, b.SetConsumerLimit("globx", nil))
	assert.Len(t, logs.with(`"consumer"="globx"`, "override removed"), 1, "%q", logs.lines)
	assert.Equal(t, map[string]float64{"budget=pool,consumer=early,resource=cpu": 1}, limits(),
		"the series goes with its override")

	err = b.SetConsumerLimit("globex", cpu("-1"))
	require.Error(t, err)
	assert.Equal(t, `budget "pool": negative quantity in consumer limit of "globex": cpu=-1`, err.Error())
	assert.Equal(t, map[string]float64{"budget=pool,consumer=early,resource=cpu": 1}, limits(), "a refused limit changes nothing")
}
