package resourceslice

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names. controller-runtime already exports reconcile counts, errors
// and durations per controller ("resourceslice-<class>"); these add what it
// lacks.
const (
	MetricDecisions       = "sliceclass_decisions_total"
	MetricHandlerDuration = "sliceclass_handler_duration_seconds"
	MetricHandlerErrors   = "sliceclass_handler_errors_total"
)

// Outcome and error-kind label values.
const (
	outcomeAccepted = "accepted"
	outcomeDenied   = "denied"

	errKindError    = "error"
	errKindPanic    = "panic"
	errKindContract = "contract"
)

type metrics struct {
	decisions *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	errors    *prometheus.CounterVec
}

// newMetrics registers the collectors on reg, or reuses the ones already
// there, so that every class of a process shares one set.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricDecisions,
		Help: "Decision transitions written to ResourceSlices, by class and outcome (accepted, denied).",
	}, []string{"class", "outcome"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricHandlerDuration,
		Help:    "Time spent in the class handler per call, by class.",
		Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5},
	}, []string{"class"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricHandlerErrors,
		Help: "Handler calls that failed, by class and kind (error, panic, contract).",
	}, []string{"class", "kind"})

	var err error
	m := &metrics{}
	m.decisions, err = register(reg, decisions)
	if err != nil {
		return nil, err
	}
	m.duration, err = register(reg, duration)
	if err != nil {
		return nil, err
	}
	m.errors, err = register(reg, errs)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing, nil
			}
		}
		var zero T
		return zero, fmt.Errorf("registering sliceclass metrics: %w", err)
	}
	return c, nil
}
