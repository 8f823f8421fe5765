package ledger

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Eviction, the one way a budget takes capacity from running pods.
//
// Without Options.EvictionAfter nothing here runs: a shrunk slice's pods
// run on, and what they use stays held until they end. With it, a slice
// that has been shrunk (by a reclaim, its consumer's limit or a pool that
// fell) for EvictionAfter and whose running pods still use more than it
// keeps has pods named for deletion, the newest first, skipping a pod
// that charges none of the resources still over, until the rest fit.

// evictRetry is how long a pod named for eviction is left to go before it
// is named again (its deletion failed, or it is still terminating).
const evictRetry = 30 * time.Second

// Eviction is a running ShadowPod to delete: its slice has used more than
// it keeps for at least EvictionAfter since it was shrunk.
type Eviction struct {
	Pod    types.NamespacedName
	PodUID types.UID
	// Charge is what the pod is charged.
	Charge corev1.ResourceList
	// Slice is the shrunk slice whose Quota's user created the pod.
	Slice    types.NamespacedName
	SliceUID types.UID
	// Message says why: what the slice keeps, what its pods use, and for
	// how long.
	Message string
}

// EvictionAfter is the ledger's Options.EvictionAfter, as SetEvictionAfter
// last set it.
func (l *Ledger) EvictionAfter() time.Duration {
	l.lock()
	defer l.unlock()
	return l.opts.EvictionAfter
}

// EvictionsDue returns the pods to delete at now, and marks them as being
// evicted: each is named once, and again only if it is still running
// evictRetry later. It returns nothing without Options.EvictionAfter.
func (l *Ledger) EvictionsDue(now time.Time) []Eviction {
	l.lock()
	defer l.unlock()
	after := l.opts.EvictionAfter
	if after <= 0 {
		return nil
	}
	var out []Eviction
	for key := range l.cappedKeys {
		e := l.books.slices[key]
		if e == nil || e.capped == nil {
			delete(l.cappedKeys, key) // uncapped or gone since
			continue
		}
		if now.Sub(e.capped.since) < after {
			continue
		}
		over := l.overKeepLocked(e, now)
		if len(over) == 0 {
			continue
		}
		for _, pk := range l.newestPodsLocked(e, now) {
			p := l.books.pods[pk]
			if !takesFrom(over, p.charge) {
				continue
			}
			l.evicting[pk] = now
			out = append(out, Eviction{
				Pod: pk, PodUID: p.meta.UID, Charge: p.charge.DeepCopy(), Slice: key, SliceUID: e.uid,
				Message: fmt.Sprintf("budget %s: slice %s keeps %s and its pods used %s for %s after it was shrunk: evicting the newest",
					l.name, key, Amounts(e.capped.keep), Amounts(e.inUse), now.Sub(e.capped.since).Round(time.Second)),
			})
			if len(over) == 0 {
				break
			}
		}
	}
	return out
}

// overKeepLocked is what e's running pods use beyond what it keeps, per
// resource it keeps, net of the pods already being evicted.
func (l *Ledger) overKeepLocked(e *entry, now time.Time) corev1.ResourceList {
	over := corev1.ResourceList{}
	for n, keep := range e.capped.keep {
		o := e.inUse[n].DeepCopy()
		o.Sub(keep)
		if o.Sign() > 0 {
			over[n] = o
		}
	}
	if len(over) == 0 {
		return nil
	}
	for _, pk := range l.books.podsOf(e) {
		if at, ok := l.evicting[pk]; ok && now.Sub(at) < evictRetry {
			takesFrom(over, l.books.pods[pk].charge)
		}
	}
	return over
}

// newestPodsLocked are e's pods not being evicted, the newest first (then
// by namespace and name).
func (l *Ledger) newestPodsLocked(e *entry, now time.Time) []types.NamespacedName {
	all := l.books.podsOf(e)
	out := all[:0]
	for _, pk := range all {
		if at, ok := l.evicting[pk]; !ok || now.Sub(at) >= evictRetry {
			out = append(out, pk)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := l.books.pods[out[i]].meta.Created, l.books.pods[out[j]].meta.Created
		if !a.Equal(b) {
			return a.After(b)
		}
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// noteCappedLocked records that key was capped, for EvictionsDue to walk;
// only a ledger that evicts, or may once its EvictionAfter is set at run
// time, keeps the record.
func (l *Ledger) noteCappedLocked(key types.NamespacedName) {
	if l.opts.EvictionAfter > 0 || l.evictLive {
		l.cappedKeys[key] = struct{}{}
	}
}

// takesFrom lowers over by charge on each resource still over (a resource
// no longer over leaves it) and reports whether charge took from any.
func takesFrom(over, charge corev1.ResourceList) bool {
	took := false
	for n, o := range over {
		c, ok := charge[n]
		if !ok || c.Sign() <= 0 {
			continue
		}
		o.Sub(c)
		if o.Sign() <= 0 {
			delete(over, n)
		} else {
			over[n] = o
		}
		took = true
	}
	return took
}
