package resourceslice_test

import (
	"strings"
	"testing"
	"time"

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
