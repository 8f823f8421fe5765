package resourceslice_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sliceclass/sliceclass/resourceslice"
)

func TestNewReconcilerRejectsBadSetup(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	h := acceptAll("Granted")
	cases := map[string]struct {
		class string
		opts  []resourceslice.Option
		want  string
	}{
		"Empty":         {class: "", want: "reserved"},
		"Default":       {class: "default", want: "reserved"},
		"NotLabel":      {class: "not a label value!", want: "not a valid label value"},
		"ZeroWorkers":   {class: gold, opts: []resourceslice.Option{resourceslice.WithMaxConcurrentReconciles(0)}, want: "at least 1"},
		"Backoff":       {class: gold, opts: []resourceslice.Option{resourceslice.WithRetryBackoff(time.Minute, time.Second)}, want: "backoff"},
		"Resync":        {class: gold, opts: []resourceslice.Option{resourceslice.WithResyncPeriod(-time.Second)}, want: "resync"},
		"NilSelector":   {class: gold, opts: []resourceslice.Option{resourceslice.WithSelector(nil)}, want: "selector"},
		"NilRecorder":   {class: gold, opts: []resourceslice.Option{resourceslice.WithEventRecorder(nil)}, want: "recorder"},
		"NilRegisterer": {class: gold, opts: []resourceslice.Option{resourceslice.WithMetricsRegisterer(nil)}, want: "registerer"},
		"NilOption":     {class: gold, opts: []resourceslice.Option{nil}, want: "nil Option"},
		// Controller options configure a controller NewReconciler does not
		// build: refused, by name, rather than ignored.
		"Workers":     {class: gold, opts: []resourceslice.Option{resourceslice.WithMaxConcurrentReconciles(4)}, want: "WithMaxConcurrentReconciles"},
		"GoodBackoff": {class: gold, opts: []resourceslice.Option{resourceslice.WithRetryBackoff(time.Second, time.Minute)}, want: "WithRetryBackoff"},
		"Logger":      {class: gold, opts: []resourceslice.Option{resourceslice.WithLogger(logr.Discard())}, want: "WithLogger"},
		"Watch":       {class: gold, opts: []resourceslice.Option{resourceslice.WithWatch(&corev1.ConfigMap{})}, want: "WithWatch"},
		"Lease":       {class: gold, opts: []resourceslice.Option{resourceslice.WithClassLease("sliceclass-system")}, want: "WithClassLease"},
		"TwoOfThem":   {class: gold, opts: []resourceslice.Option{resourceslice.WithLogger(logr.Discard()), resourceslice.WithClassLease("ns")}, want: "WithLogger, WithClassLease"},
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
