package integration

import (
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	cp.Require(t)
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	mgr, err := manager.New(cp.Config, manager.Options{
		Scheme:                 scheme, // no Liqo types: AddToManager adds them
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	h := accept("Granted", nil)
	require.NoError(t, resourceslice.AddToManager(mgr, "setup-gold", h), "first class")
	assert.True(t, scheme.Recognizes(authv1beta1.GroupVersion.WithKind("ResourceSlice")), "Liqo's types must be added to a scheme that lacks them")
	assert.True(t, scheme.Recognizes(authv1beta1.GroupVersion.WithKind("Tenant")), "Liqo's types must be added to a scheme that lacks them")
	assert.NoError(t, resourceslice.AddToManager(mgr, "setup-silver", h), "a second class in the same manager")
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
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorContains(t, err, `"`+tc.class+`"`, "the error names the class")
		})
	}
}
