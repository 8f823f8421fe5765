package integration

import (
	"strings"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/resourceslice"
)

// AddToManager's setup errors, on a real manager.
func TestAddToManagerSetup(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(cp.Config, manager.Options{
		Scheme:                 scheme, // no Liqo types: AddToManager adds them
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := accept("Granted", nil)
	if err := resourceslice.AddToManager(mgr, "setup-gold", h); err != nil {
		t.Fatalf("first class: %v", err)
	}
	if !scheme.Recognizes(authv1beta1.GroupVersion.WithKind("ResourceSlice")) || !scheme.Recognizes(authv1beta1.GroupVersion.WithKind("Tenant")) {
		t.Error("Liqo's types must be added to a scheme that lacks them")
	}
	if err := resourceslice.AddToManager(mgr, "setup-silver", h); err != nil {
		t.Errorf("a second class in the same manager: %v", err)
	}
	cases := map[string]struct {
		class string
		h     any
		want  string
	}{
		"duplicate": {class: "setup-gold", want: "already registered"},
		"empty":     {class: "", want: "reserved"},
		"default":   {class: "default", want: "reserved"},
		"invalid":   {class: "Gold Class", want: "not a valid label value"},
		"nil":       {class: "setup-nil", h: "nil", want: "nil handler"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var err error
			if tc.h == "nil" {
				err = resourceslice.AddToManager(mgr, tc.class, nil)
			} else {
				err = resourceslice.AddToManager(mgr, tc.class, h)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"`+tc.class+`"`) {
				t.Errorf("want an error saying %q and naming class %q, got %v", tc.want, tc.class, err)
			}
		})
	}
}
