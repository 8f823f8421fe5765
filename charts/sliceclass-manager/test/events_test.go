package charttest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// TestRepeatedEventLands runs a class whose handler fails three times
// before it grants, as the chart's ServiceAccount with only the RBAC the
// defaults render. Each failure records the same HandlerFailed event on the
// same, unchanged slice: client-go's recorder creates the first and patches
// the repeats into a series, which must land on the API server (a role
// that grants only create refuses every repeat).
func TestRepeatedEventLands(t *testing.T) {
	cp.Require(t)
	const ns, class = "sc-events", "sc-events"
	objs := render(t, ns, "")
	install(t, objs)
	sa := only(t, objs, "ServiceAccount", 1)[0]
	cfg, err := cp.AddUser("system:serviceaccount:"+ns+":"+sa.GetName(), "system:serviceaccounts", "system:serviceaccounts:"+ns, "system:authenticated")
	require.NoError(t, err)

	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, authv1beta1.AddToScheme(scheme))
	h := &failsThenGrants{failures: 3}
	envkit.StartManagerWith(t, cfg, envkit.ManagerOptions(t, scheme), func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, h, resourceslice.WithRetryBackoff(10*time.Millisecond, 100*time.Millisecond))
	})

	// Each wait below gives up after envkit.WaitTimeout on its own.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs := consumerSlice(ctx, t, ns, "repeat", class)
	eventually(ctx, t, "the HandlerFailed event on the slice as a series of at least 2", func() bool {
		var list eventsv1.EventList
		if err := cp.Client.List(ctx, &list, client.InNamespace(rs.Namespace)); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Regarding.Name == rs.Name && e.Reason == "HandlerFailed" && e.Series != nil && e.Series.Count >= 2 {
				return true
			}
		}
		return false
	})
}

// failsThenGrants fails its first failures calls, then grants what is
// asked.
type failsThenGrants struct {
	mu       sync.Mutex
	failures int
}

var _ handler.Handler = (*failsThenGrants)(nil)

func (f *failsThenGrants) Handle(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failures > 0 {
		f.failures--
		return ctrl.Result{}, errors.New("the billing backend is unreachable")
	}
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Granted", "")
	return ctrl.Result{}, nil
}
