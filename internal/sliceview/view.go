package sliceview

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/statusclass"
)

// Effective class on the pinned Liqo types.
//
// Liqo after v1.2.0 adds status.class (set once by the provider when
// spec.class is empty and a default class is configured) and class
// controllers must serve a slice by status.class when it is set. The pinned
// v1.2.0 Go types have no such field, so the typed cache drops it. The SDK
// therefore keeps, per manager, a second and small cache of "class views":
// each slice decoded into just its name, labels, spec.class and
// status.class, and what the budgets count (see View). It is started
// only when the API server's ResourceSlice schema has status.class (read
// from OpenAPI v3 discovery, which every authenticated client may read);
// against today's CRD, which prunes the field, it costs nothing.

// View is the part of a ResourceSlice the effective class and the
// budgets need, and Trim keeps no more (one view per slice in the
// cluster, beside the typed slice cache). Each kept field, and why:
//
//   - name and namespace: the view's key, and the request a view event
//     enqueues;
//   - labels: the class's selector matches them (source), and a budget's
//     selectors read them from the observation;
//   - spec.class and status.class: the effective class;
//   - and, for the budgets' feeds, which observe slices through these
//     views where status.class exists, so that each observation carries
//     the class the same event showed (a lookup in another cache may be
//     behind or ahead): the UID (a slice deleted and created again under
//     its name is another slice to the ledger), the resourceVersion (the
//     ledger orders observations and settles its own writes by it), the
//     creation time (the fair order's tie-break), the Resources condition
//     while it is Accepted (with its reason only when it is Reclaimed) and
//     status.resources while it is Accepted (the grant the ledger counts).
//
// Everything else a slice holds (the CSR, the certificates, the other
// conditions, managed fields, annotations, owner references, the deletion
// timestamp) is dropped.
type View struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              classField `json:"spec,omitempty"`
	Status            viewStatus `json:"status,omitempty"`
}

type classField struct {
	Class string `json:"class,omitempty"`
}

// viewStatus is status.class, and what a budget counts: the Resources
// condition and status.resources.
type viewStatus struct {
	Class      string          `json:"class,omitempty"`
	Resources  grantJSON       `json:"resources,omitempty"`
	Conditions []viewCondition `json:"conditions,omitempty"`
}

type viewCondition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// grantJSON is status.resources as the API server sent it, checked to
// decode as a ResourceList (a slice whose grant does not decode fails to
// decode, as in the typed cache). A decoded ResourceList of three
// quantities takes about 700 bytes; these bytes, a few dozen. It is
// decoded again only when a budget observes the slice (list).
type grantJSON []byte

// UnmarshalJSON keeps b once it decodes as a ResourceList.
func (g *grantJSON) UnmarshalJSON(b []byte) error {
	var l corev1.ResourceList
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("status.resources: %w", err)
	}
	if l == nil {
		*g = nil
		return nil
	}
	*g = append(grantJSON(nil), b...)
	return nil
}

// MarshalJSON writes the grant as it was read.
func (g grantJSON) MarshalJSON() ([]byte, error) {
	if len(g) == 0 {
		return []byte("null"), nil
	}
	return g, nil
}

// List decodes the grant; nil when there is none. UnmarshalJSON checked
// that it decodes.
func (g grantJSON) List() corev1.ResourceList {
	if len(g) == 0 {
		return nil
	}
	var l corev1.ResourceList
	if err := json.Unmarshal(g, &l); err != nil {
		return nil
	}
	return l
}

// Accepted reports whether the view's Resources condition is Accepted.
func (v *View) Accepted() bool {
	c := v.resources()
	return c != nil && c.Status == string(authv1beta1.ResourceSliceConditionAccepted)
}

// Reclaimed reports whether the view's Resources condition is Accepted
// with reason Reclaimed: shrunk by a budget's reclaim.
func (v *View) Reclaimed() bool {
	c := v.resources()
	return c != nil && c.Status == string(authv1beta1.ResourceSliceConditionAccepted) && c.Reason == ledger.ReasonReclaimed
}

// resources is the view's Resources condition, nil when it has none.
func (v *View) resources() *viewCondition {
	for i := range v.Status.Conditions {
		if v.Status.Conditions[i].Type == string(authv1beta1.ResourceSliceConditionTypeResources) {
			return &v.Status.Conditions[i]
		}
	}
	return nil
}

// EffectiveClass is status.class when set, else spec.class.
func (v *View) EffectiveClass() string {
	if v.Status.Class != "" {
		return v.Status.Class
	}
	return v.Spec.Class
}

// DeepCopyObject implements runtime.Object.
func (v *View) DeepCopyObject() runtime.Object {
	out := *v
	v.DeepCopyInto(&out.ObjectMeta)
	out.Status.Resources = append(grantJSON(nil), v.Status.Resources...)
	out.Status.Conditions = append([]viewCondition(nil), v.Status.Conditions...)
	return &out
}

// ViewList is the list type of View.
type ViewList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []View `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *ViewList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]View, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*View)
	}
	return &out
}

// Trim keeps of a decoded view only the fields View lists, in
// place (a copy would leave the decoded view's memory behind in the
// informer's heap). The Resources condition is kept only while it is
// Accepted, its strings the package's constants rather than the decoded
// copies.
func Trim(obj any) (any, error) {
	v, ok := obj.(*View)
	if !ok {
		return obj, nil
	}
	accepted, reclaimed := v.Accepted(), v.Reclaimed()
	v.TypeMeta = metav1.TypeMeta{}
	v.ObjectMeta = metav1.ObjectMeta{Name: v.Name, Namespace: v.Namespace, UID: v.UID, Labels: v.Labels,
		ResourceVersion: v.ResourceVersion, CreationTimestamp: v.CreationTimestamp}
	v.Status.Conditions = nil
	if !accepted {
		v.Status.Resources = nil
		return v, nil
	}
	c := viewCondition{Type: string(authv1beta1.ResourceSliceConditionTypeResources), Status: string(authv1beta1.ResourceSliceConditionAccepted)}
	if reclaimed {
		c.Reason = ledger.ReasonReclaimed
	}
	v.Status.Conditions = []viewCondition{c}
	return v, nil
}

// Classes answers "what is this slice's status.class" for one
// manager, from its class-view cache.
type Classes struct {
	cache   cache.Cache
	cfg     discoveryConfig
	once    sync.Once
	enabled atomic.Bool
	// synced is set once the views' informer has synced: reads no
	// longer wait.
	synced atomic.Bool
}

type discoveryConfig interface {
	supportsStatusClass() (bool, error)
}

// Lookup returns the slice's status.class, "" when unknown. It never
// waits (predicates and event handlers ask it, with no context to end a
// wait): before the views' informer has synced, status.class is unknown,
// and the views' own source enqueues every slice whose status.class names
// a class once it has.
func (s *Classes) Lookup(key types.NamespacedName) string {
	if s == nil || !s.enabled.Load() {
		return ""
	}
	ctx := context.TODO() // neither call below waits: no context to end
	if !s.synced.Load() {
		inf, err := s.cache.GetInformer(ctx, &View{}, cache.BlockUntilSynced(false))
		if err != nil || !inf.HasSynced() {
			return ""
		}
		s.synced.Store(true)
	}
	var v View
	if err := s.cache.Get(ctx, key, &v); err != nil {
		return ""
	}
	return v.Status.Class
}

// Detect decides, once, whether the server can hold status.class at all.
func (s *Classes) Detect(ctx context.Context) bool {
	s.once.Do(func() {
		ok, err := s.cfg.supportsStatusClass()
		if err != nil {
			// Unsure: pay for the watch rather than miss a slice.
			log.FromContext(ctx).Info("cannot read the ResourceSlice schema; watching status.class anyway", "error", err.Error())
			ok = true
		}
		s.enabled.Store(ok)
	})
	return s.enabled.Load()
}

// NewClasses builds the class-view cache for mgr and adds it to the
// manager (it starts with the manager's caches; empty until a class needs
// it).
func NewClasses(mgr manager.Manager) (*Classes, error) {
	c, err := AddNarrowCache(mgr, "status.class", ViewScheme(), Trim)
	if err != nil {
		return nil, err
	}
	return &Classes{cache: c, cfg: openAPIDiscovery{mgr: mgr}}, nil
}

// ViewScheme decodes ResourceSlices into class views.
func ViewScheme() *runtime.Scheme {
	return NarrowScheme(authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind), &View{}, &ViewList{})
}

// openAPIDiscovery reads the ResourceSlice schema the server publishes.
type openAPIDiscovery struct{ mgr manager.Manager }

func (d openAPIDiscovery) supportsStatusClass() (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(d.mgr.GetConfig(), d.mgr.GetHTTPClient())
	if err != nil {
		return false, err
	}
	return statusclass.Published(dc)
}

var _ client.Object = &View{}

// Cache is the views' cache: the feeds and the classes' sources read the
// views' informer from it.
func (s *Classes) Cache() cache.Cache { return s.cache }

// EffectiveClass is rs's effective class, as Liqo's
// ResourceSlice.EffectiveClass() defines it: status.class when set, else
// spec.class. On the pinned types, which drop status.class, it is read
// from views (nil: the typed object alone decides).
func EffectiveClass(rs *authv1beta1.ResourceSlice, views *Classes) string {
	if c, ok := TypedEffectiveClass(rs); ok {
		return c
	}
	if views != nil {
		if c := views.Lookup(types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}); c != "" {
			return c
		}
	}
	return string(rs.Spec.Class)
}

// TypedEffectiveClass is the slice's effective class when the Go type has
// Liqo's EffectiveClass() (releases after v1.2.0, which the pinned types
// lack), so that a build against a newer Liqo picks it up with no code
// change; ok is false on the pinned types.
func TypedEffectiveClass(rs *authv1beta1.ResourceSlice) (string, bool) {
	if rs == nil {
		return "", true
	}
	switch v := any(rs).(type) {
	case interface {
		EffectiveClass() authv1beta1.ResourceSliceClass
	}:
		return string(v.EffectiveClass()), true
	case interface{ EffectiveClass() string }:
		return v.EffectiveClass(), true
	}
	return "", false
}
