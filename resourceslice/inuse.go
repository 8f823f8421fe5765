package resourceslice

import (
	"fmt"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/ledger"
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
// its own that decodes and keeps only what the charge needs (the creator
// label, the phase, the containers' requests), started only when the API
// server serves the CRD.

// shadowPodKind is Liqo's ShadowPod.
var shadowPodKind = schema.GroupKind{Group: offloadingv1beta1.SchemeGroupVersion.Group, Kind: "ShadowPod"}

// labelCreatorUser is the label Liqo's webhook sets on a ShadowPod: the
// identity that created it, the Quota's spec.user.
const labelCreatorUser = "liqo.io/creator-user"

// newShadowPodCache builds mgr's ShadowPod cache and adds it to the
// manager (it starts with the manager; it watches nothing until a budget
// feed asks). Its scheme maps Liqo's ShadowPod to shadowPodCharge, and its
// informer lists and watches through chargeCodec, so that of each
// ShadowPod only what the charge needs is decoded, once.
func newShadowPodCache(mgr manager.Manager) (cache.Cache, error) {
	newInformer, err := shadowPodInformer(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, err
	}
	return newNarrowCache(mgr, "ShadowPod", shadowPodScheme(), nil, newInformer)
}

// shadowPodResource is the resource of Liqo's ShadowPod CRD
// (shadowpods.offloading.liqo.io).
const shadowPodResource = "shadowpods"

// shadowPodScheme maps Liqo's ShadowPod and its list to shadowPodCharge
// and shadowPodChargeList.
func shadowPodScheme() *runtime.Scheme {
	return narrowScheme(offloadingv1beta1.SchemeGroupVersion.WithKind(shadowPodKind.Kind), &shadowPodCharge{}, &shadowPodChargeList{})
}

// shadowPodCharge is what the SDK decodes and keeps of a ShadowPod: its
// name, namespace, UID, version and creation time, the creator user, the
// phase, and the charge, computed as Liqo's webhook computes it. A
// ShadowPod holds a whole pod spec: decoding it into Liqo's type (a
// PodSpec, a Container per container, managed fields) to keep these few
// fields cost most of the informer's CPU; readPodJSON reads the JSON once
// and keeps only these.
type shadowPodCharge struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	User   string
	Phase  corev1.PodPhase
	Charge corev1.ResourceList
}

// UnmarshalJSON decodes a ShadowPod's JSON into what the charge needs.
func (p *shadowPodCharge) UnmarshalJSON(data []byte) error {
	_, err := p.decode(data)
	return err
}

// decode decodes a ShadowPod's JSON into p, and returns the kind the JSON
// names (an error answer's is Status). p keeps no kind, as the manager's
// caches keep typed objects.
func (p *shadowPodCharge) decode(data []byte) (kind string, err error) {
	w, err := readPodJSON(data)
	if err != nil {
		return "", err
	}
	*p = w.charge()
	return w.kind, nil
}

// DeepCopyObject implements runtime.Object.
func (p *shadowPodCharge) DeepCopyObject() runtime.Object {
	out := *p
	p.DeepCopyInto(&out.ObjectMeta) // ObjectMeta's, promoted
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

// shadowPodsServed asks discovery whether the API server serves Liqo's
// ShadowPod.
func shadowPodsServed(mapper meta.RESTMapper) (bool, error) {
	_, err := mapper.RESTMapping(shadowPodKind, offloadingv1beta1.SchemeGroupVersion.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	default:
		return false, fmt.Errorf("discovering Liqo's ShadowPod CRD: %w", err)
	}
}

// shadowPodHandler tells l what each ShadowPod event shows.
func shadowPodHandler(l *ledger.Ledger) toolscache.ResourceEventHandlerFuncs {
	observe := func(o any) {
		sp, ok := o.(*shadowPodCharge)
		if !ok {
			return
		}
		key := client.ObjectKeyFromObject(sp)
		if sp.User == "" || sp.Phase == corev1.PodSucceeded || sp.Phase == corev1.PodFailed {
			l.ForgetPod(key) // charged to no Quota, or no longer running
			return
		}
		// The cache's object is never changed: the ledger may keep its charge.
		l.ObservePod(key, sp.User, sp.Charge, ledger.PodMeta{UID: sp.UID, Created: sp.CreationTimestamp.Time})
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, o any) { observe(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if obj, ok := o.(client.Object); ok {
				l.ForgetPod(client.ObjectKeyFromObject(obj))
			}
		},
	}
}
