package ledger

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// The decision function on issue 50's scenarios (each a missed unwind
// path of the remembered state, see snapshot_scenarios_test.go on the
// core-wip branch), and on random snapshots against its invariants.

func dcpu(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
}

func dkey(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

var dt0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// holds is a slice of consumer "c-"+name at priority prio counting cpu q.
func holds(name, q string, prio int32) frameSlice {
	return frameSlice{key: dkey(name), consumer: "c-" + name, priority: prio, created: dt0, counted: dcpu(q)}
}

// asks is a waiter of class (and member) class for cpu q at priority prio.
func asks(class, name, q string, prio int32, members ...string) frameWaiter {
	if len(members) == 0 {
		members = []string{class}
	}
	return frameWaiter{Holder: Holder{Class: class, Key: dkey(name)}, members: members, offer: dcpu(q), priority: prio,
		consumer: "c-" + name, created: dt0}
}

// issueCohort is the issue's provider: gold 10, spot 2 (may borrow 14),
// silver 4 (lends 2); gold takes back from anyone, silver from lower
// priorities.
func issueCohort(spot ...frameSlice) frame {
	return frame{members: []frameMember{
		{name: "gold", total: dcpu("10"), cohortReclaim: ReclaimAny},
		{name: "silver", total: dcpu("4"), lending: dcpu("2"), cohortReclaim: ReclaimLowerPriority},
		{name: "spot", total: dcpu("2"), borrowing: dcpu("14"), slices: spot},
	}}
}

func capCPU(p plan, name string) string {
	c, ok := p.caps[dkey(name)]
	if !ok {
		return ""
	}
	q := c.keep[corev1.ResourceCPU]
	return q.String()
}

func kindOf(p plan, class, name string) string {
	d, ok := p.decisions[Holder{Class: class, Key: dkey(name)}]
	switch {
	case !ok:
		return "none"
	case d.kind == decideAdmit:
		return "admit"
	case d.reclaiming:
		return "reclaiming"
	}
	return "wait:" + d.block.reason
}

// TestDecideScenarios: each of the issue's scenarios is an input of one
// cycle, and the plan is what the domain should do.
func TestDecideScenarios(t *testing.T) {
	t.Run("1 UncountedMemberPauses", func(t *testing.T) {
		f := issueCohort()
		f.members[0].slices = []frameSlice{holds("g1", "10", 10)}
		f.paused = "budget gold: what the cluster holds is being counted again"
		p := decide(f, []frameWaiter{asks("spot", "s1", "14", 0)})
		assert.Equal(t, "wait:"+ReasonNotCounted, kindOf(p, "spot", "s1"), p.String())
		assert.Empty(t, p.caps)
	})
	t.Run("2 StoppedBorrowerStillCounts", func(t *testing.T) {
		// Spot's class stopped: its slice still holds 14, and the frame
		// lists it (its books stay counted in the domain).
		p := decide(issueCohort(holds("s1", "14", 0)), []frameWaiter{asks("gold", "g1", "10", 10)})
		assert.Equal(t, "reclaiming", kindOf(p, "gold", "g1"), p.String())
		assert.Equal(t, "4", capCPU(p, "s1"))
		f := issueCohort(holds("s1", "14", 0))
		f.members[0].cohortReclaim = ReclaimNever
		p = decide(f, []frameWaiter{asks("gold", "g1", "10", 10)})
		assert.Equal(t, "wait:"+ReasonExhausted, kindOf(p, "gold", "g1"), p.String())
	})
	t.Run("3 TwoMembersOnePool", func(t *testing.T) {
		p := decide(issueCohort(holds("s1", "11", 0)), []frameWaiter{asks("both", "b1", "3", 0, "gold", "silver")})
		assert.Equal(t, "wait:"+ReasonExhausted, kindOf(p, "both", "b1"), "3 in each of gold and silver is 6 of the 5 left: %s", p.String())
		p = decide(issueCohort(holds("s1", "10", 0)), []frameWaiter{asks("both", "b1", "3", 0, "gold", "silver")})
		assert.Equal(t, "admit", kindOf(p, "both", "b1"), p.String())
	})
	t.Run("4 DeletedWaiterNoCap", func(t *testing.T) {
		p := decide(issueCohort(holds("s1", "14", 0)), []frameWaiter{asks("gold", "g1", "10", 10)})
		require.Equal(t, "4", capCPU(p, "s1"), p.String())
		require.Len(t, p.caps[dkey("s1")].parts, 1)
		assert.Equal(t, dkey("g1"), p.caps[dkey("s1")].parts[0].waiter.Key)
		assert.True(t, p.caps[dkey("s1")].parts[0].cohort)
		p = decide(issueCohort(holds("s1", "14", 0)), nil)
		assert.Empty(t, p.caps, "no waiter, no cap")
	})
	t.Run("5 MembershipChange", func(t *testing.T) {
		// Gold left: spot's domain is spot and silver, where spot holds
		// 14 against their 6. No waiter there needs a cap; the domain
		// says it is over its totals.
		f := frame{members: []frameMember{
			{name: "silver", total: dcpu("4"), lending: dcpu("2"), cohortReclaim: ReclaimLowerPriority},
			{name: "spot", total: dcpu("2"), borrowing: dcpu("14"), slices: []frameSlice{holds("s1", "14", 0)}},
		}}
		p := decide(f, nil)
		assert.Empty(t, p.caps)
		assertList(t, dcpu("10"), p.cohortOver, "the domain holds 14 against 6 (spot's 2, silver's 4; silver guarantees itself 2)")
		// Silver's waiter (priority 5) takes back its own from spot.
		p = decide(f, []frameWaiter{asks("silver", "v1", "2", 5)})
		assert.Equal(t, "reclaiming", kindOf(p, "silver", "v1"), p.String())
	})
	t.Run("6 ReclaimNever", func(t *testing.T) {
		f := issueCohort(holds("s1", "14", 0))
		f.members[0].cohortReclaim = ReclaimNever
		p := decide(f, []frameWaiter{asks("gold", "g1", "10", 10)})
		assert.Empty(t, p.caps, "Never takes nothing back")
		f = issueCohort(holds("s1", "4", 0))
		f.members[0].cohortReclaim = ReclaimNever
		p = decide(f, []frameWaiter{asks("gold", "g1", "10", 10)})
		assert.Equal(t, "admit", kindOf(p, "gold", "g1"), "it fits once spot released: decided in the cycle its release starts")
	})
	t.Run("7 BorrowerPreemptionSwitch", func(t *testing.T) {
		for _, on := range []bool{false, true} {
			f := issueCohort(holds("s1", "14", 0))
			f.members[2].ownReclaim = on
			p := decide(f, []frameWaiter{asks("gold", "g1", "10", 10)})
			assert.Equal(t, "4", capCPU(p, "s1"), "spot's own preemption %v: %s", on, p.String())
		}
	})
	t.Run("8 OneOrderOverTheCohort", func(t *testing.T) {
		f := frame{members: []frameMember{
			{name: "lender", total: dcpu("4")},
			{name: "a", total: dcpu("0")},
			{name: "b", total: dcpu("0")},
		}}
		p := decide(f, []frameWaiter{asks("a-high", "a-big", "8", 10, "a"), asks("a", "a1", "4", 1), asks("b", "b1", "4", 5)})
		assert.Equal(t, "admit", kindOf(p, "b", "b1"), p.String())
		assert.Equal(t, "wait:"+ReasonExhausted, kindOf(p, "a", "a1"))
		assert.Equal(t, "wait:"+ReasonExhausted, kindOf(p, "a-high", "a-big"))
	})
	t.Run("8 NoBorrowingFirst", func(t *testing.T) {
		// b's priority-1 waiter fits within b's own total; a's priority-5
		// one would borrow it: b's guarantee is served first.
		f := frame{members: []frameMember{{name: "a", total: dcpu("0")}, {name: "b", total: dcpu("4")}}}
		p := decide(f, []frameWaiter{asks("a", "a1", "4", 5), asks("b", "b1", "4", 1)})
		assert.Equal(t, "admit", kindOf(p, "b", "b1"), p.String())
		assert.Equal(t, "wait:"+ReasonExhausted, kindOf(p, "a", "a1"))
	})
	t.Run("WaiterThatFitsStalls", func(t *testing.T) {
		for _, silver := range []string{"0", "4"} {
			f := frame{members: []frameMember{
				{name: "gold", total: dcpu("4"), cohortReclaim: ReclaimAny},
				{name: "silver", total: dcpu(silver)},
				{name: "spot", total: dcpu("2"), borrowing: dcpu("10"), slices: []frameSlice{holds("s1", "10", 0)}},
			}}
			p := decide(f, []frameWaiter{asks("gold", "g1", "2", 10)})
			assert.Equal(t, "reclaiming", kindOf(p, "gold", "g1"), "silver %s: %s", silver, p.String())
			want := map[string]string{"0": "4", "4": "8"}[silver]
			assert.Equal(t, want, capCPU(p, "s1"), "silver %s: spot yields what gold lacks", silver)
		}
	})
}

// TestDecideRegrowAfterReclaim is the owner decision for "a Reclaimed
// victim regrowing", as Kueue would: a slice shrunk for a waiter grows
// again only when the domain decides it fits with the waiters
// considered.
func TestDecideRegrowAfterReclaim(t *testing.T) {
	// Gold was admitted (holds 10), spot was shrunk to 4: spot asking 14
	// again waits.
	f := issueCohort(holds("s1", "4", 0))
	f.members[0].slices = []frameSlice{holds("g1", "10", 10)}
	p := decide(f, []frameWaiter{asks("spot", "s1", "14", 0)})
	assert.Equal(t, "wait:"+ReasonExhausted, kindOf(p, "spot", "s1"), p.String())
	// Gold releases 6: spot may grow into it, but not while a gold waiter
	// of higher priority needs it.
	f.members[0].slices = []frameSlice{holds("g1", "4", 10)}
	p = decide(f, []frameWaiter{asks("spot", "s1", "10", 0), asks("gold", "g2", "6", 10)})
	assert.Equal(t, "admit", kindOf(p, "gold", "g2"), p.String())
	assert.Equal(t, "wait:"+ReasonExhausted, kindOf(p, "spot", "s1"))
	p = decide(f, []frameWaiter{asks("spot", "s1", "10", 0)})
	assert.Equal(t, "admit", kindOf(p, "spot", "s1"), p.String())
}

// TestDecideOwnReclaim: within one budget, a waiter of higher priority
// takes from lower priorities (only with ownReclaim), only if it fits once
// the cuts are done, and a budget over its total cuts its lowest
// priorities without freeing anything in the cycle.
func TestDecideOwnReclaim(t *testing.T) {
	one := func(own bool, slices ...frameSlice) frame {
		return frame{members: []frameMember{{name: "pool", total: dcpu("10"), ownReclaim: own, slices: slices}}}
	}
	p := decide(one(true, holds("low", "6", 0), holds("mid", "4", 5)), []frameWaiter{asks("pool", "hi", "5", 10)})
	assert.Equal(t, "reclaiming", kindOf(p, "pool", "hi"), p.String())
	assert.Equal(t, "1", capCPU(p, "low"), "the lowest priority yields first, by what is lacking")
	assert.Equal(t, "", capCPU(p, "mid"))
	p = decide(one(false, holds("low", "6", 0)), []frameWaiter{asks("pool", "hi", "5", 10)})
	assert.Empty(t, p.caps, "without ownReclaim nothing is taken")
	p = decide(one(true, holds("low", "6", 0), holds("same", "4", 10)), []frameWaiter{asks("pool", "hi", "8", 10)})
	assert.Empty(t, p.caps, "6 of lower priority cannot free 8: no one is touched")
	assert.Equal(t, "wait:"+ReasonExhausted, kindOf(p, "pool", "hi"))
	f := one(true, holds("low", "6", 0), holds("mid", "6", 5))
	f.members[0].total = dcpu("8")
	p = decide(f, []frameWaiter{asks("pool", "new", "1", 0)})
	assert.Equal(t, "2", capCPU(p, "low"), "12 held against 8: the lowest priority yields 4")
	require.Len(t, p.caps[dkey("low")].parts, 1)
	assert.Equal(t, capForTotal, p.caps[dkey("low")].parts[0].reason)
	assert.Equal(t, "wait:"+ReasonExhausted, kindOf(p, "pool", "new"), "what the cap takes back is not free until it is seen")
	assertList(t, dcpu("4"), p.over["pool"], "over its total until the slice is seen smaller")
}

// TestDecideConsumerLimit: a consumer's limit is checked first, and a
// reclaim does not lift it.
func TestDecideConsumerLimit(t *testing.T) {
	f := frame{members: []frameMember{{name: "pool", total: dcpu("10"), ownReclaim: true, limit: dcpu("4"),
		slices: []frameSlice{holds("low", "6", 0), {key: dkey("mine"), consumer: "acme", counted: dcpu("3"), priority: 10, created: dt0}}}}}
	w := asks("pool", "hi", "2", 10)
	w.consumer = "acme"
	p := decide(f, []frameWaiter{w})
	assert.Equal(t, "wait:"+ReasonExhausted, kindOf(p, "pool", "hi"), "the budget's shortfall is named first, as fit.go does: %s", p.String())
	assert.Empty(t, p.caps, "cutting others does not lift acme's limit: no one is touched")
	f.members[0].ownReclaim = false
	f.members[0].slices = f.members[0].slices[1:]
	p = decide(f, []frameWaiter{w})
	assert.Equal(t, "wait:"+ReasonConsumerLimit, kindOf(p, "pool", "hi"), p.String())
	f.members[0].ownReclaim = true
	f.members[0].slices = append(f.members[0].slices, holds("low", "6", 0))
	f.members[0].limits = map[string]corev1.ResourceList{"acme": dcpu("5")}
	p = decide(f, []frameWaiter{w})
	assert.Equal(t, "reclaiming", kindOf(p, "pool", "hi"), "acme's own limit is 5: %s", p.String())
}

// TestDecideProperties runs decide on random snapshots and checks its
// invariants on the plan applied.
func TestDecideProperties(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	n := 20000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		f, ws := randomFrame(rng)
		p := decide(f, ws)
		if err := checkPlan(f, ws, p); err != nil {
			t.Fatalf("seed %d, case %d: %v\nframe: %s\nplan:\n%s", seed, i, err, describe(f, ws), p.String())
		}
	}
}

// FuzzDecide is TestDecideProperties driven by the fuzzer's seeds.
func FuzzDecide(f *testing.F) {
	for _, s := range []int64{1, 2, 3, 42} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		fr, ws := randomFrame(rand.New(rand.NewSource(seed)))
		p := decide(fr, ws)
		if err := checkPlan(fr, ws, p); err != nil {
			t.Fatalf("%v\nframe: %s\nplan:\n%s", err, describe(fr, ws), p.String())
		}
	})
}

var policies = []ReclaimPolicy{"", ReclaimNever, ReclaimLowerPriority, ReclaimAny}

// randomFrame is a domain of 1 to 4 members, some limiting memory too,
// with random terms, holdings, pods in use and waiters (new slices and
// held ones growing, a few drawing from two members).
func randomFrame(rng *rand.Rand) (frame, []frameWaiter) {
	q := func(most int) resource.Quantity {
		return *resource.NewMilliQuantity(int64(rng.Intn(most*2+1))*500, resource.DecimalSI)
	}
	list := func(most int, mem bool) corev1.ResourceList {
		rl := corev1.ResourceList{corev1.ResourceCPU: q(most)}
		if mem {
			rl[corev1.ResourceMemory] = q(most)
		}
		return rl
	}
	var f frame
	if rng.Intn(40) == 0 {
		f.paused = "not counted"
	}
	nm := 1 + rng.Intn(4)
	slice := 0
	var held []struct {
		member string
		s      frameSlice
	}
	for i := range nm {
		mem := rng.Intn(3) == 0
		m := frameMember{name: fmt.Sprintf("m%d", i), total: list(6, mem), ownReclaim: rng.Intn(2) == 0,
			cohortReclaim: policies[rng.Intn(len(policies))]}
		if rng.Intn(2) == 0 {
			m.lending = corev1.ResourceList{}
			for n, t := range m.total {
				l := q(6)
				if l.Cmp(t) > 0 {
					l = t
				}
				m.lending[n] = l
			}
		}
		if rng.Intn(2) == 0 {
			m.borrowing = list(4, mem)
		}
		if rng.Intn(3) == 0 {
			m.limit = list(4, mem)
		}
		if rng.Intn(15) == 0 {
			m.closed = "closed"
		}
		for range rng.Intn(5) {
			s := frameSlice{key: dkey(fmt.Sprintf("s%d", slice)), consumer: fmt.Sprintf("c%d", rng.Intn(3)), priority: int32(rng.Intn(4)),
				created: dt0.Add(time.Duration(rng.Intn(5)) * time.Second), counted: list(4, mem)}
			if rng.Intn(2) == 0 {
				s.inUse = list(3, mem)
			}
			slice++
			m.slices = append(m.slices, s)
			held = append(held, struct {
				member string
				s      frameSlice
			}{m.name, s})
		}
		f.members = append(f.members, m)
	}
	var ws []frameWaiter
	for i := range rng.Intn(6) {
		w := frameWaiter{priority: int32(rng.Intn(4)), consumer: fmt.Sprintf("c%d", rng.Intn(3)),
			created: dt0.Add(time.Duration(rng.Intn(5)) * time.Second), offer: list(5, rng.Intn(2) == 0)}
		if len(held) > 0 && rng.Intn(3) == 0 {
			h := held[rng.Intn(len(held))]
			w.Key, w.members, w.consumer, w.priority = h.s.key, []string{h.member}, h.s.consumer, h.s.priority
			dup := false
			for _, o := range ws {
				dup = dup || o.Key == w.Key
			}
			if dup {
				continue
			}
		} else {
			w.Key = dkey(fmt.Sprintf("w%d", i))
			w.members = []string{f.members[rng.Intn(nm)].name}
			if nm > 1 && rng.Intn(5) == 0 {
				w.members = []string{"m0", "m1"}
			}
		}
		w.Class = "k" + w.members[0]
		ws = append(ws, w)
	}
	return f, ws
}

func describe(f frame, ws []frameWaiter) string {
	s := fmt.Sprintf("paused=%q\n", f.paused)
	for _, m := range f.members {
		s += fmt.Sprintf("  %s total=%s lend=%s borrow=%s own=%v cohort=%q limit=%s closed=%q\n", m.name, Amounts(m.total), Amounts(m.lending),
			Amounts(m.borrowing), m.ownReclaim, m.cohortReclaim, Amounts(m.limit), m.closed)
		for _, sl := range m.slices {
			s += fmt.Sprintf("    %s %s p%d counts %s inUse %s\n", sl.key.Name, sl.consumer, sl.priority, Amounts(sl.counted), Amounts(sl.inUse))
		}
	}
	for _, w := range ws {
		s += fmt.Sprintf("  waiter %s/%s %v %s p%d asks %s\n", w.Class, w.Key.Name, w.members, w.consumer, w.priority, Amounts(w.offer))
	}
	return s
}

// world is a domain's counts, in milli-units, by member, slice and
// resource: the test's own arithmetic, apart from decide's.
type world struct {
	f      frame
	counts map[string]map[types.NamespacedName]map[corev1.ResourceName]int64
	cons   map[string]map[types.NamespacedName]string
}

func newWorld(f frame) *world {
	w := &world{f: f, counts: map[string]map[types.NamespacedName]map[corev1.ResourceName]int64{}, cons: map[string]map[types.NamespacedName]string{}}
	for _, m := range f.members {
		w.counts[m.name] = map[types.NamespacedName]map[corev1.ResourceName]int64{}
		w.cons[m.name] = map[types.NamespacedName]string{}
		for _, s := range m.slices {
			c := w.slice(m.name, s.key, s.consumer)
			for n, q := range s.counted {
				if _, ok := m.total[n]; ok && q.MilliValue() > c[n] {
					c[n] = q.MilliValue()
				}
			}
		}
	}
	return w
}

func (w *world) slice(member string, key types.NamespacedName, consumer string) map[corev1.ResourceName]int64 {
	c := w.counts[member][key]
	if c == nil {
		c = map[corev1.ResourceName]int64{}
		w.counts[member][key] = c
		w.cons[member][key] = consumer
	}
	return c
}

func (w *world) member(name string) *frameMember {
	for i := range w.f.members {
		if w.f.members[i].name == name {
			return &w.f.members[i]
		}
	}
	return nil
}

func (w *world) used(member string, n corev1.ResourceName) (u int64) {
	for _, c := range w.counts[member] {
		u += c[n]
	}
	return u
}

func (w *world) byConsumer(member, consumer string, n corev1.ResourceName) (u int64) {
	for k, c := range w.counts[member] {
		if w.cons[member][k] == consumer {
			u += c[n]
		}
	}
	return u
}

func milliOf(rl corev1.ResourceList, n corev1.ResourceName) (int64, bool) {
	q, ok := rl[n]
	return q.MilliValue(), ok
}

// lend and guaranteed of member m for n.
func lendOf(m *frameMember, n corev1.ResourceName) int64 {
	t, _ := milliOf(m.total, n)
	if l, ok := milliOf(m.lending, n); ok && l < t {
		return l
	}
	return t
}

// ceilingOf is the most m may count of n.
func (w *world) ceilingOf(m *frameMember, n corev1.ResourceName) int64 {
	t, _ := milliOf(m.total, n)
	if b, ok := milliOf(m.borrowing, n); ok {
		return t + b
	}
	for _, o := range w.f.members {
		if _, ok := o.total[n]; ok && o.name != m.name {
			t += lendOf(&o, n)
		}
	}
	return t
}

// pool is what the members may lend of n beyond what they use of it.
func (w *world) pool(n corev1.ResourceName) int64 {
	var pool int64
	for i := range w.f.members {
		m := &w.f.members[i]
		if _, ok := m.total[n]; !ok {
			continue
		}
		t, _ := milliOf(m.total, n)
		pool += lendOf(m, n)
		if x := w.used(m.name, n) - (t - lendOf(m, n)); x > 0 {
			pool -= x
		}
	}
	return pool
}

// borrows reports whether member counts more than its total of a
// resource.
func (w *world) borrows(member string) bool {
	m := w.member(member)
	for n, t := range m.total {
		if w.used(member, n) > t.MilliValue() {
			return true
		}
	}
	return false
}

// fits reports whether a grows its slice in member by inc without taking
// the member over its ceiling, the domain over what it lends, or the
// consumer over its limit.
func (w *world) fits(member string, consumer string, inc map[corev1.ResourceName]int64) bool {
	m := w.member(member)
	if m.closed != "" && len(inc) > 0 {
		return false
	}
	lim := m.limit
	if l, ok := m.limits[consumer]; ok {
		lim = l
	}
	for n, x := range inc {
		t, _ := milliOf(m.total, n)
		g := t - lendOf(m, n)
		u := w.used(member, n)
		if u+x > w.ceilingOf(m, n) {
			return false
		}
		// Above its guarantee, the growth comes from the pool.
		above := max(0, u+x-g) - max(0, u-g)
		if above > w.pool(n) {
			return false
		}
		if l, ok := milliOf(lim, n); ok && lim != nil && w.byConsumer(member, consumer, n)+x > l {
			return false
		}
	}
	return true
}

func (w *world) increase(member string, fw frameWaiter) map[corev1.ResourceName]int64 {
	m := w.member(member)
	inc := map[corev1.ResourceName]int64{}
	c := w.counts[member][fw.Key]
	for n, q := range fw.offer {
		if _, ok := m.total[n]; !ok {
			continue
		}
		if d := q.MilliValue() - c[n]; d > 0 {
			inc[n] = d
		}
	}
	return inc
}

func (w *world) grow(member string, fw frameWaiter, inc map[corev1.ResourceName]int64) {
	c := w.slice(member, fw.Key, fw.consumer)
	for n, x := range inc {
		c[n] += x
	}
}

// checkPlan applies p to f (the reclaiming waiters admitted once their
// victims yield what they are cut to) and checks the invariants.
func checkPlan(f frame, ws []frameWaiter, p plan) error {
	if len(p.decisions) != len(ws) {
		return fmt.Errorf("%d decisions for %d waiters", len(p.decisions), len(ws))
	}
	if f.paused != "" {
		for _, d := range p.decisions {
			if d.kind == decideAdmit {
				return fmt.Errorf("a paused domain admitted")
			}
		}
		if len(p.caps) > 0 {
			return fmt.Errorf("a paused domain capped")
		}
		return nil
	}
	w := newWorld(f)
	before := newWorld(f)
	prio := map[types.NamespacedName]int32{}
	for _, m := range f.members {
		for _, s := range m.slices {
			prio[s.key] = s.priority
		}
	}
	byHolder := map[Holder]frameWaiter{}
	for _, fw := range ws {
		byHolder[fw.Holder] = fw
	}
	// Caps: every reclaim cap names a reclaiming waiter, never a
	// priority at or above it (save what a lender with Any takes back),
	// never more than a cohort victim's member borrows.
	cutFor := map[Holder]map[corev1.ResourceName]int64{}
	for key, c := range p.caps {
		orig := before.counts[c.member][key]
		if orig == nil {
			return fmt.Errorf("cap on %s, which counts nothing in %s", key.Name, c.member)
		}
		for h, d := range p.decisions {
			if h.Key == key && (d.kind == decideAdmit || d.reclaiming) {
				return fmt.Errorf("%s/%s is admitted or set aside for, and capped", h.Class, h.Key.Name)
			}
		}
		took := map[corev1.ResourceName]int64{}
		for _, part := range c.parts {
			for n, q := range part.took {
				if q.Sign() <= 0 {
					return fmt.Errorf("cap on %s takes %s of %s", key.Name, q.String(), n)
				}
				took[n] += q.MilliValue()
			}
		}
		for n := range orig {
			q := c.keep[n]
			if _, ok := c.keep[n]; (ok || took[n] > 0) && q.MilliValue() != orig[n]-took[n] {
				return fmt.Errorf("cap on %s keeps %s of %s, counting %d, its parts taking %d", key.Name, q.String(), n, orig[n], took[n])
			}
			if q.Sign() < 0 {
				return fmt.Errorf("cap on %s keeps %s of %s", key.Name, q.String(), n)
			}
		}
		for _, part := range c.parts {
			if part.reason == capForTotal {
				m := w.member(c.member)
				if !m.ownReclaim {
					return fmt.Errorf("cap on %s for the total of %s, which does not reclaim", key.Name, c.member)
				}
				over := false
				for n := range m.total {
					over = over || before.used(c.member, n) > before.ceilingOf(m, n)
				}
				if !over {
					return fmt.Errorf("cap on %s for the total of %s, which is not over it", key.Name, c.member)
				}
				continue
			}
			d, ok := p.decisions[part.waiter]
			if !ok || d.kind != decideWait || !d.reclaiming {
				return fmt.Errorf("cap on %s for %s/%s, which is not reclaiming: no cap without a waiter that needs it", key.Name, part.waiter.Class, part.waiter.Key.Name)
			}
			fw := byHolder[part.waiter]
			wm := w.member(fw.members[0])
			anyPolicy := part.cohort && wm.cohortReclaim == ReclaimAny
			if prio[key] >= fw.priority && !anyPolicy {
				return fmt.Errorf("cap on %s (priority %d) for %s (priority %d): taken from an equal or higher priority", key.Name, prio[key], fw.Key.Name, fw.priority)
			}
			if part.cohort == (c.member == fw.members[0]) {
				return fmt.Errorf("cap on %s in %s for a waiter of %s marked cohort=%v", key.Name, c.member, fw.members[0], part.cohort)
			}
			if !part.cohort && !wm.ownReclaim {
				return fmt.Errorf("cap on %s in %s, which does not reclaim from its own", key.Name, c.member)
			}
			if part.cohort && (wm.cohortReclaim == ReclaimNever || wm.cohortReclaim == "") {
				return fmt.Errorf("cap on %s taken back for %s, whose policy is %q", key.Name, fw.members[0], wm.cohortReclaim)
			}
			if part.cohort && !before.borrows(c.member) {
				return fmt.Errorf("cap on %s taken back from %s, which borrows nothing", key.Name, c.member)
			}
			if cutFor[part.waiter] == nil {
				cutFor[part.waiter] = map[corev1.ResourceName]int64{}
			}
			for n, q := range part.took {
				cutFor[part.waiter][n] += q.MilliValue()
			}
		}
	}
	for h, cut := range cutFor {
		mn := byHolder[h].members[0]
		inc := before.increase(mn, byHolder[h])
		for n, x := range cut {
			// No more than it grows by, and what the domain, or its
			// member, was over before it.
			m := before.member(mn)
			bound := inc[n] + max(0, -before.pool(n)) + max(0, before.used(mn, n)-before.ceilingOf(m, n))
			if x > bound {
				return fmt.Errorf("%d of %s cut for %s/%s, which grows by %d (bound %d)", x, n, h.Class, h.Key.Name, inc[n], bound)
			}
		}
	}
	// Apply: what is cut for waiters (what is cut for a total frees
	// nothing in this cycle), then admissions and reclaiming waiters.
	for key, c := range p.caps {
		for _, part := range c.parts {
			if part.reason == capForTotal {
				continue
			}
			for n, q := range part.took {
				w.counts[c.member][key][n] -= q.MilliValue()
			}
		}
	}
	grown := map[string]map[corev1.ResourceName]bool{}
	grownConsumer := map[string]map[string]bool{}
	for h, d := range p.decisions {
		if d.kind != decideAdmit && !d.reclaiming {
			continue
		}
		fw := byHolder[h]
		for _, mn := range fw.members {
			inc := w.increase(mn, fw)
			w.grow(mn, fw, inc)
			if grown[mn] == nil {
				grown[mn] = map[corev1.ResourceName]bool{}
				grownConsumer[mn] = map[string]bool{}
			}
			for n := range inc {
				grown[mn][n] = true
			}
			if len(inc) > 0 {
				grownConsumer[mn][fw.consumer] = true
			}
		}
	}
	var names []corev1.ResourceName
	seen := map[corev1.ResourceName]bool{}
	for _, m := range f.members {
		for n := range m.total {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	for _, n := range names {
		anyGrew := false
		for _, m := range f.members {
			anyGrew = anyGrew || grown[m.name][n]
		}
		if anyGrew && w.pool(n) < 0 && w.pool(n) < before.pool(n) {
			return fmt.Errorf("%s: the members use %d beyond what they lend (%d before the plan)", n, -w.pool(n), -before.pool(n))
		}
	}
	for i := range f.members {
		m := &f.members[i]
		for n := range grown[m.name] {
			if u, c := w.used(m.name, n), w.ceilingOf(m, n); u > c {
				return fmt.Errorf("%s: %s counts %d above its ceiling %d", m.name, n, u, c)
			}
		}
		for c := range grownConsumer[m.name] {
			lim := m.limit
			if l, ok := m.limits[c]; ok {
				lim = l
			}
			for n := range grown[m.name] {
				if l, ok := milliOf(lim, n); ok && lim != nil {
					if u := w.byConsumer(m.name, c, n); u > l && u > before.byConsumer(m.name, c, n) {
						return fmt.Errorf("%s: consumer %s counts %d of %s over its limit %d", m.name, c, u, n, l)
					}
				}
			}
		}
	}
	// No waiter left that fits, in every member it names (judged one
	// after the other on the world as it grows).
	for h, d := range p.decisions {
		if d.kind == decideAdmit || d.reclaiming {
			continue
		}
		if _, capped := p.caps[h.Key]; capped {
			if d.block.reason != ReasonReclaimed {
				return fmt.Errorf("%s/%s is capped and waits for %s", h.Class, h.Key.Name, d.block.reason)
			}
			continue // its cap is its decision
		}
		fw := byHolder[h]
		trial := newWorld(f)
		trial.counts, trial.cons = w.counts, w.cons
		ok := true
		var undo []func()
		for _, mn := range fw.members {
			inc := w.increase(mn, fw)
			if !w.fits(mn, fw.consumer, inc) {
				ok = false
				break
			}
			w.grow(mn, fw, inc)
			undo = append(undo, func() {
				neg := map[corev1.ResourceName]int64{}
				for n, x := range inc {
					neg[n] = -x
				}
				w.grow(mn, fw, neg)
			})
		}
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		if ok {
			return fmt.Errorf("%s/%s waits (%s in %s) but fits", h.Class, h.Key.Name, d.block.reason, d.block.member)
		}
	}
	return nil
}

// assertList compares resource lists by value.
func assertList(t *testing.T, want, got corev1.ResourceList, what string) {
	t.Helper()
	assert.Equal(t, len(want), len(got), "%s: %v", what, got)
	for n, q := range want {
		g := got[n]
		assert.Zero(t, q.Cmp(g), "%s: %s: want %s, got %s", what, n, q.String(), g.String())
	}
}
