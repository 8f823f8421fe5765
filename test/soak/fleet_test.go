package soak

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"sync"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/sliceconds"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// The classes the soak serves, one policy each (see policies in soak_test.go).
const (
	classGold   = "soak-gold"   // grants what is asked
	classSilver = "soak-silver" // grants up to silverMaxCPU, denies more with reasonTooLarge
	classBronze = "soak-bronze" // grants what is asked (1 CPU) from a budget
)

// soakClasses lists the served classes; slice i is of class i mod 3.
func soakClasses() []string { return []string{classGold, classSilver, classBronze} }

// sliceRecord is what the churn generator knows of a live slice: enough to
// say what its status must end as.
type sliceRecord struct {
	key    types.NamespacedName
	class  string
	cpu    int
	tenant int
	// rev is the last of Liqo's authentication rewrites the server accepted;
	// 0 as created.
	rev int
	// busy is set while a rewrite is in flight, so two rewrites of one
	// slice never race and rev is what the server holds.
	busy bool
}

// tenantRecord is one consumer: its namespace, its Tenant, and the
// condition last written to it.
type tenantRecord struct {
	namespace string
	consumer  string
	condition authv1beta1.TenantCondition
	// downSince orders the tenants that are not Active: the flipper
	// reactivates the one that went down first.
	downSince int
}

// fleet is the churn generator's record of the slices it keeps alive and of
// the tenants, safe for concurrent use.
type fleet struct {
	mu      sync.Mutex
	rng     *rand.Rand
	live    []*sliceRecord
	index   map[types.NamespacedName]int
	tenants []*tenantRecord
	next    int
	flips   int
}

func newFleet(nTenants int, seed int64) *fleet {
	f := &fleet{rng: rand.New(rand.NewSource(seed)), index: map[types.NamespacedName]int{}}
	for i := range nTenants {
		f.tenants = append(f.tenants, &tenantRecord{
			namespace: fmt.Sprintf("soak-tenant-%03d", i),
			consumer:  fmt.Sprintf("consumer-%03d", i),
			condition: authv1beta1.TenantConditionActive,
		})
	}
	return f
}

// reserve describes the next slice to create; it is live once add is called.
func (f *fleet) reserve() *sliceRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.next
	f.next++
	tenant := f.rng.Intn(len(f.tenants))
	class := soakClasses()[i%len(soakClasses())]
	cpu := 1
	if class != classBronze {
		cpu = 1 + f.rng.Intn(4)
	}
	return &sliceRecord{
		key:    types.NamespacedName{Namespace: f.tenants[tenant].namespace, Name: fmt.Sprintf("s-%06d", i)},
		class:  class,
		cpu:    cpu,
		tenant: tenant,
	}
}

func (f *fleet) add(r *sliceRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.index[r.key] = len(f.live)
	f.live = append(f.live, r)
}

// take removes a random live slice from the record and returns it; nil when
// there is none.
func (f *fleet) take() *sliceRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.live) == 0 {
		return nil
	}
	i := f.rng.Intn(len(f.live))
	r := f.live[i]
	last := len(f.live) - 1
	f.live[i] = f.live[last]
	f.index[f.live[i].key] = i
	f.live[last] = nil
	f.live = f.live[:last]
	delete(f.index, r.key)
	return r
}

// pick marks a random live slice busy and returns its key and the rev its
// next Liqo rewrite will carry; false when there is none or it is busy.
func (f *fleet) pick() (types.NamespacedName, int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.live) == 0 {
		return types.NamespacedName{}, 0, false
	}
	r := f.live[f.rng.Intn(len(f.live))]
	if r.busy {
		return types.NamespacedName{}, 0, false
	}
	r.busy = true
	return r.key, r.rev + 1, true
}

// rewritten clears the busy mark of a picked slice and, when ok, records
// that the server accepted Liqo's rewrite rev of it.
func (f *fleet) rewritten(key types.NamespacedName, rev int, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, live := f.index[key]
	if !live {
		return
	}
	f.live[i].busy = false
	if ok {
		f.live[i].rev = rev
	}
}

func (f *fleet) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.live)
}

// nextFlip chooses the next tenant flip: with maxDown or more tenants not
// Active, the one down longest goes back to Active; otherwise a random
// Active one goes to Drained or Cordoned.
func (f *fleet) nextFlip(maxDown int) (int, authv1beta1.TenantCondition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var active []int
	oldest := -1
	for i, t := range f.tenants {
		switch {
		case t.condition == authv1beta1.TenantConditionActive:
			active = append(active, i)
		case oldest < 0 || t.downSince < f.tenants[oldest].downSince:
			oldest = i
		}
	}
	if len(f.tenants)-len(active) >= maxDown || len(active) == 0 {
		return oldest, authv1beta1.TenantConditionActive
	}
	to := authv1beta1.TenantConditionDrained
	if f.rng.Intn(2) == 0 {
		to = authv1beta1.TenantConditionCordoned
	}
	return active[f.rng.Intn(len(active))], to
}

// flipped records a tenant's new condition once the server has it.
func (f *fleet) flipped(i int, c authv1beta1.TenantCondition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flips++
	f.tenants[i].condition = c
	f.tenants[i].downSince = f.flips
}

// snapshot copies the live slices, by key, and the tenants' conditions.
func (f *fleet) snapshot() (map[types.NamespacedName]sliceRecord, []authv1beta1.TenantCondition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	slices := make(map[types.NamespacedName]sliceRecord, len(f.live))
	for _, r := range f.live {
		slices[r.key] = *r
	}
	conds := make([]authv1beta1.TenantCondition, len(f.tenants))
	for i, t := range f.tenants {
		conds[i] = t.condition
	}
	return slices, conds
}

// object is the slice as Liqo's replicator and its first status write leave
// it: replicated from the tenant's consumer, authenticated.
func (f *fleet) object(r *sliceRecord) *authv1beta1.ResourceSlice {
	t := f.tenants[r.tenant] // namespace and consumer never change
	rs := slicetest.NewSlice(r.key.Name, slicetest.WithNamespace(r.key.Namespace), slicetest.WithConsumer(t.consumer),
		slicetest.WithClass(r.class), slicetest.WithRequest(corev1.ResourceCPU, strconv.Itoa(r.cpu)),
		slicetest.WithRequest(corev1.ResourceMemory, "2Gi"))
	liqoAuth(rs, 0)
	return rs
}

// namespaceObject is the tenant namespace as the provider's Liqo labels it: the
// label is what the SDK trusts for the slices' consumer.
func (t *tenantRecord) namespaceObject() *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   t.namespace,
		Labels: map[string]string{"liqo.io/remote-cluster-id": t.consumer},
	}}
}

// tenantObject is the consumer's Tenant in its namespace.
func (t *tenantRecord) tenantObject() *authv1beta1.Tenant {
	tn := slicetest.NewTenant(t.consumer, authv1beta1.TenantConditionActive)
	tn.Namespace = t.namespace
	return tn
}

// Liqo's authentication as rewrite rev leaves it: each rewrite renews the
// certificate in authParams and changes the Authentication condition's
// message, which the SDK's predicate passes (the condition changed), so each
// rewrite is also a reconcile that must write nothing.
const authReason = "ResourceSliceAuthenticationAccepted"

func authMessage(rev int) string {
	return fmt.Sprintf("ResourceSlice authentication accepted (certificate %d)", rev)
}

func certificate(rev int) []byte { return fmt.Appendf(nil, "crt-%d", rev) }

func liqoAuth(rs *authv1beta1.ResourceSlice, rev int) {
	if rs.Status.AuthParams == nil {
		rs.Status.AuthParams = &authv1beta1.AuthParams{CA: []byte("ca"), APIServer: "https://" + slicetest.DefaultProvider + ":6443"}
	}
	rs.Status.AuthParams.SignedCRT = certificate(rev)
	sliceconds.Set(rs, authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionAccepted, authReason, authMessage(rev))
}

// checkLiqoFields reports how the slice's Liqo-owned status differs from
// Liqo's last rewrite rev; "" when intact.
func checkLiqoFields(rs *authv1beta1.ResourceSlice, rev int) string {
	a := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeAuthentication)
	switch {
	case a == nil:
		return "Authentication condition gone"
	case a.Status != authv1beta1.ResourceSliceConditionAccepted || a.Reason != authReason || a.Message != authMessage(rev):
		return fmt.Sprintf("Authentication is %s/%s %q, Liqo wrote Accepted/%s %q", a.Status, a.Reason, a.Message, authReason, authMessage(rev))
	case rs.Status.AuthParams == nil:
		return "authParams gone"
	case string(rs.Status.AuthParams.SignedCRT) != string(certificate(rev)) || string(rs.Status.AuthParams.CA) != "ca":
		return fmt.Sprintf("authParams certificate %q, Liqo wrote %q", rs.Status.AuthParams.SignedCRT, certificate(rev))
	}
	return ""
}

// forEach runs do(0..n-1) on workers goroutines and returns how many calls
// failed and the first error.
func forEach(ctx context.Context, workers, n int, do func(ctx context.Context, i int) error) (int, error) {
	indexes := make(chan int)
	var (
		mu     sync.Mutex
		failed int
		first  error
		wg     sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for i := range indexes {
				if err := do(ctx, i); err != nil {
					mu.Lock()
					failed++
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		indexes <- i
	}
	close(indexes)
	wg.Wait()
	return failed, first
}
