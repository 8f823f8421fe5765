package slicetest

import (
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sliceclass/sliceclass/internal/sliceconds"
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
// WithRequest("cpu", "4"); a new slice asks for nothing. It panics on a
// malformed quantity, as resource.MustParse does: builders are for tests.
// A test holding a corev1.ResourceList sets it, as any field:
// rs.Spec.Resources = list.
func WithRequest(name corev1.ResourceName, quantity string) SliceOption {
	return func(rs *authv1beta1.ResourceSlice) {
		if rs.Spec.Resources == nil {
			rs.Spec.Resources = corev1.ResourceList{}
		}
		rs.Spec.Resources[name] = resource.MustParse(quantity)
	}
}

// WithNamespace puts the slice in ns.
func WithNamespace(ns string) SliceOption {
	return func(rs *authv1beta1.ResourceSlice) { rs.Namespace = ns }
}

// WithConsumer makes id the slice's consumer. It sets the cluster ID the
// slice claims (spec.consumerClusterID and the liqo.io/originID label)
// and, for a slice still in DefaultNamespace, puts it in id's tenant
// namespace, liqo-tenant-<id>, as Liqo's replicator does; a WithNamespace
// given after it puts the slice there instead.
//
// The SDK trusts no claim: a slice's consumer (resourceslice.Consumer,
// which consumer limits and a budget's fair order key on) is its
// namespace's liqo.io/remote-cluster-id label, or the namespace itself.
// So a Harness makes the tenant namespace of a slice's consumer, labelled
// as Liqo labels it, when the slice is in it and the namespace does not
// exist: for the slices it is seeded with (WithObjects) and those the
// test creates through Harness.Client. A consumer limit on id then applies
// to the slice. On a control plane, create the namespace
// (envkit.CreateConsumer).
//
// DefaultNamespace is never made: a slice left in it, as NewSlice leaves
// it, has the namespace as its consumer (WithConsumer(DefaultConsumer)
// too), unless the test seeds it labelled.
func WithConsumer(id string) SliceOption {
	return func(rs *authv1beta1.ResourceSlice) {
		c := liqov1beta1.ClusterID(id)
		rs.Spec.ConsumerClusterID = &c
		if rs.Labels == nil {
			rs.Labels = map[string]string{}
		}
		rs.Labels["liqo.io/originID"] = id
		if rs.Namespace == DefaultNamespace {
			rs.Namespace = tenantNamespace(id)
		}
	}
}

// Liqo's labels on a tenant namespace (as envkit's, which this package
// does not import).
const (
	labelRemoteClusterID = "liqo.io/remote-cluster-id"
	labelTenantNamespace = "liqo.io/tenant-namespace"
)

// tenantNamespace is the name Liqo gives the tenant namespace of consumer.
func tenantNamespace(consumer string) string { return "liqo-tenant-" + consumer }

// tenantNamespaceOf is the tenant namespace of rs's claimed consumer,
// labelled as Liqo labels it, when rs is in it (WithConsumer puts it
// there); nil otherwise, and for DefaultNamespace (see WithConsumer).
func tenantNamespaceOf(rs *authv1beta1.ResourceSlice) *corev1.Namespace {
	id := rs.Spec.ConsumerClusterID
	if id == nil || *id == "" || rs.Namespace == DefaultNamespace || rs.Namespace != tenantNamespace(string(*id)) {
		return nil
	}
	return &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   rs.Namespace,
			Labels: map[string]string{labelRemoteClusterID: string(*id), labelTenantNamespace: "true"},
		},
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
			if c.Type != authv1beta1.ResourceSliceConditionTypeAuthentication {
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
		sliceconds.Set(rs, authv1beta1.ResourceSliceConditionTypeResources, status, reason, "")
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
