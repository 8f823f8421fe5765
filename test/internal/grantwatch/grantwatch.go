// Package grantwatch is a test helper of this module: an independent
// observer that watches ResourceSlices, Liqo's Quotas and (for what pods
// use) ShadowPods on the API server and checks that a budget is never
// over-committed at any point of the cluster's history, and the way to run
// Liqo's own QuotaCreator beside a class controller. The integration and
// reliability suites share it.
//
// Each kind is its own watch, and one watch may deliver an event later
// than another delivers a later one: a check made as events arrive sees
// states the cluster never had (a waiter's admission before the deletion
// of the pod that made room for it). The Watcher therefore records every
// event and, in Check, replays them in the order of their
// resourceVersions, which on one etcd are revisions of a single counter,
// checking the invariant after each.
package grantwatch

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// Watcher records slice, Quota and (with WatchHolds) ShadowPod events and
// checks, in Check, that at every revision the slices it covers hold at
// most the limit (CPU): with Watch, the Quotas of live slices, and per
// live slice the larger of its Quota and its Accepted offer; with
// WatchHolds, per live slice the largest of its Accepted offer, its Quota
// and what its running ShadowPods request.
type Watcher struct {
	limit   resource.Quantity
	inScope func(*authv1beta1.ResourceSlice) bool
	pods    bool

	mu     sync.Mutex
	events []event
	// offers are the CPU offers each slice showed, in the order its watch
	// delivered them, each change once ("none" while not Accepted), with
	// the revision that showed it.
	offers map[string][]offerAt
	// seen is the newest revision recorded of each object (see catchUp).
	seen map[objectKey]uint64
	err  error

	// list lists what is watched, to see that the watches caught up.
	list func(ctx context.Context) ([]client.Object, error)
}

type objectKey struct {
	kind string
	key  types.NamespacedName
}

func keyOf(obj client.Object) objectKey {
	return objectKey{kind: fmt.Sprintf("%T", obj), key: client.ObjectKeyFromObject(obj)}
}

type offerAt struct {
	offer string
	rv    uint64
}

type event struct {
	rv  uint64
	typ watch.EventType
	obj client.Object
}

// Watch starts a Watcher on the slices and Quotas of namespace ns of the
// API server cfg reaches (scheme must hold Liqo's authentication and
// offloading types); it stops when the test ends.
func Watch(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, ns, limit string) *Watcher {
	t.Helper()
	w := newWatcher(limit, func(*authv1beta1.ResourceSlice) bool { return true })
	w.start(t, cfg, scheme, client.InNamespace(ns), &authv1beta1.ResourceSliceList{}, &offloadingv1beta1.QuotaList{})
	return w
}

// WatchHolds starts a Watcher on the slices of classes in every namespace,
// their Quotas and the ShadowPods their consumers run: a slice's pods are
// the running ShadowPods labelled liqo.io/creator-user with its Quota's
// user, charged their containers' CPU requests, as Liqo's webhook charges
// them (the tests' pods have no init containers).
func WatchHolds(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, limit string, classes ...string) *Watcher {
	t.Helper()
	served := map[string]bool{}
	for _, c := range classes {
		served[c] = true
	}
	w := newWatcher(limit, func(rs *authv1beta1.ResourceSlice) bool { return served[string(rs.Spec.Class)] })
	w.pods = true
	w.start(t, cfg, scheme, nil, &authv1beta1.ResourceSliceList{}, &offloadingv1beta1.QuotaList{}, &offloadingv1beta1.ShadowPodList{})
	return w
}

func newWatcher(limit string, inScope func(*authv1beta1.ResourceSlice) bool) *Watcher {
	return &Watcher{limit: resource.MustParse(limit), inScope: inScope, offers: map[string][]offerAt{}, seen: map[objectKey]uint64{}}
}

func (w *Watcher) start(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, in client.ListOption, lists ...client.ObjectList) {
	t.Helper()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var opts []client.ListOption
	if in != nil {
		opts = append(opts, in)
	}
	w.list = func(ctx context.Context) ([]client.Object, error) {
		var out []client.Object
		for _, list := range lists {
			l := list.DeepCopyObject().(client.ObjectList)
			if err := wc.List(ctx, l, opts...); err != nil {
				return nil, err
			}
			if err := meta.EachListItem(l, func(o runtime.Object) error {
				out = append(out, o.(client.Object))
				return nil
			}); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	var wg sync.WaitGroup
	for _, list := range lists {
		wi, err := wc.Watch(ctx, list, opts...)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range wi.ResultChan() {
				w.record(ev)
			}
		}()
		t.Cleanup(wi.Stop)
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

func (w *Watcher) record(ev watch.Event) {
	obj, ok := ev.Object.(client.Object)
	if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		w.err = fmt.Errorf("%T %s: resourceVersion %q is not an etcd revision: %w", obj, obj.GetName(), obj.GetResourceVersion(), err)
		return
	}
	if rs, ok := obj.(*authv1beta1.ResourceSlice); ok {
		if !w.inScope(rs) {
			return
		}
		if ev.Type != watch.Deleted {
			offer := offerOf(rs)
			if seen := w.offers[rs.Name]; len(seen) == 0 || seen[len(seen)-1].offer != offer {
				w.offers[rs.Name] = append(seen, offerAt{offer: offer, rv: rv})
			}
		}
	}
	w.events = append(w.events, event{rv: rv, typ: ev.Type, obj: obj})
	if k := keyOf(obj); rv > w.seen[k] {
		w.seen[k] = rv
	}
}

// catchUp waits until the watches have delivered, for every object a
// fresh list shows, the version it shows (a watch may lag the API
// server's answers the test acted on), for at most testwait.Timeout.
func (w *Watcher) catchUp(t *testing.T) {
	t.Helper()
	if w.list == nil {
		return // not started: nothing to wait for
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	var behind string
	for ctx.Err() == nil {
		objs, err := w.list(ctx)
		if err != nil {
			behind = err.Error()
		} else {
			behind = ""
			w.mu.Lock()
			for _, o := range objs {
				if rs, ok := o.(*authv1beta1.ResourceSlice); ok && !w.inScope(rs) {
					continue
				}
				rv, _ := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
				if w.seen[keyOf(o)] < rv {
					behind = fmt.Sprintf("%T %s at %d", o, client.ObjectKeyFromObject(o), rv)
					break
				}
			}
			w.mu.Unlock()
			if behind == "" {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("grant watcher: the watches did not catch up with the API server within %s: %s", testwait.Timeout, behind)
}

// CaughtUp waits until the watches have delivered what the API server
// shows now, so that OffersOf and OfferLog tell the whole story so far.
func (w *Watcher) CaughtUp(t *testing.T) {
	t.Helper()
	w.catchUp(t)
}

func offerOf(rs *authv1beta1.ResourceSlice) string {
	if !conditions.IsAccepted(rs) {
		return "none"
	}
	return rs.Status.Resources.Cpu().String()
}

// OffersOf are the CPU offers the slice name showed, each change once
// ("none" while not Accepted).
func (w *Watcher) OffersOf(name string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, len(w.offers[name]))
	for i, o := range w.offers[name] {
		out[i] = o.offer
	}
	return out
}

// OfferLog is OffersOf with the revision that showed each offer
// ("none@12, 8@15, ..."), to place them among a test's other events.
func (w *Watcher) OfferLog(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	parts := make([]string, len(w.offers[name]))
	for i, o := range w.offers[name] {
		parts[i] = fmt.Sprintf("%s@%d", o.offer, o.rv)
	}
	return strings.Join(parts, ", ")
}

// Check waits for the watches to catch up with the API server (CaughtUp),
// then replays the events recorded in revision order and fails the
// test if the slices ever held more than the limit; it logs how many
// events were replayed and the peak.
func (w *Watcher) Check(t *testing.T) {
	t.Helper()
	w.catchUp(t)
	w.mu.Lock()
	events := append([]event(nil), w.events...)
	err := w.err
	w.mu.Unlock()
	require.NoError(t, err)
	violations, peak, first := w.replay(events)
	if len(violations) > 0 {
		// What led to it, to find the path without a second run.
		t.Logf("grant watcher: the events up to the first over-commit, in revision order:\n%s", timeline(events, first, timelineBefore))
	}
	what := "offers and Quotas"
	if w.pods {
		what = "offers, Quotas and pods in use"
	}
	assert.Empty(t, violations, "the budget was over-committed counting %s (%d events replayed in revision order)", what, len(events))
	t.Logf("grant watcher: %d events, peak held %s of %s CPU (%s)", len(events), peak.String(), w.limit.String(), what)
}

// timelineBefore is how many events before the first over-commit Check
// logs.
const timelineBefore = 80

// timeline is one line per event of events, in revision order, from the
// before events preceding revision upTo to upTo: its revision, type, kind,
// name, and for a slice its Resources condition and offer, for a Quota its
// CPU.
func timeline(events []event, upTo uint64, before int) string {
	events = append([]event(nil), events...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].rv < events[j].rv })
	end := sort.Search(len(events), func(i int) bool { return events[i].rv > upTo })
	var b strings.Builder
	for _, ev := range events[max(0, end-before):end] {
		fmt.Fprintf(&b, "  %d %s ", ev.rv, ev.typ)
		switch o := ev.obj.(type) {
		case *authv1beta1.ResourceSlice:
			reason, msg := "-", ""
			if c := conditions.Get(o, authv1beta1.ResourceSliceConditionTypeResources); c != nil {
				reason, msg = string(c.Status)+"/"+c.Reason, c.Message
			}
			fmt.Fprintf(&b, "slice %s uid %.8s %s offer %s %.120q\n", o.Name, o.UID, reason, offerOf(o), msg)
		case *offloadingv1beta1.Quota:
			owner := "-"
			if ref := metav1.GetControllerOf(o); ref != nil {
				owner = string(ref.UID)
			}
			fmt.Fprintf(&b, "quota %s owner %.8s cpu %s\n", o.Name, owner, o.Spec.Resources.Cpu().String())
		case *offloadingv1beta1.ShadowPod:
			fmt.Fprintf(&b, "shadowpod %s user %s phase %s\n", o.Name, o.Labels["liqo.io/creator-user"], o.Status.Phase)
		default:
			fmt.Fprintf(&b, "%T %s\n", ev.obj, ev.obj.GetName())
		}
	}
	return b.String()
}

// Timeline is every event recorded so far, one line each in revision
// order (see Check's log of an over-commit), for a test to log what led
// to a state it did not expect.
func (w *Watcher) Timeline() string {
	w.mu.Lock()
	events := append([]event(nil), w.events...)
	w.mu.Unlock()
	return timeline(events, ^uint64(0), len(events))
}

// replay applies events in revision order and says, after each, whether
// the slices held more than the limit; it returns those violations, the
// most they held and the revision of the first violation.
func (w *Watcher) replay(events []event) (violations []string, peak resource.Quantity, first uint64) {
	events = append([]event(nil), events...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].rv < events[j].rv })
	s := state{
		slices: map[types.NamespacedName]*authv1beta1.ResourceSlice{},
		quotas: map[types.NamespacedName]*offloadingv1beta1.Quota{},
		pods:   map[types.NamespacedName]*offloadingv1beta1.ShadowPod{},
	}
	for _, ev := range events {
		s.apply(ev)
		quotas, held, who := s.held(w.pods)
		if held.Cmp(peak) > 0 {
			peak = held
		}
		if held.Cmp(w.limit) > 0 || quotas.Cmp(w.limit) > 0 {
			if len(violations) == 0 {
				first = ev.rv
			}
			violations = append(violations, fmt.Sprintf("at revision %d (%s %T %s): Quotas of live slices enforce %s CPU, the slices hold %s, budget %s (%s)",
				ev.rv, ev.typ, ev.obj, ev.obj.GetName(), quotas.String(), held.String(), w.limit.String(), strings.Join(who, ", ")))
		}
	}
	return violations, peak, first
}

// state is the cluster as the replay has reached it.
type state struct {
	slices map[types.NamespacedName]*authv1beta1.ResourceSlice
	quotas map[types.NamespacedName]*offloadingv1beta1.Quota
	pods   map[types.NamespacedName]*offloadingv1beta1.ShadowPod
}

func (s *state) apply(ev event) {
	key := client.ObjectKeyFromObject(ev.obj)
	gone := ev.typ == watch.Deleted
	switch o := ev.obj.(type) {
	case *authv1beta1.ResourceSlice:
		put(s.slices, key, o, gone)
	case *offloadingv1beta1.Quota:
		put(s.quotas, key, o, gone)
	case *offloadingv1beta1.ShadowPod:
		put(s.pods, key, o, gone)
	}
}

func put[T any](m map[types.NamespacedName]T, key types.NamespacedName, o T, gone bool) {
	if gone {
		delete(m, key)
		return
	}
	m[key] = o
}

// held sums the CPU the Quotas of live slices enforce, and per live slice
// the largest of its Quota, its Accepted offer and (with pods) what its
// running pods request; who names each slice that holds something.
func (s *state) held(pods bool) (quotas, held resource.Quantity, who []string) {
	for key, rs := range s.slices {
		most := resource.Quantity{}
		if conditions.IsAccepted(rs) {
			most = rs.Status.Resources.Cpu().DeepCopy()
		}
		quota, use := "none", resource.Quantity{}
		for _, q := range s.quotas {
			owner := metav1.GetControllerOf(q)
			if q.Namespace != key.Namespace || owner == nil || owner.UID != rs.UID {
				continue
			}
			c := q.Spec.Resources.Cpu()
			quotas.Add(*c)
			quota = c.String()
			if c.Cmp(most) > 0 {
				most = c.DeepCopy()
			}
			if pods {
				use.Add(s.inUse(q.Spec.User))
			}
		}
		if use.Cmp(most) > 0 {
			most = use
		}
		held.Add(most)
		if !most.IsZero() {
			who = append(who, fmt.Sprintf("%s offer %s Quota %s in use %s", key, offerOf(rs), quota, use.String()))
		}
	}
	sort.Strings(who)
	return quotas, held, who
}

// inUse is the CPU the running ShadowPods of user request.
func (s *state) inUse(user string) resource.Quantity {
	var use resource.Quantity
	for _, p := range s.pods {
		if p.Labels["liqo.io/creator-user"] != user || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Pod.Containers {
			use.Add(*c.Resources.Requests.Cpu())
		}
	}
	return use
}

// RunLiqoQuotas registers Liqo v1.2.0's own QuotaCreatorReconciler in mgr
// (envkit.AddLiqoQuotaCreator): a Quota (Hard limits) for each Accepted
// replicated slice, which is what the grants a Watcher checks are made of.
func RunLiqoQuotas(mgr manager.Manager) error {
	return envkit.AddLiqoQuotaCreator(mgr)
}
