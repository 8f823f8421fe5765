package resourceslice

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// retries counts consecutive handler failures per slice and says when
// WithMaxRetries gives up on one, and when a slice given up on is tried
// again: on a change to the slice, after the resync period, or after a
// WithWatch pass (a new epoch).
type retries struct {
	max    int
	resync time.Duration

	mu       sync.Mutex
	epoch    int
	failures map[types.NamespacedName]*failure
}

type failure struct {
	count  int
	gaveUp bool
	rv     string
	at     time.Time
	epoch  int
}

func newRetries(maxRetries int, resync time.Duration) *retries {
	return &retries{max: maxRetries, resync: resync, failures: map[types.NamespacedName]*failure{}}
}

// skip reports whether key is a slice given up on with nothing new since:
// the same resourceVersion, no resync period elapsed, no pass.
func (t *retries) skip(key types.NamespacedName, rv string) bool {
	if t.max == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.failures[key]
	if f == nil || !f.gaveUp {
		return false
	}
	resynced := t.resync > 0 && time.Since(f.at) >= t.resync
	if f.rv == rv && !resynced && f.epoch == t.epoch {
		return true
	}
	delete(t.failures, key)
	return false
}

// fail counts a handler failure; it reports whether to give up now.
func (t *retries) fail(key types.NamespacedName, rv string) bool {
	if t.max == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.failures[key]
	if f == nil {
		f = &failure{}
		t.failures[key] = f
	}
	f.count++
	if f.count < t.max {
		return false
	}
	f.gaveUp, f.rv, f.at, f.epoch = true, rv, time.Now(), t.epoch
	return true
}

// forget clears key's failures: it succeeded, or is gone or not ours.
func (t *retries) forget(key types.NamespacedName) {
	if t.max == 0 {
		return
	}
	t.mu.Lock()
	delete(t.failures, key)
	t.mu.Unlock()
}

// newEpoch lets every slice given up on be tried again (a WithWatch pass).
func (t *retries) newEpoch() {
	t.mu.Lock()
	t.epoch++
	t.mu.Unlock()
}

// currentEpoch is the number of WithWatch passes so far.
func (t *retries) currentEpoch() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.epoch
}
