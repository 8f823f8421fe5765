// Package cappedresources is an example allocation policy: it offers only
// the resources it has a cap for, each up to its cap. A requested resource
// without a cap is dropped from the offer and named in the condition
// message ("not offered: nvidia.com/gpu"): a class capped on cpu and memory
// never grants GPUs because nobody thought to cap them. A slice that
// requests nothing, or only resources without a cap, is denied.
package cappedresources

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/flags"
	"github.com/sliceclass/sliceclass/handler"
)

// Condition reasons the policy sets.
const (
	// ReasonGranted: every requested resource is granted as asked.
	ReasonGranted = "ResourcesGranted"
	// ReasonCapped: the offer is less than the request; the message names
	// each resource capped ("capped: cpu 16→4") and each dropped for
	// want of a cap ("not offered: nvidia.com/gpu").
	ReasonCapped = "ResourcesCapped"
	// ReasonNoResources: the slice requests nothing (Denied).
	ReasonNoResources = "NoResourcesRequested"
	// ReasonNotOffered: the slice requests only resources the policy has
	// no cap for (Denied); the message names them.
	ReasonNotOffered = "ResourcesNotOffered"
)

// Policy offers the resources it has a cap for, each up to its cap. It
// keeps no state and is safe for concurrent use.
type Policy struct {
	caps corev1.ResourceList
}

var _ handler.Handler = &Policy{}

// New returns a Policy with the given caps. No caps (the policy would offer
// nothing), a negative cap, or one larger than the largest integer a
// Quantity holds exactly, is an error. To offer a resource without limit,
// cap it at what the provider has.
func New(caps corev1.ResourceList) (*Policy, error) {
	if len(caps) == 0 {
		return nil, errors.New("no caps: the policy offers only the resources it has a cap for, e.g. cpu=4,memory=8Gi,pods=110")
	}
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

// ParseCaps parses "cpu=4,memory=8Gi,pods=110" into caps, as
// flags.ParseResourceList does (the SDK's parser for resource lists on a
// command line): it refuses malformed entries, negative caps, caps beyond
// what a Quantity holds exactly, and a resource capped twice.
func ParseCaps(s string) (corev1.ResourceList, error) {
	caps, err := flags.ParseResourceList(s)
	if err != nil {
		return nil, fmt.Errorf("caps: %w", err)
	}
	return caps, nil
}

// Handle grants each requested resource that has a cap, up to its cap, and
// drops the others from the offer, naming them in the message. It denies a
// slice that requests nothing, or nothing the policy offers.
func (p *Policy) Handle(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	if len(rs.Spec.Resources) == 0 {
		rs.Status.Resources = nil
		conditions.Deny(rs, ReasonNoResources, "the slice requests no resources")
		return ctrl.Result{}, nil
	}
	granted := corev1.ResourceList{}
	var capped, dropped []string
	for name, want := range rs.Spec.Resources {
		limit, ok := p.caps[name]
		switch {
		case !ok:
			dropped = append(dropped, string(name))
			continue
		case want.Sign() < 0:
			want = resource.Quantity{}
		}
		if want.Cmp(limit) > 0 {
			granted[name] = limit.DeepCopy()
			capped = append(capped, fmt.Sprintf("%s %s→%s", name, want.String(), limit.String()))
			continue
		}
		granted[name] = want.DeepCopy()
	}
	sort.Strings(capped)
	sort.Strings(dropped)
	notOffered := "not offered: " + strings.Join(dropped, ", ")
	if len(granted) == 0 {
		rs.Status.Resources = nil
		conditions.Deny(rs, ReasonNotOffered, notOffered)
		return ctrl.Result{}, nil
	}
	rs.Status.Resources = granted
	var msg []string
	if len(capped) > 0 {
		msg = append(msg, "capped: "+strings.Join(capped, ", "))
	}
	if len(dropped) > 0 {
		msg = append(msg, notOffered)
	}
	if len(msg) > 0 {
		conditions.Accept(rs, ReasonCapped, strings.Join(msg, "; "))
		return ctrl.Result{}, nil
	}
	conditions.Accept(rs, ReasonGranted, "all requested resources granted")
	return ctrl.Result{}, nil
}
