package resourceslice_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sliceclass/sliceclass/resourceslice"
)

func TestNewReconcilerRejectsBadSetup(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	h := acceptAll("Granted")
	cases := map[string]struct {
		class string
		opts  []resourceslice.DecisionOption
		want  string
	}{
		"Empty":         {class: "", want: "reserved"},
		"Default":       {class: "default", want: "reserved"},
		"NotLabel":      {class: "not a label value!", want: "not a valid label value"},
		"Resync":        {class: gold, opts: []resourceslice.DecisionOption{resourceslice.WithResyncPeriod(-time.Second)}, want: "resync"},
		"NilSelector":   {class: gold, opts: []resourceslice.DecisionOption{resourceslice.WithSelector(nil)}, want: "selector"},
		"NilRecorder":   {class: gold, opts: []resourceslice.DecisionOption{resourceslice.WithEventRecorder(nil)}, want: "recorder"},
		"NilRegisterer": {class: gold, opts: []resourceslice.DecisionOption{resourceslice.WithMetricsRegisterer(nil)}, want: "registerer"},
		"NilOption":     {class: gold, opts: []resourceslice.DecisionOption{nil}, want: "nil Option"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := resourceslice.NewReconciler(c, tc.class, h, tc.opts...)
			if err == nil {
				t.Fatal("want an error, got none")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"`+tc.class+`"`) {
				t.Errorf("error %q must say %q and name the class %q", err, tc.want, tc.class)
			}
		})
	}
	if _, err := resourceslice.NewReconciler(c, gold, nil); err == nil || !strings.Contains(err.Error(), "nil handler") {
		t.Errorf("nil handler: got %v", err)
	}
	if _, err := resourceslice.NewReconciler(c, gold, h); err != nil {
		t.Errorf("a good setup must pass: %v", err)
	}
}

// The two kinds of option are told apart by the compiler: a controller
// option is an Option and not a DecisionOption, so the test kit's harness
// (which takes DecisionOptions) does not compile with one, while AddToManager and
// ClassSet.Serve (which take Options) take both kinds.
func TestControllerOptionsAreNotDecisionOptions(t *testing.T) {
	controller := map[string]resourceslice.Option{
		"WithMaxConcurrentReconciles": resourceslice.WithMaxConcurrentReconciles(2),
		"WithRetryBackoff":            resourceslice.WithRetryBackoff(time.Second, time.Minute),
		"WithLogger":                  resourceslice.WithLogger(logr.Discard()),
		"WithWatch":                   resourceslice.WithWatch(&corev1.ConfigMap{}),
		"WithClassLease":              resourceslice.WithClassLease("sliceclass-system"),
	}
	for name, o := range controller {
		if _, ok := o.(resourceslice.DecisionOption); ok {
			t.Errorf("%s is a DecisionOption: the harness would take it", name)
		}
	}
	decision := []resourceslice.Option{
		resourceslice.WithSelector(labels.Everything()), resourceslice.WithoutAuthenticationGate(),
		resourceslice.WithoutTenantRule(), resourceslice.WithPriority(1), resourceslice.WithMaxRetries(1),
		resourceslice.WithHandlerTimeout(time.Second), resourceslice.WithDryRun(),
		resourceslice.WithDecisionEvents(resourceslice.DecisionEventsNone), resourceslice.WithResyncPeriod(time.Minute),
		resourceslice.WithMetricsRegisterer(prometheus.NewRegistry()), resourceslice.WithOwnedTypes(&corev1.ConfigMap{}),
	}
	for i, o := range decision {
		if _, ok := o.(resourceslice.DecisionOption); !ok {
			t.Errorf("decision option %d (%T) is not a DecisionOption", i, o)
		}
	}
}
