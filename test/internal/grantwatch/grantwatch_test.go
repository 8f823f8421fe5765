package grantwatch

import (
	"strconv"
	"strings"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/sliceclass/sliceclass/conditions"
)

// The watcher is the oracle of the budget suites, so it is tested itself:
// spot holds 8 of 10 through its pods; a pod of 4 is deleted at revision
// 12, then gold is Accepted with 6 at revision 13. The ShadowPod watch
// delivers the deletion after the slice watch delivers gold: checked in
// arrival order that read 14 of 10, a state the cluster never had;
// replayed in revision order it holds 10. Accepting gold at revision 11,
// before the deletion, is a real over-commit and is reported.
func TestReplayFollowsRevisionsNotArrival(t *testing.T) {
	spot := slice("spot", "uid-s", 2, "8", "Reclaimed")
	spotShrunk := slice("spot", "uid-s", 5, "4", "Reclaimed")
	quota := &offloadingv1beta1.Quota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q", ResourceVersion: "3",
			OwnerReferences: []metav1.OwnerReference{{Kind: "ResourceSlice", Name: "spot", UID: "uid-s", Controller: ptr.To(true)}}},
		Spec: offloadingv1beta1.QuotaSpec{User: "user-s", Resources: cpu("4")},
	}
	p1, p2 := pod("p1", 4, "4"), pod("p2", 6, "4")
	p1Gone := pod("p1", 12, "4")
	w := newWatcher("10", func(*authv1beta1.ResourceSlice) bool { return true })
	w.pods = true
	for _, e := range []watch.Event{
		{Type: watch.Added, Object: spot}, {Type: watch.Added, Object: quota},
		{Type: watch.Modified, Object: spotShrunk},
		{Type: watch.Added, Object: slice("gold", "uid-g", 13, "6", "Granted")}, // the slice watch is ahead
		{Type: watch.Added, Object: p1}, {Type: watch.Added, Object: p2},
		{Type: watch.Deleted, Object: p1Gone},
	} {
		w.record(e)
	}
	violations, peak, _ := w.replay(w.events)
	assert.Empty(t, violations, "replayed in revision order, the cluster never held more than 10")
	assert.Equal(t, "10", peak.String())

	w.record(watch.Event{Type: watch.Modified, Object: slice("gold", "uid-g", 11, "6", "Granted")})
	violations, _, first := w.replay(w.events)
	require.NotEmpty(t, violations, "gold Accepted while spot's pods still used 8: 14 of 10")
	assert.Equal(t, uint64(11), first)
	tl := timeline(w.events, first, 3)
	assert.Equal(t, 3, strings.Count(tl, "\n"), "the 3 events up to the first over-commit:\n%s", tl)
	assert.True(t, strings.HasPrefix(tl, "  5 MODIFIED slice spot"), "revision 5 is the first of the three:\n%s", tl)
	assert.Contains(t, tl, "11 MODIFIED slice gold uid uid-g Accepted/Granted offer 6")
	assert.NotContains(t, tl, "13 ", "nothing after the first over-commit")
	assert.Contains(t, violations[0], "at revision 11")
	assert.Contains(t, violations[0], "the slices hold 14")
	assert.Contains(t, violations[0], "ns/spot offer 4 Quota 4 in use 8")
}

func cpu(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
}

// slice is a ResourceSlice at revision rv, Accepted with cpu offer.
func slice(name, uid string, rv int, offer, reason string) *authv1beta1.ResourceSlice {
	rs := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid),
		ResourceVersion: strconv.Itoa(rv)}}
	rs.Status.Resources = cpu(offer)
	conditions.Accept(rs, reason, "")
	return rs
}

// pod is a running ShadowPod of user-s at revision rv requesting cpu.
func pod(name string, rv int, req string) *offloadingv1beta1.ShadowPod {
	return &offloadingv1beta1.ShadowPod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "offloaded", Name: name, ResourceVersion: strconv.Itoa(rv),
			Labels: map[string]string{"liqo.io/creator-user": "user-s"}},
		Spec: offloadingv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{Containers: []corev1.Container{{
			Resources: corev1.ResourceRequirements{Requests: cpu(req)}}}}},
	}
}
