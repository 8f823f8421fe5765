package owned

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// What the Applier remembers of its own applies, so that an object whose
// applied content has not changed is not sent again on every reconcile of
// an Accepted slice.
//
// For each slice (by UID) and each object of its set, the memory holds a
// hash of the content last applied and the resourceVersion the API server
// answered that apply with. An apply is skipped only when both still hold:
// the handler's object hashes the same, and the reader (the manager's
// metadata cache) shows the object at that very resourceVersion. An object
// someone deleted is not found, and one someone changed (or whose fields
// another manager took) has another resourceVersion: both are applied
// again. A reader that lags behind the server makes the Applier apply once
// more than needed, never less: the watch on the owned types enqueues the
// slice again when the change arrives.
//
// The memory holds only the current sets of slices the Applier applied for:
// an Apply replaces its slice's entry with the set it was given (what it
// pruned or failed to apply is forgotten), and Remove and Sweep forget the
// slices they remove. It lives as long as the Applier (the class's
// controller); a restart starts with none and applies every set once.

// appliedState is what an apply of one object left on the server.
type appliedState struct {
	// sum hashes the content sent.
	sum [sha256.Size]byte
	// resourceVersion is the object's, in the server's answer.
	resourceVersion string
}

// sliceMemory is what was last applied for one slice.
type sliceMemory struct {
	// key is the slice's namespace and name, to forget it when only those
	// are known (Remove with no UID).
	key  types.NamespacedName
	objs map[Ref]appliedState
}

// memory is the Applier's memory of its applies, by slice UID; safe for
// concurrent use.
type memory struct {
	mu     sync.Mutex
	slices map[types.UID]*sliceMemory
}

func newMemory() *memory {
	return &memory{slices: map[types.UID]*sliceMemory{}}
}

// unchanged reports whether applying content for ref of the slice uid would
// send what the server already holds from the last apply: same hash, and
// the object as read (seen, its resourceVersion; "" when not found) is the
// one that apply left.
func (m *memory) unchanged(uid types.UID, ref Ref, sum [sha256.Size]byte, seen string) bool {
	if seen == "" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.slices[uid]
	if s == nil {
		return false
	}
	last, ok := s.objs[ref]
	return ok && last.sum == sum && last.resourceVersion == seen
}

// replace makes objs what is remembered for the slice uid (key), dropping
// every other object of it; an empty objs forgets the slice.
func (m *memory) replace(uid types.UID, key types.NamespacedName, objs map[Ref]appliedState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(objs) == 0 {
		delete(m.slices, uid)
		return
	}
	m.slices[uid] = &sliceMemory{key: key, objs: objs}
}

// forget drops the slice uid; with uid "", every slice that had key.
func (m *memory) forget(uid types.UID, key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if uid != "" {
		delete(m.slices, uid)
		return
	}
	for u, s := range m.slices {
		if s.key == key {
			delete(m.slices, u)
		}
	}
}

// forgetUnless drops every slice whose UID live does not report.
func (m *memory) forgetUnless(live func(types.UID) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for u := range m.slices {
		if !live(u) {
			delete(m.slices, u)
		}
	}
}

// size is how many objects are remembered, over every slice.
func (m *memory) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.slices {
		n += len(s.objs)
	}
	return n
}

// contentSum hashes the content of u as it is sent: encoding/json writes a
// map's keys sorted, so equal content gives equal bytes.
func contentSum(u *unstructured.Unstructured) ([sha256.Size]byte, error) {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("%w: encoding it: %w", ErrInvalid, err)
	}
	return sha256.Sum256(data), nil
}
