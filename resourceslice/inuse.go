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
// its own that keeps only what the charge needs (the creator label, the
// phase, the containers' requests), started only when the API server
// serves the CRD.

// shadowPodKind is Liqo's ShadowPod.
var shadowPodKind = schema.GroupKind{Group: offloadingv1beta1.SchemeGroupVersion.Group, Kind: "ShadowPod"}

// labelCreatorUser is the label Liqo's webhook sets on a ShadowPod: the
// identity that created it, the Quota's spec.user.
const labelCreatorUser = "liqo.io/creator-user"

// newShadowPodCache builds mgr's trimmed ShadowPod cache and adds it to
// the manager (it starts with the manager; it watches nothing until a
// budget feed asks).
func newShadowPodCache(mgr manager.Manager) (cache.Cache, error) {
	scheme := runtime.NewScheme()
	gv := offloadingv1beta1.SchemeGroupVersion
	scheme.AddKnownTypes(gv, &offloadingv1beta1.ShadowPod{}, &offloadingv1beta1.ShadowPodList{})
	metav1.AddToGroupVersion(scheme, gv)
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:           scheme,
		Mapper:           mgr.GetRESTMapper(),
		HTTPClient:       mgr.GetHTTPClient(),
		DefaultTransform: trimShadowPod,
	})
	if err != nil {
		return nil, fmt.Errorf("building the ShadowPod cache: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the ShadowPod cache to the manager: %w", err)
	}
	return c, nil
}

// shadowPodCharge is all the ShadowPod cache keeps of a ShadowPod: its
// name, namespace, UID, version and creation time, the creator user, the
// phase, and the charge, computed once as Liqo's webhook computes it. A
// ShadowPod holds a whole pod spec; a cache of thousands of them, even
// trimmed to the containers' requests, would hold a PodSpec and a
// Container per pod.
type shadowPodCharge struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	User   string
	Phase  corev1.PodPhase
	Charge corev1.ResourceList
}

// DeepCopyObject implements runtime.Object.
func (p *shadowPodCharge) DeepCopyObject() runtime.Object {
	out := *p
	p.DeepCopyInto(&out.ObjectMeta) // ObjectMeta's, promoted
	out.Charge = p.Charge.DeepCopy()
	return &out
}

// trimShadowPod replaces a ShadowPod by its shadowPodCharge.
func trimShadowPod(obj any) (any, error) {
	sp, ok := obj.(*offloadingv1beta1.ShadowPod)
	if !ok {
		return obj, nil
	}
	return &shadowPodCharge{
		ObjectMeta: metav1.ObjectMeta{Name: sp.Name, Namespace: sp.Namespace, UID: sp.UID,
			ResourceVersion: sp.ResourceVersion, CreationTimestamp: sp.CreationTimestamp},
		User:   sp.Labels[labelCreatorUser],
		Phase:  sp.Status.Phase,
		Charge: ledger.PodCharge(&sp.Spec.Pod),
	}, nil
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
