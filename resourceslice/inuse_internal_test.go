package resourceslice

import (
	"context"
	"testing"
	"time"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// The ShadowPod cache's decoding on a real API server: the initial list
// and a watch event each give what the charge needs.
func TestShadowPodCacheDecodesWhatTheServerSends(t *testing.T) {
	cp := controlplane.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const ns = "decode-offloaded"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	pod := func(name, cpu string) *offloadingv1beta1.ShadowPod {
		return &offloadingv1beta1.ShadowPod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{labelCreatorUser: "user-s"}},
			Spec: offloadingv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
			}}}},
		}
	}
	require.NoError(t, cp.Client.Create(ctx, pod("listed", "2")))
	c, err := cache.New(cp.Config, cache.Options{Scheme: shadowPodScheme()})
	require.NoError(t, err)
	go func() { _ = c.Start(ctx) }()
	_, err = c.GetInformer(ctx, &shadowPodCharge{})
	require.NoError(t, err)
	require.True(t, c.WaitForCacheSync(ctx), "the ShadowPod cache syncs")
	require.NoError(t, cp.Client.Create(ctx, pod("watched", "3")))
	charges := func() map[string]string {
		var list shadowPodChargeList
		require.NoError(t, c.List(ctx, &list, client.InNamespace(ns)))
		out := map[string]string{}
		for _, p := range list.Items {
			out[p.Name] = p.User + " " + p.Charge.Cpu().String()
		}
		return out
	}
	require.Eventually(t, func() bool { return len(charges()) == 2 }, 10*time.Second, 20*time.Millisecond, "the watch brings the second pod")
	assert.Equal(t, map[string]string{"listed": "user-s 2", "watched": "user-s 3"}, charges())
}
