package resourceslice_test

import (
	"context"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// grantOwner accepts every slice and owns one ConfigMap per slice.
type grantOwner struct{}

var _ handler.Owner = grantOwner{}

func (grantOwner) Handle(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	conditions.Accept(rs, "Granted", "")
	return ctrl.Result{}, nil
}

func (grantOwner) Owned(_ context.Context, rs *authv1beta1.ResourceSlice) ([]client.Object, error) {
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = rs.Namespace, "grant-"+rs.Name
	return []client.Object{cm}, nil
}

// A handler.Owner registered without WithOwnedTypes would have every object
// refused at run time, on every slice (issue 28, item 5): each way of
// registering a class refuses it at once, with an error that names the
// option and the class, and claims nothing. WithOwnedTypes for a handler
// that owns nothing is refused too.
func TestOwnerNeedsWithOwnedTypes(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, authv1beta1.AddToScheme(s))
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, manager.Options{
		Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	cs, err := resourceslice.NewClassSet(mgr)
	require.NoError(t, err)
	c := fake.NewClientBuilder().WithScheme(s).Build()
	owns := resourceslice.WithOwnedTypes(&corev1.ConfigMap{})

	cases := []struct {
		name, class string
		register    func(class string, h handler.Handler, opts ...resourceslice.DecisionOption) error
	}{
		{"NewReconciler", "owner-nr", func(class string, h handler.Handler, opts ...resourceslice.DecisionOption) error {
			_, err := resourceslice.NewReconciler(c, class, h, opts...)
			return err
		}},
		{"AddToManager", "owner-atm", func(class string, h handler.Handler, opts ...resourceslice.DecisionOption) error {
			return resourceslice.AddToManager(mgr, class, h, asOptions(opts)...)
		}},
		{"ClassSet.Serve", "owner-cs", func(class string, h handler.Handler, opts ...resourceslice.DecisionOption) error {
			return cs.Serve(class, h, asOptions(opts)...)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			class, reg := tc.class, tc.register
			err := reg(class, grantOwner{})
			require.Error(t, err, "an Owner without WithOwnedTypes")
			assert.ErrorContains(t, err, "WithOwnedTypes", "the error names the option to add")
			assert.ErrorContains(t, err, `"`+class+`"`, "the error names the class")

			err = reg(class, grant, owns)
			require.Error(t, err, "WithOwnedTypes for a handler that is not an Owner")
			assert.ErrorContains(t, err, "not a handler.Owner")

			assert.NoError(t, reg(class, grantOwner{}, owns), "with the option, the same class registers: the refusals claimed nothing")
		})
	}
}

// asOptions lists decision options as Options, for the constructors that
// take both kinds.
func asOptions(opts []resourceslice.DecisionOption) []resourceslice.Option {
	out := make([]resourceslice.Option, len(opts))
	for i, o := range opts {
		out[i] = o
	}
	return out
}
