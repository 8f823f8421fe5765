package envkit

import (
	"context"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Liqo's labels on a tenant namespace (Liqo v1.2.0's tenant namespace
// manager sets both).
const (
	// labelRemoteClusterID names the consumer a tenant namespace (and its
	// Tenant) belongs to: the SDK's trusted consumer identity.
	labelRemoteClusterID = "liqo.io/remote-cluster-id"
	// labelTenantNamespace marks a namespace as a tenant namespace.
	labelTenantNamespace = "liqo.io/tenant-namespace"
)

// tenantNamespace is the name Liqo gives the tenant namespace of
// consumer: liqo-tenant-<consumer>.
func tenantNamespace(consumer string) string { return "liqo-tenant-" + consumer }

// CreateTenantNamespace creates the namespace name as Liqo creates a
// consumer's tenant namespace on the provider, labelled with the consumer's
// cluster ID (label liqo.io/remote-cluster-id), which is what the SDK takes as the
// consumer of every slice in it. An existing namespace is labelled
// instead, so that a test may reuse one.
func CreateTenantNamespace(ctx context.Context, c client.Client, name, consumer string) error {
	labels := map[string]string{labelRemoteClusterID: consumer, labelTenantNamespace: "true"}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	err := c.Create(ctx, ns)
	if apierrors.IsAlreadyExists(err) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
				return err
			}
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			for k, v := range labels {
				ns.Labels[k] = v
			}
			return c.Update(ctx, ns)
		})
	}
	if err != nil {
		return fmt.Errorf("envkit: creating tenant namespace %s of consumer %s: %w", name, consumer, err)
	}
	return nil
}

// CreateTenant creates the Tenant Liqo keeps for consumer in namespace,
// labelled with the consumer's cluster ID, with condition (Active,
// Cordoned or Drained). The SDK's tenant rule reads it: a Drained tenant's
// slices, and a Cordoned tenant's undecided ones, are denied.
func CreateTenant(ctx context.Context, c client.Client, namespace, consumer string, condition authv1beta1.TenantCondition) (*authv1beta1.Tenant, error) {
	t := &authv1beta1.Tenant{
		ObjectMeta: metav1.ObjectMeta{
			Name:      consumer,
			Namespace: namespace,
			Labels:    map[string]string{labelRemoteClusterID: consumer},
		},
		Spec: authv1beta1.TenantSpec{
			ClusterID:       liqov1beta1.ClusterID(consumer),
			TenantCondition: condition,
		},
	}
	if err := c.Create(ctx, t); err != nil {
		return nil, fmt.Errorf("envkit: creating the Tenant of consumer %s in %s: %w", consumer, namespace, err)
	}
	return t, nil
}

// SetTenantCondition changes the condition of the Tenant at key, as an
// operator's `liqoctl cordon tenant` or `drain tenant` does, retrying on a
// conflict.
func SetTenantCondition(ctx context.Context, c client.Client, key types.NamespacedName, condition authv1beta1.TenantCondition) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var t authv1beta1.Tenant
		if err := c.Get(ctx, key, &t); err != nil {
			return err
		}
		t.Spec.TenantCondition = condition
		return c.Update(ctx, &t)
	})
	if err != nil {
		return fmt.Errorf("envkit: setting Tenant %s %s: %w", key, condition, err)
	}
	return nil
}

// CreateConsumer makes what Liqo makes on the provider when consumer
// peers: its tenant namespace (liqo-tenant-<consumer>) and an Active
// Tenant in it. It returns the namespace, where the consumer's slices go:
//
//	ns, err := envkit.CreateConsumer(ctx, cp.Client, "alice")
//	rs := slicetest.NewSlice("s1", slicetest.WithNamespace(ns), slicetest.WithConsumer("alice"))
func CreateConsumer(ctx context.Context, c client.Client, consumer string) (string, error) {
	ns := tenantNamespace(consumer)
	if err := CreateTenantNamespace(ctx, c, ns, consumer); err != nil {
		return "", err
	}
	if _, err := CreateTenant(ctx, c, ns, consumer, authv1beta1.TenantConditionActive); err != nil {
		return "", err
	}
	return ns, nil
}
