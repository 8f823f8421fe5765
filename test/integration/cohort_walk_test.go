package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/test/internal/grantwatch"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// Issue 50's random walk on a real API server: a cohort of three
// SliceBudgets (gold 6 takes back from anyone, silver 4, spot 2 may borrow
// 10: 12 CPU in all) served by one ClassSet beside Liqo's QuotaCreator, and
// a seeded sequence of what users and Liqo do: slices asked, resized and
// deleted, ShadowPods started and ended as the consumer's virtual kubelet
// does, a class stopped and served again at run time, the manager
// restarted. Two promises are checked:
//   - never over: replayed in revision order, what the live slices hold
//     (the largest of offer, Liqo's Quota and running pods) never passes
//     the cohort's 12 (grantwatch);
//   - no stall: once the walk ends (every class served, the pods ended),
//     no slice waits, to be admitted or to grow, that would fit what its
//     member and the cohort have free, as the cluster shows them.
//
// The walks of seeds 1, 2 and 3 run by default (each a few seconds; the
// interleavings still differ run to run); SLICECLASS_WALK_SEED runs one
// seed instead ("random": a new one, logged, to replay), and
// SLICECLASS_WALK_STEPS sets a walk's length (30).
func TestCohortRandomWalk(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	switch v := os.Getenv("SLICECLASS_WALK_SEED"); v {
	case "":
	case "random":
		seeds = []uint64{uint64(time.Now().UnixNano())}
	default:
		seed, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "SLICECLASS_WALK_SEED")
		seeds = []uint64{seed}
	}
	steps := 30
	if v := os.Getenv("SLICECLASS_WALK_STEPS"); v != "" {
		var err error
		steps, err = strconv.Atoi(v)
		require.NoError(t, err, "SLICECLASS_WALK_STEPS")
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			t.Logf("SLICECLASS_WALK_SEED=%d replays this walk of %d steps", seed, steps)
			wk := newWalk(t, seed)
			for i := range steps {
				what := wk.step()
				t.Logf("step %d: %s", i, what)
				wk.settle()
			}
			wk.end()
		})
	}
}

// walkMember is a member of the walk's cohort: its SliceBudget, class and
// limits in CPU.
type walkMember struct {
	class         string
	total, borrow int64
}

// walkSlice is a slice the walk created, in a tenant namespace of its own
// (one consumer, one Quota, one user per slice), and the ShadowPods it
// runs.
type walkSlice struct {
	ref    sliceRef
	member string
	cpu    int64
	pods   []*offloadingv1beta1.ShadowPod
}

type walk struct {
	t         *testing.T
	r         *rand.Rand
	members   map[string]walkMember
	names     []string
	classes   []sbClass
	sc        *sbCohort
	stopped   map[string]bool
	slices    []*walkSlice
	n         int
	prefix    string
	offloaded string
	w         *grantwatch.Watcher
}

const walkCohortCPU = 12

func newWalk(t *testing.T, seed uint64) *walk {
	p := fmt.Sprintf("walk%d", seed%1000)
	gold, silver, spot := p+"-gold", p+"-silver", p+"-spot"
	wk := &walk{t: t, r: rand.New(rand.NewPCG(seed, seed^0x5eed)), prefix: p, stopped: map[string]bool{},
		members: map[string]walkMember{
			gold:   {class: gold, total: 6},
			silver: {class: silver, total: 4},
			spot:   {class: spot, total: 2, borrow: 10},
		}}
	wk.names = []string{gold, silver, spot}
	wk.classes = []sbClass{
		{name: gold, prio: 100, budgets: []string{gold}},
		{name: silver, prio: 50, budgets: []string{silver}},
		{name: spot, prio: 0, budgets: []string{spot}},
	}
	wk.offloaded = testkit.Namespace(t, cp, p+"-offloaded")
	wk.w = grantwatch.WatchHolds(t, cp.Config, cp.Scheme, strconv.Itoa(walkCohortCPU), gold, silver, spot)
	wk.sc = startCohort(t, []sbMember{
		member(gold, p, "6", reclaiming(v1alpha1.CohortReclaimAny)),
		member(silver, p, "4"),
		member(spot, p, "2", borrowingUpTo("10")),
	}, wk.classes...)
	return wk
}

// step does one random thing and says what.
func (wk *walk) step() string {
	switch p := wk.r.IntN(100); {
	case p < 30 || len(wk.slices) == 0:
		return wk.ask()
	case p < 45:
		return wk.resize()
	case p < 58:
		return wk.remove()
	case p < 78:
		return wk.runPod()
	case p < 88:
		return wk.endPod()
	case p < 95:
		return wk.stopOrServe()
	default:
		return wk.restart()
	}
}

func (wk *walk) pick() *walkSlice { return wk.slices[wk.r.IntN(len(wk.slices))] }

func (wk *walk) ask() string {
	m := wk.names[wk.r.IntN(len(wk.names))]
	cpu := 1 + wk.r.Int64N(5)
	wk.n++
	ns := tenant(wk.t, fmt.Sprintf("%s-%d", wk.prefix, wk.n))
	s := &walkSlice{ref: ask(wk.t, ns, "s", wk.members[m].class, strconv.FormatInt(cpu, 10)), member: m, cpu: cpu}
	wk.slices = append(wk.slices, s)
	return fmt.Sprintf("%s asks %d CPU of %s", ns, cpu, m)
}

func (wk *walk) resize() string {
	s := wk.pick()
	cpu := 1 + wk.r.Int64N(5)
	for {
		rs := get(wk.t, s.ref.ns, s.ref.name)
		rs.Spec.Resources[corev1.ResourceCPU] = *resource.NewQuantity(cpu, resource.DecimalSI)
		err := cp.Client.Update(context.Background(), rs)
		if !apierrors.IsConflict(err) {
			require.NoError(wk.t, err)
			break
		}
	}
	from := s.cpu
	s.cpu = cpu
	return fmt.Sprintf("%s asks %d CPU instead of %d", s.ref.ns, cpu, from)
}

// remove deletes a slice, its pods first (its virtual node goes with it).
func (wk *walk) remove() string {
	i := wk.r.IntN(len(wk.slices))
	s := wk.slices[i]
	for _, p := range s.pods {
		require.NoError(wk.t, client.IgnoreNotFound(cp.Client.Delete(context.Background(), p)))
	}
	require.NoError(wk.t, client.IgnoreNotFound(cp.Client.Delete(context.Background(), get(wk.t, s.ref.ns, s.ref.name))))
	wk.slices = append(wk.slices[:i], wk.slices[i+1:]...)
	return fmt.Sprintf("%s's slice and its %d pods deleted", s.ref.ns, len(s.pods))
}

// runPod starts a 1-CPU ShadowPod for a slice whose Quota leaves room for
// it, as Liqo's webhook would let it.
func (wk *walk) runPod() string {
	s := wk.pick()
	q, ok := quotaCPU(s.ref.ns, s.ref.name)
	if !ok || q.Value() <= int64(len(s.pods)) {
		return fmt.Sprintf("%s has no room for a pod (Quota %s, %d pods)", s.ref.ns, q.String(), len(s.pods))
	}
	wk.n++
	s.pods = append(s.pods, runShadowPod(wk.t, wk.offloaded, fmt.Sprintf("%s-pod-%d", wk.prefix, wk.n), quotaUser(wk.t, s.ref.ns), "1"))
	return fmt.Sprintf("%s runs pod %d of 1 CPU (Quota %s)", s.ref.ns, len(s.pods), q.String())
}

func (wk *walk) endPod() string {
	s := wk.pick()
	if len(s.pods) == 0 {
		return fmt.Sprintf("%s has no pod to end", s.ref.ns)
	}
	p := s.pods[len(s.pods)-1]
	s.pods = s.pods[:len(s.pods)-1]
	require.NoError(wk.t, client.IgnoreNotFound(cp.Client.Delete(context.Background(), p)))
	return fmt.Sprintf("%s's pod %s ended", s.ref.ns, p.Name)
}

func (wk *walk) stopOrServe() string {
	c := wk.classes[wk.r.IntN(len(wk.classes))].name
	if wk.stopped[c] {
		wk.sc.serve(c)
		delete(wk.stopped, c)
		return "class " + c + " served again"
	}
	wk.sc.stop(c)
	wk.stopped[c] = true
	return "class " + c + " stopped"
}

func (wk *walk) restart() string {
	wk.sc.m.Stop()
	wk.sc = serveCohort(wk.t, wk.names, wk.classes...)
	clear(wk.stopped)
	return "the manager restarted (a new leader serving every class)"
}

// served reports whether the member's class is served now.
func (wk *walk) served(member string) bool { return !wk.stopped[wk.members[member].class] }

// settle waits until every slice of a served class is decided and Liqo's
// Quota of each Accepted one follows its offer.
func (wk *walk) settle() {
	wk.t.Helper()
	eventuallySays(wk.t, "every served slice decided, its Quota following its offer", func() bool {
		for _, s := range wk.slices {
			if !wk.served(s.member) {
				continue
			}
			rs := get(wk.t, s.ref.ns, s.ref.name)
			if !conditions.IsDecided(rs) {
				return false
			}
			if conditions.IsAccepted(rs) {
				if q, ok := quotaCPU(s.ref.ns, s.ref.name); !ok || q.Cmp(*rs.Status.Resources.Cpu()) != 0 {
					return false
				}
			}
		}
		return true
	}, wk.state)
}

// end serves every class again, ends every pod, and checks both promises.
func (wk *walk) end() {
	t := wk.t
	for c := range wk.stopped {
		wk.sc.serve(c)
	}
	clear(wk.stopped)
	for _, s := range wk.slices {
		for _, p := range s.pods {
			require.NoError(t, client.IgnoreNotFound(cp.Client.Delete(context.Background(), p)))
		}
		s.pods = nil
	}
	wk.settle()
	eventuallySays(t, "no slice waiting that fits what its member and the cohort have free", func() bool {
		return wk.stalled() == ""
	}, func() string { return wk.stalled() + "\n" + wk.state() })
	wk.w.Check(t)
}

// stalled names a slice that waits (Denied, or Accepted with less than it
// asks: its growth waits, or it was reclaimed) though what it asks more
// than it holds fits what its
// member may still hold (total + borrowingLimit) and what the cohort has
// free, as the slices' offers and Quotas show them; "" if none.
func (wk *walk) stalled() string {
	held := map[string]int64{}
	var all int64
	type waiter struct {
		s    *walkSlice
		more int64
	}
	var waiters []waiter
	for _, s := range wk.slices {
		rs := get(wk.t, s.ref.ns, s.ref.name)
		var h int64
		if conditions.IsAccepted(rs) {
			h = rs.Status.Resources.Cpu().Value()
		}
		if q, ok := quotaCPU(s.ref.ns, s.ref.name); ok && q.Value() > h {
			h = q.Value()
		}
		held[s.member] += h
		all += h
		if c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources); c != nil && (c.Status == authv1beta1.ResourceSliceConditionDenied || h < s.cpu) {
			waiters = append(waiters, waiter{s, s.cpu - h})
		}
	}
	for _, w := range waiters {
		m := wk.members[w.s.member]
		if held[w.s.member]+w.more <= m.total+m.borrow && all+w.more <= walkCohortCPU {
			return fmt.Sprintf("%s waits for %d CPU more of %s, which holds %d of its %d (+%d borrowable), the cohort %d of %d: %s",
				w.s.ref.ns, w.more, w.s.member, held[w.s.member], m.total, m.borrow, all, walkCohortCPU, resourcesMessage(wk.t, w.s.ref))
		}
	}
	return ""
}

// state is every slice as the cluster shows it, for a failure message.
func (wk *walk) state() string {
	lines := make([]string, 0, len(wk.slices))
	for _, s := range wk.slices {
		q, ok := quotaCPU(s.ref.ns, s.ref.name)
		quota := "none"
		if ok {
			quota = q.String()
		}
		lines = append(lines, fmt.Sprintf("  %s (%s, asks %d, %d pods, Quota %s): %s", s.ref.ns, s.member, s.cpu, len(s.pods), quota,
			resourcesMessage(wk.t, s.ref)))
	}
	sort.Strings(lines)
	stopped := make([]string, 0, len(wk.stopped))
	for c := range wk.stopped {
		stopped = append(stopped, c)
	}
	sort.Strings(stopped)
	return fmt.Sprintf("stopped classes %v; slices:\n%s (deadline %s)", stopped, strings.Join(lines, "\n"), testwait.Timeout)
}
