package budget

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/internal/budgethook"
	"github.com/sliceclass/sliceclass/internal/cohorts"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

// A budget declared as an object: FromObject follows a SliceBudget (its
// spec, read through the manager's cache, on every replica) and writes its
// status (on the leader, see objectstatus.go).

// FromObject returns a Budget that follows the cluster-scoped SliceBudget
// called name, live: its spec.total (the resources it names are the ones
// the budget limits), preemption, evictionAfterSeconds, consumerLimit and
// consumerLimits take effect within a second of an edit, with no restart,
// by the rules of SetTotal and SetConsumerLimit (a smaller total admits
// nothing new and revokes nothing, unless preemption shrinks the lowest
// priorities; a consumer limit lowered below what the consumer holds
// shrinks its slices, reason ReasonReclaimed). Use it with
// resourceslice.WithBudget as a budget from New.
//
// What the object says survives restarts and failover: a new leader reads
// it again. SetTotal and SetConsumerLimit on the budget are refused: edit
// the object. A SliceBudget that is missing, or deleted, admits nothing
// new and revokes nothing: its classes' waiting slices say so (`budget x:
// SliceBudget "x" not found: admits nothing new`), and it admits again
// once the object is created. Until the object is first read (the first
// second of the manager), the budget decides nothing: its classes' slices
// are retried, not denied. A SliceBudget that cannot be read stops
// nothing else: with its CRD not installed, or the SliceBudgets not
// listed within seconds (a 403, say), the budget admits nothing new, its
// classes' slices say why (`the SliceBudget CRD
// (slicebudgets.sliceclass.io) is not installed`, `forbidden: cannot list
// slicebudgets.sliceclass.io`), the manager and its other classes run on,
// and the budget follows the object once it can read it.
//
// The leader writes the object's status at most about once a second while
// what it holds changes, and not at all while nothing changes: capacity,
// used, inUse, reclaiming, available, the accepted and waiting counts,
// the largest consumers, a Ready condition and observedGeneration. It
// records events on the object for what an operator acts on: a reclaim
// (one event each, whatever the number of slices shrunk) and a capacity
// that fell below what the slices hold.
//
// Its settings come from the object, so of the options only
// WithOldestFirst (an ObjectOption) applies: WithPreemption,
// WithConsumerLimit, WithEvictionAfter, the cohort's and the node pool's
// do not compile here (set spec.preemption, spec.consumerLimit,
// spec.evictionAfterSeconds, spec.cohort and its limits, spec.nodePool).
//
// A spec.nodePool makes the capacity follow the provider's nodes as
// NewNodePool does, through a cache of the pool's nodes (and, with
// localPods, pods) that FromObject starts and replaces as the spec's pool
// changes: the capacity in force stays until the new pool is read whole.
// The manager's client then needs list and watch on nodes (and pods): a
// pool it cannot read (a 403) closes the budget, revoking nothing, with the
// Ready condition (reason NodePoolUnreadable) and the classes' slices
// naming the verb and resource refused (`forbidden: cannot list nodes`),
// until the pool is read, which opens it with no restart.
//
// The manager's scheme must hold sliceclass.io/v1alpha1
// (v1alpha1.AddToScheme) and the core Nodes and Pods a node pool reads
// (clientgoscheme.AddToScheme), since a spec may name a pool at any time: a
// missing type is an error naming the call to add, and the scheme is never
// changed. The manager's client needs get,
// list and watch on slicebudgets, patch on slicebudgets/status, and create
// and patch on events (events.k8s.io; a repeated event is a patch).
func FromObject(mgr manager.Manager, name string, opts ...ObjectOption) (*Budget, error) {
	if mgr == nil {
		return nil, fmt.Errorf("budget %q: nil manager", name)
	}
	if name == "" {
		return nil, errors.New("budget: empty SliceBudget name")
	}
	o, err := build(opts, ObjectOption.applyToObject)
	if err != nil {
		return nil, fmt.Errorf("budget %q: %w", name, err)
	}
	// A spec may name a node pool, with local pods, at any time.
	scheme := mgr.GetScheme()
	if err := (schemeKinds{sliceBudgets: true, nodes: true, pods: true}).check(scheme); err != nil {
		return nil, fmt.Errorf("budget %q: %w", name, err)
	}
	// The resources it limits are the object's; until it is read the
	// ledger decides nothing.
	l, err := ledger.New(name, corev1.ResourceList{corev1.ResourceCPU: resource.Quantity{}}, ledger.Options{OldestFirst: o.oldestFirst})
	if err != nil {
		return nil, err
	}
	ob := &objectBudget{
		name: name, l: l, cache: mgr.GetCache(), client: mgr.GetClient(), reader: mgr.GetAPIReader(), cfg: mgr.GetConfig(), scheme: scheme,
		recorder: func() events.EventRecorder { return mgr.GetEventRecorder(recorderName) },
		members:  func(cohort string) []*ledger.Ledger { return cohorts.Members(mgr, cohort) },
		read:     make(chan struct{}),
	}
	l.SetUndecided(fmt.Sprintf("SliceBudget %q not read yet", name))
	l.FollowEvictionAfter()
	l.SetReclaimHook(ob.reclaimed)
	if err := mgr.Add(&objectFollower{ob: ob}); err != nil {
		return nil, fmt.Errorf("budget %q: adding its SliceBudget's follower to the manager: %w", name, err)
	}
	if err := mgr.Add(&statusWriter{ob: ob}); err != nil {
		return nil, fmt.Errorf("budget %q: adding its SliceBudget's status writer to the manager: %w", name, err)
	}
	return &Budget{ledgerHandle: ledger.NewHandle(l), l: l, object: ob}, nil
}

// recorderName is the reporting controller of a SliceBudget's events.
const recorderName = "sliceclass-budget"

// The SliceBudget's Ready condition, and its reasons: the spec is
// applied, or why not.
const (
	conditionReady    = "Ready"
	reasonApplied     = "Applied"
	reasonReadingPool = "ReadingNodePool"
	reasonSpecRefused = "SpecRefused"
	// reasonPoolUnreadable: the node pool of spec.nodePool cannot be read
	// (a 403, say); the budget admits nothing new until it is.
	reasonPoolUnreadable = "NodePoolUnreadable"
	// reasonCRDMissing and reasonUnreadable: the SliceBudget itself cannot
	// be read (its CRD not installed; any other cause). The condition is
	// written only once it can be.
	reasonCRDMissing = "CRDNotInstalled"
	reasonUnreadable = "Unreadable"
)

// The SliceBudget's CapacityBelowUsed condition, True while its capacity
// is below what its slices hold for some resource, and its reasons.
const (
	conditionCapacityBelowUsed = "CapacityBelowUsed"
	reasonUsedExceedsCapacity  = "UsedExceedsCapacity"
	reasonWithinCapacity       = "WithinCapacity"
)

// The reasons and actions of the events on a SliceBudget.
const (
	eventReclaimed       = ReasonReclaimed
	eventCapacityBelow   = conditionCapacityBelowUsed
	actionReclaim        = "Reclaim"
	actionFollowCapacity = "FollowCapacity"
)

// objectBudget is what the follower and the status writer of one
// SliceBudget share.
type objectBudget struct {
	name   string
	l      *ledger.Ledger
	cache  cache.Cache
	client client.Client
	// reader reads from the API server, not the cache: it asks why the
	// SliceBudgets are not listed.
	reader client.Reader
	// recorder gives the recorder of the object's events (guarded by mu).
	recorder func() events.EventRecorder
	// cfg and scheme build a node pool's cache (spec.nodePool); pool is
	// the pool in force, for PinToNodePool.
	cfg    *rest.Config
	scheme *runtime.Scheme
	pool   atomic.Pointer[nodePool]
	// members are the budgets the manager serves in the cohort named, for
	// what the status says of the cohort (objectcohort.go).
	members func(cohort string) []*ledger.Ledger

	mu sync.Mutex
	// applied is what the last spec read made of the ledger, for the
	// status's Ready condition and observedGeneration.
	applied applied
	// rec records events once the follower started.
	rec events.EventRecorder
	// read is closed when the object is first read (applied.read).
	read     chan struct{}
	readOnce sync.Once
}

// applied is the outcome of the last spec read.
type applied struct {
	read bool
	// unserved: the SliceBudgets could not be read at all (applied by
	// unserved, not from an object).
	unserved   bool
	generation int64
	ok         bool
	reason     string
	message    string
}

func (ob *objectBudget) setApplied(a applied) {
	ob.mu.Lock()
	defer ob.mu.Unlock()
	ob.applied = a
	if a.read {
		ob.readOnce.Do(func() { close(ob.read) })
	}
}

func (ob *objectBudget) getApplied() applied {
	ob.mu.Lock()
	defer ob.mu.Unlock()
	return ob.applied
}

// objectFollower keeps the ledger's settings equal to the SliceBudget's
// spec. It runs on every replica, so that a new leader starts from the
// object's settings.
type objectFollower struct {
	ob *objectBudget
	// applyMu serializes what changes the settings: the object's events
	// and a node pool's first read.
	applyMu sync.Mutex
	// run is the node pool followed (spec.nodePool); pending is the
	// generation whose application waits for it to be read.
	run     *poolRun
	pending int64
	// preemption is the last spec's, turned on by finish once its
	// capacity is in force; so are its cohort and its terms there.
	preemption bool
	cohort     string
	borrowing  corev1.ResourceList
	lending    corev1.ResourceList
	reclaim    ledger.ReclaimPolicy
	// pools are the goroutines of the pools started, joined when the
	// follower stops.
	pools sync.WaitGroup
}

var _ budgethook.Follower = (*objectFollower)(nil)

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica follows the object.
func (*objectFollower) NeedLeaderElection() bool { return false }

// UseEventRecorder implements budgethook.Follower: the unit-test harness
// captures the events on the object.
func (f *objectFollower) UseEventRecorder(rec events.EventRecorder) {
	f.ob.mu.Lock()
	defer f.ob.mu.Unlock()
	f.ob.recorder = func() events.EventRecorder { return rec }
}

// SpecRead implements budgethook.Follower.
func (f *objectFollower) SpecRead() <-chan struct{} { return f.ob.read }

// Start implements manager.Runnable: it follows the object until ctx
// ends, and detaches from the informer then. It never stops the manager:
// while the SliceBudgets cannot be read (their CRD not installed, the
// manager not allowed to list them) the budget admits nothing new, with
// the cause in its classes' slices, and it retries; the manager's other
// classes serve meanwhile.
func (f *objectFollower) Start(ctx context.Context) error {
	ob := f.ob
	ob.mu.Lock()
	ob.rec = ob.recorder()
	ob.mu.Unlock()
	defer func() {
		f.applyMu.Lock()
		f.stopPool()
		f.applyMu.Unlock()
		f.pools.Wait()
	}()
	inf := f.informer(ctx)
	if inf == nil {
		return nil // stopped
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { f.seen(ctx, o, false) },
		UpdateFunc: func(_, o any) { f.seen(ctx, o, false) },
		DeleteFunc: func(o any) { f.seen(ctx, o, true) },
	})
	if err != nil {
		return fmt.Errorf("budget %q: watching SliceBudgets: %w", ob.name, err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	if !f.waitRead(ctx, reg.HasSynced) {
		return nil // stopped
	}
	if a := ob.getApplied(); !a.read || a.unserved {
		f.missing()
	}
	<-ctx.Done()
	return nil
}

// How long the follower waits between attempts to watch SliceBudgets
// whose CRD is not installed (doubling from the first to the last), and
// how long it waits for the watch to list them before it asks the API
// server why not.
const (
	firstRetry = time.Second
	lastRetry  = 10 * time.Second
	readGrace  = 3 * time.Second
)

// informer returns the manager's informer of SliceBudgets, trying again
// while the API server serves no SliceBudgets (the CRD not installed),
// with the budget closed meanwhile; nil when ctx ends first.
func (f *objectFollower) informer(ctx context.Context) cache.Informer {
	wait := firstRetry
	for {
		inf, err := f.ob.cache.GetInformer(ctx, &v1alpha1.SliceBudget{}, cache.BlockUntilSynced(false))
		if err == nil {
			return inf
		}
		if ctx.Err() != nil {
			return nil
		}
		reason, cause := reasonUnreadable, "watching SliceBudgets: "+err.Error()
		if meta.IsNoMatchError(err) {
			reason, cause = reasonCRDMissing, crdMissing
		}
		f.unserved(ctx, reason, cause)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		wait = min(2*wait, lastRetry)
	}
}

// waitRead waits until the informer has listed the SliceBudgets (synced).
// If it has not after readGrace, it asks the API server why, with one
// list of one object, and closes the budget with the answer (a 403 names
// the verb and resource refused); it keeps waiting. false when ctx ends.
func (f *objectFollower) waitRead(ctx context.Context, synced func() bool) bool {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	grace := time.NewTimer(readGrace)
	defer grace.Stop()
	for !synced() {
		select {
		case <-ctx.Done():
			return false
		case <-grace.C:
			var list v1alpha1.SliceBudgetList
			err := f.ob.reader.List(ctx, &list, client.Limit(1))
			switch {
			case err == nil || ctx.Err() != nil:
			case meta.IsNoMatchError(err) || apierrors.IsNotFound(err): // the CRD went
				f.unserved(ctx, reasonCRDMissing, crdMissing)
			default:
				f.unserved(ctx, reasonUnreadable, "cannot read SliceBudgets: "+readCause(err))
			}
		case <-tick.C:
		}
	}
	return true
}

// unserved closes the budget because its SliceBudget cannot be read at
// all, for cause; logged once per cause.
func (f *objectFollower) unserved(ctx context.Context, reason, cause string) {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	ob := f.ob
	if a := ob.getApplied(); a.unserved && a.message == cause {
		return
	}
	log.FromContext(ctx).Info("cannot follow the SliceBudget: its budget admits nothing new until it can", "budget", ob.name, "cause", cause)
	ob.l.SetClosed(fmt.Sprintf("SliceBudget %q: %s: admits nothing new", ob.name, cause))
	ob.l.SetUndecided("")
	ob.setApplied(applied{read: true, unserved: true, reason: reason, message: cause})
}

// crdMissing says that the API server serves no SliceBudgets.
const crdMissing = "the SliceBudget CRD (slicebudgets.sliceclass.io) is not installed"

// readCause says why a read failed, briefly: a refusal by the API
// server's authorizer as "forbidden: cannot <verb> <resource>[.<group>]"
// (what a role must grant), anything else as the error says.
func readCause(err error) string {
	if !apierrors.IsForbidden(err) {
		return err.Error()
	}
	msg := err.Error()
	// The RBAC authorizer's words: ... cannot list resource "nodes" in API group "" ...
	_, rest, ok := strings.Cut(msg, " cannot ")
	if !ok {
		return "forbidden: " + msg
	}
	verb, rest, _ := strings.Cut(rest, " resource \"")
	res, rest, ok := strings.Cut(rest, "\"")
	if !ok || verb == "" || strings.Contains(verb, " ") {
		return "forbidden: " + msg
	}
	if _, g, ok := strings.Cut(rest, "in API group \""); ok {
		if group, _, _ := strings.Cut(g, "\""); group != "" {
			res += "." + group
		}
	}
	return fmt.Sprintf("forbidden: cannot %s %s", verb, res)
}

// seen applies the object o, or closes the budget if it is gone.
func (f *objectFollower) seen(ctx context.Context, o any, gone bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o, gone = t.Obj, true
	}
	sb, ok := o.(*v1alpha1.SliceBudget)
	if !ok || sb.Name != f.ob.name {
		return
	}
	if gone {
		f.missing()
		return
	}
	f.apply(ctx, sb)
}

// missing closes the budget: no object says what it offers.
func (f *objectFollower) missing() {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	ob := f.ob
	f.stopPool()
	ob.l.SetClosed(fmt.Sprintf("SliceBudget %q not found: admits nothing new", ob.name))
	ob.l.SetUndecided("")
	ob.setApplied(applied{read: true})
}

// apply makes the ledger follow sb's spec. A spec the budget cannot follow
// leaves the last one applied in force (none: closed), and the Ready
// condition says why.
func (f *objectFollower) apply(ctx context.Context, sb *v1alpha1.SliceBudget) {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	ob := f.ob
	spec := &sb.Spec
	prev := ob.getApplied()
	if prev.reason != "" && prev.generation == sb.Generation {
		return // the same spec (a status write, say): nothing to apply
	}
	refuse := func(reason, msg string) {
		if !prev.ok {
			ob.l.SetClosed(fmt.Sprintf("SliceBudget %q: %s: admits nothing new", ob.name, msg))
			ob.l.SetUndecided("")
		}
		log.FromContext(ctx).Info("SliceBudget spec not applied", "budget", ob.name, "generation", sb.Generation, "reason", msg)
		ob.setApplied(applied{read: true, generation: sb.Generation, ok: prev.ok, reason: reason, message: msg})
	}
	// Everything is checked before anything is applied.
	var sel labels.Selector
	var pool options
	switch {
	case spec.NodePool != nil && len(spec.Total) > 0:
		refuse(reasonSpecRefused, "spec.total and spec.nodePool are both set: set one")
		return
	case spec.NodePool != nil:
		var err error
		if sel, pool, err = poolOptions(spec.NodePool); err != nil {
			refuse(reasonSpecRefused, err.Error())
			return
		}
	case len(spec.Total) == 0:
		refuse(reasonSpecRefused, "spec.total names no resource")
		return
	}
	overrides := make(map[string]corev1.ResourceList, len(spec.ConsumerLimits))
	for _, o := range spec.ConsumerLimits {
		if _, dup := overrides[o.Consumer]; dup {
			// The API server refuses it (listType=map): only an object
			// written around it gets here.
			refuse(reasonSpecRefused, fmt.Sprintf("spec.consumerLimits names consumer %q twice", o.Consumer))
			return
		}
		overrides[o.Consumer] = o.Limits.ResourceList()
	}
	if err := ledger.CheckSettings(spec.Total.ResourceList(), spec.ConsumerLimit.ResourceList(), overrides); err != nil {
		refuse(reasonSpecRefused, err.Error())
		return
	}
	var evictAfter time.Duration // none
	if n := spec.EvictionAfterSeconds; n != nil {
		if *n < 0 {
			// The API server refuses it: only an object written around it
			// gets here.
			refuse(reasonSpecRefused, fmt.Sprintf("spec.evictionAfterSeconds is %d: it must not be negative", *n))
			return
		}
		evictAfter = evictionAfter(*n)
	}
	reclaim := ledger.ReclaimNever
	if spec.Preemption != nil && spec.Preemption.ReclaimWithinCohort != "" {
		reclaim = ledger.ReclaimPolicy(spec.Preemption.ReclaimWithinCohort)
	}
	if err := cohortTerms(spec, pool, reclaim); err != nil {
		refuse(reasonSpecRefused, err.Error())
		return
	}
	f.cohort, f.borrowing, f.lending, f.reclaim = spec.Cohort, spec.BorrowingLimit.ResourceList(), spec.LendingLimit.ResourceList(), reclaim
	preemption := spec.Preemption != nil && spec.Preemption.WithinBudget == v1alpha1.PreemptionLowerPriority
	// One edit is one change: preemption turned off goes before the
	// capacity, so that a smaller total revokes nothing on the way; turned
	// on, it goes after (finish), so that only the new total can reclaim
	// (before it, the old total once reclaimed what the new one covers,
	// and a false Warning said so).
	if !preemption {
		ob.l.SetPreemption(false)
	}
	f.preemption = preemption
	// CheckSettings accepted them: these cannot fail.
	_ = ob.l.SetConsumerLimits(spec.ConsumerLimit.ResourceList(), overrides)
	logUnknownConsumers(ctx, ob.name, ob.l.Snapshot(), overrides)
	ob.l.SetEvictionAfter(evictAfter)
	if spec.NodePool != nil {
		ready, err := f.followPool(ctx, spec.NodePool, sel, pool, sb.Generation)
		switch {
		case err != nil:
			refuse(reasonSpecRefused, err.Error())
		case ready:
			f.finish(sb.Generation)
		case f.run.failed != "":
			// The pool followed still cannot be read: the budget stays
			// closed, saying why.
			ob.setApplied(applied{read: true, generation: sb.Generation, reason: reasonPoolUnreadable, message: f.run.failed})
		default:
			// The capacity in force stays until the pool is read, or found
			// unreadable (poolFailed); a budget with none decides nothing
			// meanwhile.
			if !prev.ok {
				ob.l.SetUndecided(fmt.Sprintf("SliceBudget %q: reading its node pool", ob.name))
			}
			ob.setApplied(applied{read: true, generation: sb.Generation, ok: prev.ok, reason: reasonReadingPool,
				message: "reading the node pool's nodes"})
		}
		return
	}
	f.stopPool()
	_ = ob.l.SetLimits(spec.Total.ResourceList())
	f.finish(sb.Generation)
}

// cohortTerms refuses cohort terms without a cohort, and terms the
// budget's capacity cannot hold (a limit of a resource it does not limit):
// the API server refuses them, so only an object written around it gets
// here. A lending limit above the total is not refused: it lends all. pool is the spec's node pool
// options, when it has one.
func cohortTerms(spec *v1alpha1.SliceBudgetSpec, pool options, reclaim ledger.ReclaimPolicy) error {
	if spec.Cohort == "" && (len(spec.BorrowingLimit) > 0 || len(spec.LendingLimit) > 0 || reclaim != ledger.ReclaimNever) {
		return errors.New("spec.borrowingLimit, spec.lendingLimit and spec.preemption.reclaimWithinCohort need a cohort: set spec.cohort")
	}
	total := spec.Total.ResourceList()
	if spec.NodePool != nil {
		total = corev1.ResourceList{}
		names := pool.resources
		if names == nil {
			names = defaultPoolResources
		}
		for _, n := range names {
			total[n] = resource.Quantity{}
		}
	}
	// A lending limit above the total lends all of it (the ledger clamps
	// it), for a fixed total as for a pool's moving one: checked against
	// itself, only its resources and signs are refused.
	lending := spec.LendingLimit.ResourceList()
	for n := range lending {
		if _, ok := total[n]; ok {
			total[n] = lending[n]
		}
	}
	if err := ledger.CheckCohortTerms(total, spec.BorrowingLimit.ResourceList(), lending, reclaim); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	return nil
}

// evictionAfter is the ledger's EvictionAfter for a spec's
// evictionAfterSeconds: that many seconds, and for 0 the least delay the
// ledger counts as one (it takes 0 as none), so that a shrunk slice's pods
// are evicted as soon as they are seen using more than it keeps. seconds
// is not negative (apply refuses it).
func evictionAfter(seconds int32) time.Duration {
	if seconds == 0 {
		return time.Nanosecond
	}
	return time.Duration(seconds) * time.Second
}

// finish opens the budget by the spec of generation, applied, its
// capacity in force: preemption is turned on (if the spec says so) only
// now. The caller holds applyMu.
func (f *objectFollower) finish(generation int64) {
	ob := f.ob
	ob.l.SetPreemption(f.preemption)
	// cohortTerms accepted them, against the resources the capacity
	// limits: this cannot fail.
	_ = ob.l.SetCohortTerms(f.borrowing, f.lending, f.reclaim)
	ob.l.SetCohortName(f.cohort)
	ob.l.SetClosed("")
	ob.l.SetUndecided("")
	ob.setApplied(applied{read: true, generation: generation, ok: true, reason: reasonApplied,
		message: "spec applied: the budget admits by it"})
}

// reclaimed records a reclaim as one Warning event on the object. It is the
// ledger's reclaim hook, called without the ledger's lock.
func (ob *objectBudget) reclaimed(r ledger.Reclaim) {
	ob.event(corev1.EventTypeWarning, eventReclaimed, actionReclaim, "budget %s %s", ob.name, r.String())
}

// event records an event on the SliceBudget, as the cache shows it; none
// when the object is gone or the follower did not start.
func (ob *objectBudget) event(eventType, reason, action, note string, args ...any) {
	ob.mu.Lock()
	rec := ob.rec
	ob.mu.Unlock()
	if rec == nil {
		return
	}
	var sb v1alpha1.SliceBudget
	if err := ob.cache.Get(context.Background(), client.ObjectKey{Name: ob.name}, &sb); err != nil {
		return
	}
	sb.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("SliceBudget"))
	rec.Eventf(&sb, nil, eventType, reason, action, note, args...)
}
