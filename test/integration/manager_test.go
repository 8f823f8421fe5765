package integration

import (
	"strconv"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/internal/sdkscheme"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// AddToManager's setup errors, on a real manager.
func TestAddToManagerSetup(t *testing.T) {
	cp.Require(t)
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	mgr, err := manager.New(cp.Config, manager.Options{
		Scheme:                 scheme, // no Liqo types: refused, naming the call (issue 43)
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	// controller-runtime's controller-name check (on here, its default) is
	// process-wide: the classes are named for this run.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	gold, silver := "setup-gold-"+run, "setup-silver-"+run
	h := accept("Granted", nil)
	err = resourceslice.AddToManager(mgr, gold, h)
	assert.ErrorContains(t, err, "call authv1beta1.AddToScheme(scheme)", "a scheme without Liqo's types")
	assert.False(t, scheme.Recognizes(authv1beta1.GroupVersion.WithKind("ResourceSlice")), "the scheme is the user's")
	require.NoError(t, sdkscheme.Add(scheme)) // before the manager starts: nothing reads it yet
	require.NoError(t, resourceslice.AddToManager(mgr, gold, h), "first class")
	assert.NoError(t, resourceslice.AddToManager(mgr, silver, h), "a second class in the same manager")
	cases := map[string]struct {
		class string
		h     any
		want  string
	}{
		"duplicate": {class: gold, want: "already exists"}, // controller-runtime's name check
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
