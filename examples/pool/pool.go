// Package pool is an example allocation policy: a fixed total of resources
// shared by every slice of a class. A slice is accepted with what it asks
// for when that fits in what the class's other accepted slices leave free,
// and denied otherwise.
//
// Usage is computed from the slices themselves, listed through the manager's
// cache, so a deleted slice releases its share with no finalizer and a
// restarted controller needs no bookkeeping.
//
// Run it with one worker (the default): with two, two slices could each see
// the same free share and both be accepted, over-committing the pool, since
// neither sees the other's decision until it is written.
package pool

import (
	"context"
	"fmt"
	"sort"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// Condition reasons the policy sets.
const (
	ReasonGranted   = "PoolGranted"
	ReasonExhausted = "PoolExhausted"
	ReasonNoRequest = "NoResourcesRequested"
)

// Pool shares Total among the slices of Class.
type Pool struct {
	reader client.Reader
	class  string
	total  corev1.ResourceList
}

var _ handler.Handler = &Pool{}

// New returns a Pool for class over total, reading slices through r (pass
// mgr.GetClient() so reads hit the cache).
func New(r client.Reader, class string, total corev1.ResourceList) (*Pool, error) {
	if r == nil {
		return nil, fmt.Errorf("pool for class %q: nil reader", class)
	}
	for name, q := range total {
		if q.Sign() < 0 {
			return nil, fmt.Errorf("pool for class %q: negative total for %s", class, name)
		}
	}
	return &Pool{reader: r, class: class, total: total.DeepCopy()}, nil
}

// Handle accepts the slice if its request fits in what is left.
func (p *Pool) Handle(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	if len(rs.Spec.Resources) == 0 {
		conditions.Deny(rs, ReasonNoRequest, "the slice requests no resources")
		return ctrl.Result{}, nil
	}
	used, err := p.usedByOthers(ctx, rs)
	if err != nil {
		return ctrl.Result{}, err
	}
	var short []string
	for name, want := range rs.Spec.Resources {
		total, pooled := p.total[name]
		if !pooled {
			short = append(short, fmt.Sprintf("%s is not offered by this pool", name))
			continue
		}
		free := total.DeepCopy()
		u := used[name]
		free.Sub(u)
		if want.Cmp(free) > 0 {
			short = append(short, fmt.Sprintf("%s: asked %s, %s left", name, want.String(), free.String()))
		}
	}
	if len(short) > 0 {
		sort.Strings(short)
		rs.Status.Resources = nil
		conditions.Deny(rs, ReasonExhausted, strings.Join(short, "; "))
		return ctrl.Result{}, nil
	}
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, ReasonGranted, "granted from the class pool")
	return ctrl.Result{}, nil
}

// usedByOthers sums what the class's other accepted, live slices hold.
func (p *Pool) usedByOthers(ctx context.Context, self *authv1beta1.ResourceSlice) (corev1.ResourceList, error) {
	var list authv1beta1.ResourceSliceList
	if err := p.reader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing slices of class %q: %w", p.class, err)
	}
	used := corev1.ResourceList{}
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID == self.UID && o.Namespace == self.Namespace && o.Name == self.Name {
			continue
		}
		if resourceslice.ClassOf(o) != p.class || !o.DeletionTimestamp.IsZero() || !conditions.IsAccepted(o) {
			continue
		}
		for name, q := range o.Status.Resources {
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
	}
	return used, nil
}

// Free returns what is left in the pool for a new slice.
func (p *Pool) Free(ctx context.Context) (corev1.ResourceList, error) {
	used, err := p.usedByOthers(ctx, &authv1beta1.ResourceSlice{})
	if err != nil {
		return nil, err
	}
	free := corev1.ResourceList{}
	for name, total := range p.total {
		f := total.DeepCopy()
		f.Sub(used[name])
		if f.Sign() < 0 {
			f = resource.Quantity{}
		}
		free[name] = f
	}
	return free, nil
}
