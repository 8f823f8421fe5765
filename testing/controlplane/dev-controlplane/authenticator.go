package main

import (
	"context"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqoconsts "github.com/liqotech/liqo/pkg/consts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/sliceconds"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// authenticatorName names the authenticator's controller and its events'
// reporter.
const authenticatorName = "dev-controlplane-authentication"

// The reasons Liqo's ResourceSlice controller gives the Authentication
// condition and its events.
const (
	reasonAuthAccepted = "ResourceSliceAuthenticationAccepted"
	reasonAuthDenied   = "ResourceSliceAuthenticationDenied"
	reasonNoTenant     = "TenantNotFound"
)

// authenticator plays, on the control plane, the part of Liqo v1.2.0's
// remoteresourceslice-controller on a provider: a replicated slice in its
// consumer's tenant namespace, whose consumer has a Tenant there, gets the
// Authentication condition Accepted and authParams (slicetest.Authenticate
// writes them, as every test of the SDK has them written); a slice in any
// other namespace gets it Denied, as Liqo denies it. It never writes
// Resources: that is the class controller's.
//
// Liqo's own controller cannot run here. It reconciles only slices whose
// spec carries a CSR signed by the consumer's key, which a slice written
// with kubectl has not, and it answers one by having the API server's
// client signer (kube-controller-manager's, absent from a control plane of
// kube-apiserver and etcd) issue a certificate, waiting up to 30 seconds for
// it before it fails the slice's authentication.
type authenticator struct {
	client   client.Client
	recorder events.EventRecorder
}

// addAuthenticator registers the authenticator in mgr. It watches the
// slices Liqo's replicator creates (the labels Liqo's controller selects
// on).
func addAuthenticator(mgr manager.Manager) error {
	a := &authenticator{client: mgr.GetClient(), recorder: mgr.GetEventRecorder(authenticatorName)}
	replicated, err := predicate.LabelSelectorPredicate(metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: liqoconsts.ReplicationOriginLabel, Operator: metav1.LabelSelectorOpExists},
			{Key: liqoconsts.ReplicationStatusLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"true"}},
		},
	})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named(authenticatorName).
		For(&authv1beta1.ResourceSlice{}, builder.WithPredicates(replicated)).
		Complete(a)
}

// Reconcile authenticates the slice at req, once.
func (a *authenticator) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rs authv1beta1.ResourceSlice
	if err := a.client.Get(ctx, req.NamespacedName, &rs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if c := conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeAuthentication); c != nil && c.Status != "" {
		return ctrl.Result{}, nil // decided: Liqo decides again only on a renewal
	}
	if rs.Spec.ConsumerClusterID == nil || *rs.Spec.ConsumerClusterID == "" {
		a.recorder.Eventf(&rs, nil, corev1.EventTypeWarning, reasonAuthDenied, "Authenticate", "spec.consumerClusterID is not set")
		return ctrl.Result{}, nil
	}
	consumer := string(*rs.Spec.ConsumerClusterID)
	if why, err := a.outsideTenantNamespace(ctx, rs.Namespace, consumer); err != nil {
		return ctrl.Result{}, err
	} else if why != "" {
		return ctrl.Result{}, a.deny(ctx, &rs, why)
	}
	var tenants authv1beta1.TenantList
	if err := a.client.List(ctx, &tenants, client.InNamespace(rs.Namespace), client.MatchingLabels{liqoconsts.RemoteClusterID: consumer}); err != nil {
		return ctrl.Result{}, err
	}
	if len(tenants.Items) != 1 {
		// Liqo's controller retries until the consumer's one Tenant exists.
		a.recorder.Eventf(&rs, nil, corev1.EventTypeWarning, reasonNoTenant, "Authenticate",
			"%d Tenants of consumer %s in %s, want 1", len(tenants.Items), consumer, rs.Namespace)
		return ctrl.Result{}, fmt.Errorf("%d Tenants of consumer %s in %s, want 1", len(tenants.Items), consumer, rs.Namespace)
	}
	if err := slicetest.Authenticate(ctx, a.client, req.NamespacedName); err != nil {
		return ctrl.Result{}, err
	}
	a.recorder.Eventf(&rs, nil, corev1.EventTypeNormal, reasonAuthAccepted, "Authenticate", "ResourceSlice authentication accepted")
	return ctrl.Result{}, nil
}

// outsideTenantNamespace says why namespace is not the tenant namespace of
// consumer, as Liqo checks it; "" when it is.
func (a *authenticator) outsideTenantNamespace(ctx context.Context, namespace, consumer string) (string, error) {
	var ns corev1.Namespace
	switch err := a.client.Get(ctx, client.ObjectKey{Name: namespace}, &ns); {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("namespace %s does not exist", namespace), nil
	case err != nil:
		return "", err
	}
	if v, ok := ns.Labels[liqoconsts.TenantNamespaceLabel]; !ok || v == "false" {
		return fmt.Sprintf("namespace %s is not a tenant namespace (no label %s)", namespace, liqoconsts.TenantNamespaceLabel), nil
	}
	if owner := ns.Labels[liqoconsts.RemoteClusterID]; owner != consumer {
		return fmt.Sprintf("consumer %s's slice is in the tenant namespace of %q", consumer, owner), nil
	}
	return "", nil
}

// deny writes the Authentication condition Denied, as Liqo does for a slice
// outside its consumer's tenant namespace, and says why in an event.
func (a *authenticator) deny(ctx context.Context, rs *authv1beta1.ResourceSlice, why string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur authv1beta1.ResourceSlice
		if err := a.client.Get(ctx, client.ObjectKeyFromObject(rs), &cur); err != nil {
			return err
		}
		sliceconds.Set(&cur, authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionDenied, reasonAuthDenied, "ResourceSlice authentication denied")
		return a.client.Status().Update(ctx, &cur)
	})
	if err != nil {
		return fmt.Errorf("denying the authentication of slice %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	a.recorder.Eventf(rs, nil, corev1.EventTypeWarning, reasonAuthDenied, "Authenticate", "%s", why)
	return nil
}
