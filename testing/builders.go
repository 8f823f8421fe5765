package slicetest

import (
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sliceclass/sliceclass/conditions"
)

// Defaults of the builders.
const (
	DefaultNamespace = "liqo-tenant-consumer"
	DefaultConsumer  = "consumer"
	DefaultProvider  = "provider"
)

// SliceOption changes a slice being built.
type SliceOption func(*authv1beta1.ResourceSlice)

// NewSlice returns a ResourceSlice as Liqo's replicator leaves it on the
// provider once authentication is done: in DefaultNamespace, requested by
// DefaultConsumer, labelled as replicated, Authentication Accepted, with
// authParams set, and no Resources decision. Options change it.
func NewSlice(name string, opts ...SliceOption) *authv1beta1.ResourceSlice {
	consumer := liqov1beta1.ClusterID(DefaultConsumer)
	provider := liqov1beta1.ClusterID(DefaultProvider)
	rs := &authv1beta1.ResourceSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.ResourceSliceKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: DefaultNamespace,
			Labels: map[string]string{
				"liqo.io/originID":   DefaultConsumer,
				"liqo.io/replicated": "true",
			},
		},
		Spec: authv1beta1.ResourceSliceSpec{
			ConsumerClusterID: &consumer,
			ProviderClusterID: &provider,
			Resources:         corev1.ResourceList{},
			CSR:               []byte("csr"),
		},
	}
	authenticate(rs)
	for _, o := range opts {
		o(rs)
	}
	return rs
}

// WithClass sets spec.class.
func WithClass(class string) SliceOption {
	return func(rs *authv1beta1.ResourceSlice) { rs.Spec.Class = authv1beta1.ResourceSliceClass(class) }
}

// WithRequest adds a requested quantity to spec.resources, e.g.
// WithRequest("cpu", "4"). It panics on a malformed quantity, as
// resource.MustParse does: builders are for tests.
func WithRequest(name corev1.ResourceName, quantity string) SliceOption {
	return func(rs *authv1beta1.ResourceSlice) {
		if rs.Spec.Resources == nil {
			rs.Spec.Resources = corev1.ResourceList{}
		}
		rs.Spec.Resources[name] = resource.MustParse(quantity)
	}
}

// WithRequests replaces spec.resources.
func WithRequests(rl corev1.ResourceList) SliceOption {
	return func(rs *authv1beta1.ResourceSlice) { rs.Spec.Resources = rl.DeepCopy() }
}

// WithNamespace puts the slice in ns.
func WithNamespace(ns string) SliceOption {
	return func(rs *authv1beta1.ResourceSlice) { rs.Namespace = ns }
}

// WithConsumer sets the consumer cluster ID (spec and the origin label).
func WithConsumer(id string) SliceOption {
	return func(rs *authv1beta1.ResourceSlice) {
		c := liqov1beta1.ClusterID(id)
		rs.Spec.ConsumerClusterID = &c
		if rs.Labels == nil {
			rs.Labels = map[string]string{}
		}
		rs.Labels["liqo.io/originID"] = id
	}
}

// WithLabel sets a label on the slice, e.g. one a custom selector
// (resourceslice.WithSelector) or the policy reads.
func WithLabel(key, value string) SliceOption {
	return func(rs *authv1beta1.ResourceSlice) {
		if rs.Labels == nil {
			rs.Labels = map[string]string{}
		}
		rs.Labels[key] = value
	}
}

// Unauthenticated removes the Authentication condition and authParams, as on
// a slice Liqo has not processed yet.
func Unauthenticated() SliceOption {
	return func(rs *authv1beta1.ResourceSlice) {
		rs.Status.AuthParams = nil
		var keep []authv1beta1.ResourceSliceCondition
		for _, c := range rs.Status.Conditions {
			if c.Type != conditions.Authentication {
				keep = append(keep, c)
			}
		}
		rs.Status.Conditions = keep
	}
}

// NotReplicated removes the replication labels, as on a slice created locally.
func NotReplicated() SliceOption {
	return func(rs *authv1beta1.ResourceSlice) {
		delete(rs.Labels, "liqo.io/originID")
		delete(rs.Labels, "liqo.io/replicated")
	}
}

// Decided gives the slice an existing Resources decision.
func Decided(status authv1beta1.ResourceSliceConditionStatus, reason string) SliceOption {
	return func(rs *authv1beta1.ResourceSlice) {
		conditions.Set(rs, conditions.Resources, status, reason, "")
	}
}

// NewTenant returns the Tenant Liqo keeps for consumer in DefaultNamespace,
// labelled liqo.io/remote-cluster-id=consumer, with the given condition.
func NewTenant(consumer string, condition authv1beta1.TenantCondition) *authv1beta1.Tenant {
	return &authv1beta1.Tenant{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      consumer,
			Namespace: DefaultNamespace,
			Labels:    map[string]string{"liqo.io/remote-cluster-id": consumer},
		},
		Spec: authv1beta1.TenantSpec{
			ClusterID:       liqov1beta1.ClusterID(consumer),
			TenantCondition: condition,
		},
	}
}
