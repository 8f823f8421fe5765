// Package cappedresources is an example allocation policy: it accepts every
// slice and caps each requested resource at a configured threshold.
// Resources without a cap are granted as requested; a slice that requests
// nothing is denied.
package cappedresources

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
)

// Condition reasons the policy sets.
const (
	ReasonGranted     = "ResourcesGranted"
	ReasonCapped      = "ResourcesCapped"
	ReasonNoResources = "NoResourcesRequested"
)

// Policy caps each requested resource at Caps. It keeps no state and is safe
// for concurrent use.
type Policy struct {
	caps corev1.ResourceList
}

var _ handler.Handler = &Policy{}

// New returns a Policy with the given caps; a negative cap, or one larger
// than the largest integer a Quantity holds exactly, is an error.
func New(caps corev1.ResourceList) (*Policy, error) {
	for name, q := range caps {
		if err := checkCap(q); err != nil {
			return nil, fmt.Errorf("cap for %s: %w", name, err)
		}
	}
	return &Policy{caps: caps.DeepCopy()}, nil
}

// checkCap refuses a negative cap, and one beyond int64: there a Quantity no
// longer prints as it parsed (1000E prints as "1"), so the cap would be
// reported wrong.
func checkCap(q resource.Quantity) error {
	if q.Sign() < 0 {
		return fmt.Errorf("negative quantity %s", q.String())
	}
	if q.Cmp(maxCap) > 0 {
		return fmt.Errorf("larger than %s", maxCap.String())
	}
	return nil
}

// maxCap is the largest cap ParseCaps accepts: the largest integer a
// Quantity holds exactly.
var maxCap = *resource.NewQuantity(math.MaxInt64, resource.DecimalSI)

// ParseCaps parses "cpu=4,memory=8Gi,pods=110" into a ResourceList.
func ParseCaps(s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || value == "" {
			return nil, fmt.Errorf("cap %q: want name=quantity, e.g. cpu=4", kv)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("cap %q: %w", kv, err)
		}
		if err := checkCap(q); err != nil {
			return nil, fmt.Errorf("cap %q: %w", kv, err)
		}
		if _, dup := out[corev1.ResourceName(name)]; dup {
			return nil, fmt.Errorf("cap for %s given twice", name)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// Handle grants each requested resource up to its cap.
func (p *Policy) Handle(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	if len(rs.Spec.Resources) == 0 {
		rs.Status.Resources = nil
		conditions.Deny(rs, ReasonNoResources, "the slice requests no resources")
		return ctrl.Result{}, nil
	}
	granted := corev1.ResourceList{}
	var capped []string
	for name, want := range rs.Spec.Resources {
		if want.Sign() < 0 {
			want = resource.Quantity{}
		}
		if limit, ok := p.caps[name]; ok && want.Cmp(limit) > 0 {
			granted[name] = limit.DeepCopy()
			capped = append(capped, fmt.Sprintf("%s %s→%s", name, want.String(), limit.String()))
			continue
		}
		granted[name] = want.DeepCopy()
	}
	rs.Status.Resources = granted
	if len(capped) > 0 {
		sort.Strings(capped)
		conditions.Accept(rs, ReasonCapped, "capped: "+strings.Join(capped, ", "))
		return ctrl.Result{}, nil
	}
	conditions.Accept(rs, ReasonGranted, "all requested resources granted")
	return ctrl.Result{}, nil
}
