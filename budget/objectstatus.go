package budget

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/internal/budgethook"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

// The status of a SliceBudget, written by the leader: every statusEvery
// the writer computes the status from the ledger's snapshot and the spec
// last applied, and patches it only when it differs from what the object
// shows (and from its own last write, which the cache may not show yet).
// So a budget whose slices change writes about once a second, and one at
// rest writes nothing.

// statusEvery is how often the status is computed: at most one write each.
const statusEvery = time.Second

// statusWriter writes a SliceBudget's status from the leader.
type statusWriter struct {
	ob *objectBudget
	// mu serializes the writes of Start's ticks and of WriteStatus, and
	// guards last and lastRV.
	mu sync.Mutex
	// last is the status last written, and the resourceVersion the write
	// made: until the cache shows that version, it is what the object has.
	last   *v1alpha1.SliceBudgetStatus
	lastRV string
	// failing is the last write error logged, until a write succeeds.
	failing string
}

var _ budgethook.StatusWriter = (*statusWriter)(nil)

// NeedLeaderElection implements manager.LeaderElectionRunnable: the status
// is the leader's, whose ledger counts the slices.
func (*statusWriter) NeedLeaderElection() bool { return true }

// WriteStatus implements budgethook.StatusWriter: the unit-test harness
// writes the status when a test reads it.
func (w *statusWriter) WriteStatus(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sync(ctx)
}

// Start implements manager.Runnable: it writes the status every
// statusEvery, when it changed, until ctx ends.
func (w *statusWriter) Start(ctx context.Context) error {
	t := time.NewTicker(statusEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		w.mu.Lock()
		err := w.sync(ctx)
		w.mu.Unlock()
		switch {
		case ctx.Err() != nil:
		case err != nil && err.Error() != w.failing:
			// Logged once per cause, not every second.
			log.FromContext(ctx).Error(err, "cannot write the SliceBudget's status; retrying every second", "budget", w.ob.name)
			w.failing = err.Error()
		case err == nil && w.failing != "":
			log.FromContext(ctx).Info("the SliceBudget's status is written again", "budget", w.ob.name)
			w.failing = ""
		}
	}
}

// sync writes the status if it changed. The caller holds mu.
func (w *statusWriter) sync(ctx context.Context) error {
	ob := w.ob
	a := ob.getApplied()
	if a.reason == "" || a.unserved {
		return nil // the follower has not read the object yet, or cannot
	}
	var sb v1alpha1.SliceBudget
	if err := ob.cache.Get(ctx, client.ObjectKey{Name: ob.name}, &sb); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // nothing to write to; waiting slices say why
		}
		return err
	}
	snap := ob.l.Snapshot()
	var co cohortView
	if snap.Cohort != "" {
		var others []memberFigures
		for _, l := range ob.members(snap.Cohort) {
			if l != ob.l {
				others = append(others, figuresOf(l))
			}
		}
		borrowing, _, _ := ob.l.CohortTerms()
		co = viewOf(snap.Cohort, memberFigures{name: ob.name, total: snap.Total, used: snap.Used, borrowing: borrowing}, others)
	}
	desired := desiredStatus(&sb, a, snap, co, time.Now())
	if !snap.Counted && a.ok {
		keepFigures(&desired, sb.Status) // never figures from books not yet counted
	}
	desired.ConsumerLimits = limitsInForce(ob.l.ConsumerLimits(), snap, sb.Status.ConsumerLimits)
	if equality.Semantic.DeepEqual(sb.Status, desired) {
		return nil
	}
	if w.last != nil && equality.Semantic.DeepEqual(*w.last, desired) && !cacheCaughtUp(sb.ResourceVersion, w.lastRV) {
		return nil // written already; the cache does not show it yet
	}
	obj := sb.DeepCopy()
	obj.Status = desired
	data, err := statusPatch(&sb, obj)
	if err != nil {
		return err
	}
	if err := ob.client.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, data)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // the cache was behind, or the object went: next time
		}
		return fmt.Errorf("patching SliceBudget %q's status: %w", ob.name, err)
	}
	w.last, w.lastRV = desired.DeepCopy(), obj.ResourceVersion
	// The patch carried the resourceVersion it was computed from: the
	// condition turned True on the object with it, once per begin, whatever
	// the writes while it lasts and whichever replica leads.
	if below := meta.FindStatusCondition(desired.Conditions, conditionCapacityBelowUsed); below != nil &&
		below.Status == metav1.ConditionTrue && !meta.IsStatusConditionTrue(sb.Status.Conditions, conditionCapacityBelowUsed) {
		ob.event(corev1.EventTypeWarning, eventCapacityBelow, actionFollowCapacity, "budget %s: %s", ob.name, below.Message)
	}
	return nil
}

// keepFigures puts back into desired the figures the object shows: the
// books they would come from are not counted yet (a new leader whose feed
// has not delivered its initial lists, or one that restarted), and would
// show a budget holding nothing. Only the Ready condition,
// observedGeneration and cohortMembers (the manager's, not the books')
// are written until the books are counted (desiredStatus leaves the
// CapacityBelowUsed condition as shown).
func keepFigures(desired *v1alpha1.SliceBudgetStatus, shown v1alpha1.SliceBudgetStatus) {
	desired.Capacity, desired.Used, desired.InUse = shown.Capacity, shown.Used, shown.InUse
	desired.Reclaiming, desired.Available, desired.Fullest = shown.Reclaiming, shown.Available, shown.Fullest
	desired.Borrowed, desired.Lent = shown.Borrowed, shown.Lent
	desired.Accepted, desired.Waiting, desired.Consumers = shown.Accepted, shown.Waiting, shown.Consumers
}

// cacheCaughtUp reports whether the cached version rv is at least the
// version written.
func cacheCaughtUp(rv, written string) bool {
	c, err := resourceversion.CompareResourceVersion(rv, written)
	return err != nil || c >= 0
}

// statusPatch is a JSON merge patch from base to obj, carrying base's
// resourceVersion (the conditions and consumers lists are replaced whole,
// so a patch from a stale base must fail), and accepted and waiting even
// when 0, which the diff leaves out when base has them unset.
func statusPatch(base, obj *v1alpha1.SliceBudget) ([]byte, error) {
	data, err := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}).Data(obj)
	if err != nil {
		return nil, fmt.Errorf("computing SliceBudget %q's status patch: %w", base.Name, err)
	}
	var patch map[string]any
	if err := json.Unmarshal(data, &patch); err != nil {
		return nil, fmt.Errorf("computing SliceBudget %q's status patch: %w", base.Name, err)
	}
	status, _ := patch["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
	}
	status["accepted"], status["waiting"] = obj.Status.Accepted, obj.Status.Waiting
	patch["status"] = status
	return json.Marshal(patch)
}

// desiredStatus is the status sb should show: the ledger's figures, the
// fullest resource, the largest consumers, the members of its cohort
// (co, what the manager serving it serves there), the Ready condition of
// the spec last read (its transition time kept when its status did not
// change) and, once the books are counted, the CapacityBelowUsed
// condition.
func desiredStatus(sb *v1alpha1.SliceBudget, a applied, snap ledger.Snapshot, co cohortView, now time.Time) v1alpha1.SliceBudgetStatus {
	st := v1alpha1.SliceBudgetStatus{
		Accepted: int32(min(snap.Accepted, 1<<31-1)), Waiting: int32(min(snap.Waiting, 1<<31-1)),
		ObservedGeneration: a.generation,
		Conditions:         append([]metav1.Condition(nil), sb.Status.Conditions...),
	}
	if a.ok {
		st.Capacity, st.Used, st.InUse, st.Reclaiming, st.Available = snap.Total, snap.Used, snap.InUse, snap.Reclaiming, snap.Free
		st.Fullest = fullest(snap.Total, snap.Used)
		if snap.Cohort != "" {
			st.Borrowed, st.Lent = snap.Borrowed, snap.Lent
			st.CohortMembers = co.members
			if len(st.CohortMembers) == 0 { // not listed by the manager yet
				st.CohortMembers = []string{sb.Name}
			}
		}
		for _, c := range snap.Consumers {
			if len(st.Consumers) == v1alpha1.MaxConsumers {
				break
			}
			if c.Name == "" {
				continue
			}
			st.Consumers = append(st.Consumers, v1alpha1.ConsumerStatus{Name: c.Name, Used: c.Used, Waiting: int32(min(c.Waiting, 1<<31-1))})
		}
	}
	ready := metav1.Condition{Type: conditionReady, Status: metav1.ConditionTrue, Reason: reasonApplied, Message: a.message,
		ObservedGeneration: a.generation, LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}
	switch {
	case !a.ok:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, a.reason, a.message+": the budget admits nothing new"
	case a.reason != reasonApplied:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, a.reason, a.message+": the last spec applied stays in force"
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	if a.ok && snap.Counted {
		reason, message := reasonWithinCapacity, ""
		if short := belowUsed(snap.Total, snap.Used); snap.Cohort == "" && len(short) > 0 {
			reason = reasonUsedExceedsCapacity
			message = "capacity is below what the slices hold (" + strings.Join(short, ", ") +
				"): nothing new is admitted until they hold less; with spec.preemption.withinBudget LowerPriority the lowest priorities are shrunk"
		}
		// A member of a cohort holding more than its capacity is
		// borrowing (status.borrowed), not short of capacity: it is over
		// only beyond its borrowing limit, or with its cohort beyond the
		// members' totals.
		if snap.Cohort != "" && len(co.over) > 0 {
			reason, message = reasonCohortOverCommitted, overMessage(co.over)
		}
		setCapacityBelowUsed(&st.Conditions, reason, message, a.generation, now)
	}
	return st
}

// belowUsed describes each resource whose capacity is below what the
// slices hold ("cpu 12 held of 8"), in name order; none when none is.
func belowUsed(capacity, used corev1.ResourceList) []string {
	var short []string
	for _, n := range sortedResourceNames(capacity) {
		c, u := capacity[n], used[n]
		if u.Cmp(c) > 0 {
			short = append(short, fmt.Sprintf("%s %s held of %s", n, u.String(), c.String()))
		}
	}
	return short
}

// setCapacityBelowUsed sets the CapacityBelowUsed condition: True with
// reason and message, or False for reasonWithinCapacity. Writes follow the
// state, not the figures: while the condition's status and reason hold,
// it is left as it is (its message keeps the figures of when it began),
// only its observedGeneration follows the spec's.
func setCapacityBelowUsed(conds *[]metav1.Condition, reason, message string, generation int64, now time.Time) {
	c := metav1.Condition{Type: conditionCapacityBelowUsed, Status: metav1.ConditionFalse, Reason: reasonWithinCapacity,
		Message: "the slices hold no more than the capacity", ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}
	if reason != reasonWithinCapacity {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, reason, message
	}
	if shown := meta.FindStatusCondition(*conds, conditionCapacityBelowUsed); shown != nil && shown.Status == c.Status && shown.Reason == c.Reason {
		shown.ObservedGeneration = generation
		return
	}
	meta.SetStatusCondition(conds, c)
}

// fullest is the resource of capacity of which used holds the largest
// share (v1alpha1.SliceBudgetStatus.Fullest), nil when capacity names
// none.
func fullest(capacity, used corev1.ResourceList) *v1alpha1.Fullness {
	var best *v1alpha1.Fullness
	var firstZero corev1.ResourceName
	for _, n := range sortedResourceNames(capacity) {
		c, u := capacity[n], used[n]
		var pct int32
		switch {
		case c.Sign() > 0:
			pct = percentOf(u, c)
		case u.Sign() > 0:
			pct = v1alpha1.MaxFullPercent
		default:
			// Offered at 0 and held by none: it admits none by design,
			// and would otherwise always be the fullest.
			if firstZero == "" {
				firstZero = n
			}
			continue
		}
		if best == nil || pct > best.Percent {
			best = &v1alpha1.Fullness{Resource: n, Percent: pct}
		}
	}
	if best == nil && firstZero != "" {
		best = &v1alpha1.Fullness{Resource: firstZero, Percent: 100}
	}
	return best
}

// percentOf is 100·used/capacity rounded down, within [0,
// v1alpha1.MaxFullPercent]; capacity is positive. It is exact decimal
// arithmetic: a float would show 29% of 100 as 28.
func percentOf(used, capacity resource.Quantity) int32 {
	num := new(inf.Dec).Mul(used.AsDec(), inf.NewDec(100, 0))
	q := new(inf.Dec).QuoRound(num, capacity.AsDec(), 0, inf.RoundDown)
	switch {
	case q.Sign() <= 0:
		return 0
	case q.Cmp(inf.NewDec(v1alpha1.MaxFullPercent, 0)) >= 0:
		return v1alpha1.MaxFullPercent
	}
	return int32(q.UnscaledBig().Int64())
}

func sortedResourceNames(rl corev1.ResourceList) []corev1.ResourceName {
	return slices.Sorted(maps.Keys(rl))
}
