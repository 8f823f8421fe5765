package resourceslice

import (
	"context"
	"fmt"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// One ShadowPod watch per set (issue 43): ten classes of one set, each
// drawing from its own budget, read the consumers' running pods through one
// ShadowPod cache, not ten; budgets multiply, the watch does not.
func TestOneShadowPodWatchPerSet(t *testing.T) {
	cp := controlplane.Start(t)
	const budgets = 10
	grant := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	var cs *ClassSet
	envkit.StartManager(t, cp, func(mgr manager.Manager) error {
		var err error
		if cs, err = NewClassSet(mgr, WithMetricsRegisterer(prometheus.NewRegistry())); err != nil {
			return err
		}
		for i := range budgets {
			b, err := budget.New(fmt.Sprintf("watch-%d", i), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})
			if err != nil {
				return err
			}
			if err := cs.Serve(fmt.Sprintf("watch-%d", i), grant, WithBudget(b)); err != nil {
				return err
			}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	cs.mu.Lock()
	var feeds int
	for _, sc := range cs.classes {
		for _, f := range sc.cc.r.feeds {
			require.NoError(t, f.WaitForSync(ctx), "each budget's feed counts the ShadowPods")
			feeds++
		}
	}
	cs.mu.Unlock()
	require.Equal(t, budgets, feeds)
	assert.Equal(t, 1, cs.mc.pods.Builds(), "one ShadowPod cache for the set's %d budgets", budgets)
}
