package privilege

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// A repeated event: client-go's events recorder patches an event into a
// series when the same event repeats on the same object version. The
// scenario makes the manager repeat one: a ValidatingAdmissionPolicy
// refuses the manager's status writes on the slice sliceRefused, so each
// decision of it (at start, when its Tenant is drained, when it is
// re-activated) records a StatusRejected event on the same, unchanged
// slice. The first is created, the next ones patch it.

const (
	// sliceRefused is the slice whose status the policy refuses to the
	// manager.
	sliceRefused = "refused"
	// refuseLabel marks a slice whose status writes the policy refuses to
	// the manager; refuseProbeLabel, to everyone (the probe's).
	refuseLabel      = "privilege.sliceclass.io/refuse-status"
	refuseProbeLabel = "privilege.sliceclass.io/refuse-status-probe"
	refusePolicy     = "privilege-refuse-status"
	// reasonStatusRejected is the SDK's event reason for a status write
	// the API server refused as invalid.
	reasonStatusRejected = "StatusRejected"
)

// refuseStatus installs the policy (once for the suite) and waits until
// the API server enforces it: a probe slice's status write is refused.
func refuseStatus(ctx context.Context, tag string) error {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: refusePolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{authv1beta1.GroupVersion.Group}, APIVersions: []string{"*"},
						Resources: []string{"resourceslices/status"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf(`!has(object.metadata.labels) || !(%q in object.metadata.labels) || `+
					`(request.userInfo.username != %q && !(%q in object.metadata.labels))`, refuseLabel, saUser, refuseProbeLabel),
				Message: "the privilege suite refuses this slice's status to the manager",
				// Answered 422 Invalid, as a schema's refusal: the SDK
				// records StatusRejected and does not retry.
				Reason: ptr.To(metav1.StatusReasonInvalid),
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: refusePolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: refusePolicy,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := cp.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the status-refusing policy: %w", err)
		}
	}
	probe := slicetest.NewSlice("refuse-probe-"+tag, slicetest.WithNamespace("default"), slicetest.WithClass("privilege-probe"),
		slicetest.WithLabel(refuseLabel, "true"), slicetest.WithLabel(refuseProbeLabel, "true"))
	if err := cp.Client.Create(ctx, probe); err != nil {
		return fmt.Errorf("creating the policy's probe slice: %w", err)
	}
	defer func() { _ = cp.Client.Delete(context.Background(), probe) }()
	return waitFor(ctx, "the status-refusing policy enforced", func(ctx context.Context) (bool, error) {
		var rs authv1beta1.ResourceSlice
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(probe), &rs); err != nil {
			return false, err
		}
		conditions.Deny(&rs, "Probe", "probe")
		switch err := cp.Client.Status().Update(ctx, &rs); {
		case apierrors.IsInvalid(err) && strings.Contains(err.Error(), refusePolicy):
			return true, nil
		case err == nil:
			return false, nil // not enforced yet
		default:
			return false, err
		}
	})
}

// refusedSlice is the slice of the drained consumer whose status the
// policy refuses to the manager: one pod, which the budget does not count.
func (w world) refusedSlice() *authv1beta1.ResourceSlice {
	return slicetest.NewSlice(sliceRefused, slicetest.WithNamespace(w.tenantNS), slicetest.WithClass(w.class),
		slicetest.WithConsumer(tenantConsumer), slicetest.WithRequest(corev1.ResourcePods, "1"), slicetest.WithLabel(refuseLabel, "true"))
}

// eventRepeated waits for the StatusRejected event of sliceRefused to
// show as a series of at least two: the repeat was patched in.
func (r *run) eventRepeated(ctx context.Context) error {
	what := fmt.Sprintf("a %s event regarding slice %s/%s repeated as a series", reasonStatusRejected, r.w.tenantNS, sliceRefused)
	return waitFor(ctx, what, func(ctx context.Context) (bool, error) {
		var list eventsv1.EventList
		if err := cp.Client.List(ctx, &list, client.InNamespace(r.w.tenantNS)); err != nil {
			return false, err
		}
		seen := false
		for _, e := range list.Items {
			if e.Regarding.Name != sliceRefused || e.Reason != reasonStatusRejected {
				continue
			}
			seen = true
			if e.Series != nil && e.Series.Count >= 2 {
				return true, nil
			}
		}
		if !seen {
			return false, errors.New("no StatusRejected event yet")
		}
		return false, nil
	})
}
