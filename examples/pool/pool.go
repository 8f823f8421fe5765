// Package pool is an example allocation policy on a budget: a fixed total
// of resources shared by every slice of one or more classes. The handler is
// the policy alone (grant what is asked, if the pool offers those
// resources); the budget does the accounting: it admits an acceptance only
// if it fits what is free, atomically across workers and classes, writes
// the others Denied with reason budget.ReasonExhausted, gives a slice's
// share back when it is deleted or accepted again with less (once Liqo's
// Quota follows; a denial gives nothing back, as Liqo's Quota stays), and
// re-admits waiting slices fair by consumer, oldest first within one.
//
// Before budgets, this example listed slices from the cache and summed what
// Accepted ones held. The cache lags the controller's own writes, so a
// backlog decided quickly over-committed the pool (11 CPU granted from 10 in
// one run of three on a real API server); the budget counts an admission
// from the moment it is reserved.
package pool

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// Condition reasons the policy sets. A request that does not fit what is
// free is denied by the budget with budget.ReasonExhausted.
const (
	ReasonGranted   = "PoolGranted"
	ReasonNoRequest = "NoResourcesRequested"
	ReasonNotPooled = "NotPooled"
)

// Pool grants slices what they ask from a budget.
type Pool struct {
	b *budget.Budget
}

var _ handler.Handler = &Pool{}

// New returns a Pool drawing from b.
func New(b *budget.Budget) (*Pool, error) {
	if b == nil {
		return nil, errors.New("pool: nil budget")
	}
	return &Pool{b: b}, nil
}

// Option makes a class draw from the pool's budget: pass it to
// resourceslice.AddToManager with the Pool as the handler.
func (p *Pool) Option() resourceslice.DecisionOption { return resourceslice.WithBudget(p.b) }

// Handle accepts what the slice asks if the pool offers every resource it
// asks for; whether it fits is the budget's call.
func (p *Pool) Handle(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	if len(rs.Spec.Resources) == 0 {
		conditions.Deny(rs, ReasonNoRequest, "the slice requests no resources")
		return ctrl.Result{}, nil
	}
	total := p.b.Total()
	var missing []string
	for name := range rs.Spec.Resources {
		if _, ok := total[name]; !ok {
			missing = append(missing, string(name))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		rs.Status.Resources = nil
		conditions.Deny(rs, ReasonNotPooled, fmt.Sprintf("the pool does not offer %s", strings.Join(missing, ", ")))
		return ctrl.Result{}, nil
	}
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, ReasonGranted, "granted from pool "+p.b.Name())
	return ctrl.Result{}, nil
}
