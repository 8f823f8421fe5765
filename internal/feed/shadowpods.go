package feed

import (
	"bytes"
	"encoding/json"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/sliceview"
)

// What the consumer's running pods use: Liqo's ShadowPods
// (offloading.liqo.io), as the consumer's virtual kubelet creates them on
// the provider, labelled liqo.io/creator-user with the identity that
// created them, which Liqo's webhook sets from the request and charges
// against the Quota of that user. A budget counts, for each slice, the
// running ShadowPods of its Quota's user, so that a smaller grant frees
// capacity only as those pods end.
//
// ShadowPods hold whole pod specs; the SDK watches them through a cache of
// its own, started only when the API server serves the CRD, whose scheme
// maps Liqo's ShadowPod to shadowPodCharge: the API machinery's JSON
// decoder fills only the fields that type names and skips the rest of the
// pod spec, and the cache's transform (keepCharge) reduces what it decoded
// to the charge before the object is stored.

// shadowPodKind is Liqo's ShadowPod.
var shadowPodKind = schema.GroupKind{Group: offloadingv1beta1.SchemeGroupVersion.Group, Kind: "ShadowPod"}

// labelCreatorUser is the label Liqo's webhook sets on a ShadowPod: the
// identity that created it, the Quota's spec.user.
const labelCreatorUser = "liqo.io/creator-user"

// newShadowPodCache builds a ShadowPod cache of mgr's API server; its
// budget's parts start it on the leader, and it watches nothing until the
// budget's feed asks.
func newShadowPodCache(mgr manager.Manager) (cache.Cache, error) {
	return sliceview.NewNarrowCache(mgr, "ShadowPod", shadowPodScheme(), keepCharge)
}

// shadowPodScheme maps Liqo's ShadowPod and its list to shadowPodCharge
// and shadowPodChargeList.
func shadowPodScheme() *runtime.Scheme {
	return sliceview.NarrowScheme(offloadingv1beta1.SchemeGroupVersion.WithKind(shadowPodKind.Kind), &shadowPodCharge{}, &shadowPodChargeList{})
}

// shadowPodCharge is a ShadowPod as far as Liqo's webhook charges it:
// the creator label, the containers' and init containers' requests, and
// the phase (a pod that ended is charged nothing), with its metadata (but
// for managed fields: see chargeMeta). It has a ShadowPod's JSON shape, so
// the API machinery decodes it as it decodes Liqo's type, and a field it
// does not name (most of a pod spec) is skipped rather than built.
//
// The cache keeps it as keepCharge leaves it: User and Charge set, the
// spec, labels, annotations and managed fields dropped. Read User and
// Charge from the cache's objects only.
type shadowPodCharge struct {
	metav1.TypeMeta `json:",inline"`
	chargeMeta      `json:"metadata,omitempty"`
	Spec            chargeSpec   `json:"spec"`
	Status          chargeStatus `json:"status"`

	// User is the creator label's value, set by keepCharge.
	User string `json:"-"`
	// Charge is what Liqo's webhook charges the pod, set by keepCharge;
	// never nil once set (empty for a pod that requests nothing).
	Charge corev1.ResourceList `json:"-"`
}

// chargeMeta is a ShadowPod's metadata: ObjectMeta, but for its managed
// fields, which the decoder keeps as the JSON they came as (ManagedFields
// here hides ObjectMeta's from it) rather than decoding every entry into
// a ManagedFieldsEntry nobody reads. They are half a ShadowPod's bytes;
// decoding them was a quarter of decoding the object, a sixth of a watch
// event's CPU (BenchmarkShadowPodWatchEvent).
type chargeMeta struct {
	metav1.ObjectMeta `json:",inline"`
	ManagedFields     json.RawMessage `json:"managedFields,omitempty"`
}

// chargeSpec is a ShadowPod's spec as far as it is charged.
type chargeSpec struct {
	Pod struct {
		Containers     []containerRequests `json:"containers,omitempty"`
		InitContainers []containerRequests `json:"initContainers,omitempty"`
	} `json:"pod"`
}

// containerRequests is a container as far as it is charged.
type containerRequests struct {
	Resources struct {
		Requests corev1.ResourceList `json:"requests,omitempty"`
	} `json:"resources"`
}

// chargeStatus is a ShadowPod's status as far as it is read.
type chargeStatus struct {
	Phase corev1.PodPhase `json:"phase,omitempty"`
}

// keepCharge is the ShadowPod cache's transform: it sets a decoded
// ShadowPod's User and Charge, as Liqo's webhook charges it, and drops
// what they were read from and what nobody reads (spec, labels,
// annotations, managed fields), in place, as sliceview.Trim does. A pod it has
// kept already (Charge set) is left as it is, so it may be called twice.
func keepCharge(obj any) (any, error) {
	p, ok := obj.(*shadowPodCharge)
	if !ok || p.Charge != nil {
		return obj, nil
	}
	requests := func(cs []containerRequests) []corev1.ResourceList {
		out := make([]corev1.ResourceList, len(cs))
		for i := range cs {
			out[i] = cs[i].Resources.Requests
		}
		return out
	}
	p.User = p.Labels[labelCreatorUser]
	p.Charge = ledger.RequestsCharge(requests(p.Spec.Pod.Containers), requests(p.Spec.Pod.InitContainers))
	p.TypeMeta = metav1.TypeMeta{}
	p.chargeMeta = chargeMeta{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID,
		ResourceVersion: p.ResourceVersion, CreationTimestamp: p.CreationTimestamp}}
	p.Spec = chargeSpec{}
	return p, nil
}

// DeepCopyObject implements runtime.Object.
func (p *shadowPodCharge) DeepCopyObject() runtime.Object {
	out := *p
	p.DeepCopyInto(&out.ObjectMeta) // ObjectMeta's, promoted
	out.ManagedFields = bytes.Clone(p.ManagedFields)
	copyRequests := func(cs []containerRequests) []containerRequests {
		if cs == nil {
			return nil
		}
		out := make([]containerRequests, len(cs))
		for i := range cs {
			out[i].Resources.Requests = cs[i].Resources.Requests.DeepCopy()
		}
		return out
	}
	out.Spec.Pod.Containers = copyRequests(p.Spec.Pod.Containers)
	out.Spec.Pod.InitContainers = copyRequests(p.Spec.Pod.InitContainers)
	out.Charge = p.Charge.DeepCopy()
	return &out
}

// shadowPodChargeList is a list of ShadowPods, decoded as shadowPodCharge.
type shadowPodChargeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []shadowPodCharge `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *shadowPodChargeList) DeepCopyObject() runtime.Object {
	out := *l
	l.DeepCopyInto(&out.ListMeta) // ListMeta's, promoted
	out.Items = make([]shadowPodCharge, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*shadowPodCharge)
	}
	return &out
}

// running reports whether a kept ShadowPod is charged to a Quota: it
// names a user and has not ended.
func running(sp *shadowPodCharge) bool {
	return sp.User != "" && sp.Status.Phase != corev1.PodSucceeded && sp.Status.Phase != corev1.PodFailed
}

// shadowPodHandler tells fan's ledgers what each ShadowPod event shows.
func shadowPodHandler(fan *podFanout) toolscache.ResourceEventHandlerFuncs {
	observe := func(o any) {
		sp, ok := o.(*shadowPodCharge)
		if !ok {
			return
		}
		key := client.ObjectKeyFromObject(sp)
		if !running(sp) {
			fan.each(func(l *ledger.Ledger) { l.ForgetPod(key) }) // charged to no Quota, or no longer running
			return
		}
		// The cache's object is never changed: the ledgers may keep its charge.
		meta := ledger.PodMeta{UID: sp.UID, Created: sp.CreationTimestamp.Time}
		fan.each(func(l *ledger.Ledger) { l.ObservePod(key, sp.User, sp.Charge, meta) })
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, o any) { observe(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if obj, ok := o.(client.Object); ok {
				key := client.ObjectKeyFromObject(obj)
				fan.each(func(l *ledger.Ledger) { l.ForgetPod(key) })
			}
		},
	}
}
