package budget

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
)

// A SliceBudget with spec.nodePool: the follower runs a node pool (what
// NewNodePool builds) for the selector and options the spec gives, and
// replaces it when they change. A pool being read holds its total back:
// the ledger keeps the capacity it had (or decides nothing, if it had
// none) until the new pool has read every node, so that neither a
// half-read pool nor an empty one shrinks anything.

// poolRun is a running pool and the spec it follows.
type poolRun struct {
	spec   v1alpha1.NodePool
	p      *nodePool
	cancel context.CancelFunc
	// released: the pool was read and its total is in force.
	released bool
	// failed is why the pool could not be read, while it is not.
	failed string
}

// stop stops the pool; its total is no longer given to the ledger.
func (r *poolRun) stop() {
	r.p.mu.Lock()
	r.p.held = true
	r.p.mu.Unlock()
	r.cancel()
}

// poolOptions are the node-pool options np gives.
func poolOptions(np *v1alpha1.NodePool) (labels.Selector, options, error) {
	o := options{share: defaultSharePercent}
	if np.Selector == nil {
		return nil, o, errors.New("spec.nodePool.selector is not set: {} selects every node")
	}
	sel, err := metav1.LabelSelectorAsSelector(np.Selector.LabelSelector())
	if err != nil {
		return nil, o, fmt.Errorf("spec.nodePool.selector: %w", err)
	}
	if len(np.Resources) > 0 {
		o.resources = append([]corev1.ResourceName(nil), np.Resources...)
	}
	if np.SharePercent != 0 {
		if np.SharePercent < minSharePercent || np.SharePercent > maxSharePercent {
			return nil, o, fmt.Errorf("spec.nodePool.sharePercent %d is not within %d–%d", np.SharePercent, minSharePercent, maxSharePercent)
		}
		o.share = int(np.SharePercent)
	}
	o.reserve = np.Reserve.ResourceList()
	for n, q := range o.reserve {
		if q.Sign() < 0 {
			return nil, o, fmt.Errorf("spec.nodePool.reserve: negative %s=%s", n, q.String())
		}
	}
	o.localPods = np.LocalPods
	return sel, o, nil
}

// followPool makes the budget follow the pool np (its options checked by
// poolOptions), starting one, or replacing the one running, unless it
// already follows np. It reports whether the pool is read and its total in
// force; if not, finish(generation) is called once it is, unless the spec
// changed meanwhile. The caller holds applyMu.
func (f *objectFollower) followPool(ctx context.Context, np *v1alpha1.NodePool, sel labels.Selector, o options, generation int64) (bool, error) {
	ob := f.ob
	if r := f.run; r != nil && equality.Semantic.DeepEqual(r.spec, *np) {
		if r.released {
			return true, nil
		}
		f.pending = generation
		return false, nil
	}
	p, err := newPool(ob.cfg, ob.scheme, ob.l, sel, o)
	if err != nil {
		return false, err
	}
	p.held = true
	f.stopPool()
	pctx, cancel := context.WithCancel(ctx)
	r := &poolRun{spec: *np.DeepCopy(), p: p, cancel: cancel}
	p.readFailed = func(err error) { f.poolFailed(r, err) }
	f.run, f.pending = r, generation
	f.pools.Add(2)
	go func() {
		defer f.pools.Done()
		if err := p.Start(pctx); err != nil && pctx.Err() == nil {
			log.FromContext(ctx).Error(err, "the SliceBudget's node pool stopped", "budget", ob.name)
		}
	}()
	go func() {
		defer f.pools.Done()
		if !toolscache.WaitForCacheSync(pctx.Done(), r.ready) {
			return
		}
		f.applyMu.Lock()
		defer f.applyMu.Unlock()
		if f.run != r || pctx.Err() != nil {
			return // replaced or stopped meanwhile
		}
		f.releasePool(r)
	}()
	return false, nil
}

// poolFailed closes the budget while r's pool, not read yet, cannot be
// read: the spec asks for the nodes' capacity, which is not known, so the
// budget admits nothing new (and revokes nothing) rather than go on with
// a capacity the spec no longer names; its classes' slices and its Ready
// condition say why (a 403 names the verb and resource refused). The
// pool's informer keeps trying: once it reads the pool (the manager given
// the rights, say), releasePool opens the budget, with no restart.
func (f *objectFollower) poolFailed(r *poolRun, err error) {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	if f.run != r || r.released {
		return // replaced, or read: its informer's errors are logged only
	}
	cause := "cannot read the node pool: " + readCause(err)
	if apierrors.IsForbidden(err) {
		what := "nodes"
		if r.spec.LocalPods {
			what = "nodes and pods"
		}
		cause += " (the manager needs list and watch on " + what + ")"
	}
	if r.failed == cause {
		return
	}
	r.failed = cause
	ob := f.ob
	ob.l.SetClosed(fmt.Sprintf("SliceBudget %q: %s: admits nothing new", ob.name, cause))
	ob.l.SetUndecided("")
	ob.setApplied(applied{read: true, generation: f.pending, reason: reasonPoolUnreadable, message: cause})
}

// ready reports whether r's pool has read every node (and pod) into its
// books.
func (r *poolRun) ready() bool {
	r.p.mu.Lock()
	handled := r.p.handled
	r.p.mu.Unlock()
	if len(handled) == 0 {
		return false
	}
	for _, synced := range handled {
		if !synced() {
			return false
		}
	}
	return true
}

// releasePool gives the ledger r's total, and from now on each change of
// it, and finishes applying the spec that waited for it. The caller holds
// applyMu.
func (f *objectFollower) releasePool(r *poolRun) {
	ob := f.ob
	r.p.mu.Lock()
	r.p.held = false
	total := r.p.totalLocked()
	r.p.mu.Unlock()
	r.released = true
	ob.pool.Store(r.p)
	// A pool names at least one resource, none negative: SetLimits cannot
	// refuse its total.
	_ = ob.l.SetLimits(total)
	f.finish(f.pending)
}

// stopPool stops the pool running, if any. The caller holds applyMu.
func (f *objectFollower) stopPool() {
	if f.run != nil {
		f.run.stop()
		f.run = nil
		f.ob.pool.Store(nil)
	}
}
