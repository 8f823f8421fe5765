package soak

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slicetest "github.com/sliceclass/sliceclass/testing"
)

// The churn's steady rates. Creations and deletions balance: a deletion
// waits while the count is below the target, a creation while it is more
// than countSlack above, so the count stays near the target even when
// creations (two writes each) fall behind; every flipInterval one
// Tenant goes down (Drained or Cordoned) or, with maxTenantsDown already
// down, the one down longest comes back to Active.
const (
	createsPerSecond  = 20
	deletesPerSecond  = 20
	rewritesPerSecond = 20
	flipInterval      = 2 * time.Second
	maxTenantsDown    = 5
	countSlack        = 200
	// workersPerOp bounds the writes of one kind in flight.
	workersPerOp = 8
)

// opStats counts one kind of churn operation.
type opStats struct {
	name                          string
	done, skipped, missed, failed atomic.Int64

	mu    sync.Mutex
	first error
}

func (s *opStats) record(ran bool, err error) {
	switch {
	case err != nil:
		s.failed.Add(1)
		s.mu.Lock()
		if s.first == nil {
			s.first = err
		}
		s.mu.Unlock()
	case ran:
		s.done.Add(1)
	default:
		s.skipped.Add(1)
	}
}

func (s *opStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := fmt.Sprintf("%s: %d done, %d skipped, %d ticks missed (workers busy), %d failed",
		s.name, s.done.Load(), s.skipped.Load(), s.missed.Load(), s.failed.Load())
	if s.first != nil {
		out += fmt.Sprintf(" (first: %v)", s.first)
	}
	return out
}

// churn plays Liqo and the consumers against the API server: it creates
// and deletes slices, rewrites their authentication, and flips Tenants.
type churn struct {
	f      *fleet
	c      client.Client
	target int

	creates, deletes, rewrites, flips opStats
}

func newChurn(f *fleet, c client.Client, target int) *churn {
	g := &churn{f: f, c: c, target: target}
	g.creates.name, g.deletes.name, g.rewrites.name, g.flips.name = "creations", "deletions", "Liqo rewrites", "tenant flips"
	return g
}

// stats lists the operation counters.
func (g *churn) stats() []*opStats {
	return []*opStats{&g.creates, &g.deletes, &g.rewrites, &g.flips}
}

// run churns for d. Operations already started when d ends run to the end
// with ctx, so none fails for being cut short.
func (g *churn) run(ctx context.Context, d time.Duration) {
	stop, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { every(stop, ctx, time.Second/createsPerSecond, workersPerOp, g.create, &g.creates) })
	wg.Go(func() { every(stop, ctx, time.Second/deletesPerSecond, workersPerOp, g.delete, &g.deletes) })
	wg.Go(func() { every(stop, ctx, time.Second/rewritesPerSecond, workersPerOp, g.rewrite, &g.rewrites) })
	wg.Go(func() { every(stop, ctx, flipInterval, 1, g.flip, &g.flips) })
	wg.Wait()
}

// every calls op at each tick of interval, on workers goroutines, until
// stop ends. A tick that finds every worker busy is counted as missed, not
// queued: a slow API server lowers the achieved rate instead of building a
// burst.
func every(stop, ctx context.Context, interval time.Duration, workers int, op func(context.Context) (bool, error), s *opStats) {
	ticks := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range ticks {
				s.record(op(ctx))
			}
		})
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
loop:
	for {
		select {
		case <-stop.Done():
			break loop
		case <-ticker.C:
			select {
			case ticks <- struct{}{}:
			default:
				s.missed.Add(1)
			}
		}
	}
	close(ticks)
	wg.Wait()
}

// create adds a slice as Liqo would, unless the count is above the target.
// A slice whose status write failed is deleted again: without its
// Authentication condition it would never be decided.
func (g *churn) create(ctx context.Context) (bool, error) {
	if g.f.size() > g.target+countSlack {
		return false, nil
	}
	r := g.f.reserve()
	rs := g.f.object(r)
	if err := slicetest.CreateAsLiqo(ctx, g.c, rs); err != nil {
		_ = g.c.Delete(ctx, sliceRef(r.key)) // best effort; an unknown slice fails the final check
		return false, err
	}
	g.f.add(r)
	return true, nil
}

// delete removes a random slice, as a consumer's unpeering or its
// replicator would, unless the count is below the target.
func (g *churn) delete(ctx context.Context) (bool, error) {
	if g.f.size() < g.target {
		return false, nil
	}
	r := g.f.take()
	if r == nil {
		return false, nil
	}
	if err := g.c.Delete(ctx, sliceRef(r.key)); err != nil && !apierrors.IsNotFound(err) {
		g.f.add(r) // still there: keep expecting its decision
		return false, err
	}
	return true, nil
}

// rewrite plays Liqo's ResourceSlice controller renewing a slice's
// certificate: read, new authParams and Authentication message, status PUT,
// retried on conflict (with the class controller's writes).
func (g *churn) rewrite(ctx context.Context) (bool, error) {
	key, rev, ok := g.f.pick()
	if !ok {
		return false, nil
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var rs authv1beta1.ResourceSlice
		if err := g.c.Get(ctx, key, &rs); err != nil {
			return err
		}
		liqoAuth(&rs, rev)
		return g.c.Status().Update(ctx, &rs)
	})
	g.f.rewritten(key, rev, err == nil)
	switch {
	case apierrors.IsNotFound(err): // deleted meanwhile
		return false, nil
	case err != nil:
		return false, fmt.Errorf("rewriting %s: %w", key, err)
	}
	return true, nil
}

// flip changes one Tenant's condition (see nextFlip).
func (g *churn) flip(ctx context.Context) (bool, error) {
	i, to := g.f.nextFlip(maxTenantsDown)
	t := g.f.tenants[i] // namespace and consumer never change
	key := types.NamespacedName{Namespace: t.namespace, Name: t.consumer}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var tn authv1beta1.Tenant
		if err := g.c.Get(ctx, key, &tn); err != nil {
			return err
		}
		tn.Spec.TenantCondition = to
		return g.c.Update(ctx, &tn)
	})
	if err != nil {
		return false, fmt.Errorf("setting Tenant %s to %s: %w", key, to, err)
	}
	g.f.flipped(i, to)
	return true, nil
}

func sliceRef(key types.NamespacedName) *authv1beta1.ResourceSlice {
	return &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
}
