package slicetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/budgethook"
	"github.com/sliceclass/sliceclass/internal/classhook"
	"github.com/sliceclass/sliceclass/internal/sdkscheme"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// Event is an event the reconciler recorded.
type Event struct {
	Type   string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason string
	Action string
	Note   string
	Object types.NamespacedName
}

// Write is one mutating API call the reconciler made, and its outcome.
type Write struct {
	Verb        string // "create", "update", "patch", "delete"
	Subresource string // "status" for status writes, "" for the object
	Object      types.NamespacedName
	Patch       string // the patch body, for patches
	// Err is what the API answered: nil when it accepted the write, else the
	// error, such as one injected with WithStatusWriteErrors (a Conflict()
	// is a write that was attempted and refused). Count accepted writes with
	// Err == nil; count attempts with len.
	Err error
}

// Result is what one reconcile did.
type Result struct {
	// Slice is the slice as stored after the reconcile (nil if it is gone).
	Slice *authv1beta1.ResourceSlice
	// Decision is the Resources condition's status ("" when undecided), with
	// its Reason and Message.
	Decision authv1beta1.ResourceSliceConditionStatus
	Reason   string
	Message  string
	// Resources is the stored status.resources.
	Resources corev1.ResourceList
	// Events recorded during this reconcile.
	Events []Event
	// Writes attempted during this reconcile, in order, each with its
	// outcome (Write.Err); a decided, unchanged slice has none.
	Writes []Write
	// Applied and Pruned are the objects a handler.Owner's set made the SDK
	// apply (server-side apply, when the content of an object changed or the
	// object changed or went since its last apply) and
	// delete (pruned from the set, or removed when the slice stopped being
	// Accepted), each as "Kind namespace/name" ("Kind name" when
	// cluster-scoped), in order. With WithDryRun nothing is applied or
	// deleted, and both are empty. They are not in Writes.
	Applied, Pruned []string
	// Result and Err are what Reconcile returned.
	Result ctrl.Result
	Err    error
}

// Option configures a Harness.
type Option func(*Harness)

// WithObjects seeds the fake API with objects (slices, Tenants, ...).
func WithObjects(objs ...client.Object) Option {
	return func(h *Harness) { h.seed = append(h.seed, objs...) }
}

// WithReconcilerOptions passes options to New's class: decision options
// only, since the harness runs the controller itself (a controller option,
// such as resourceslice.WithMaxConcurrentReconciles, does not compile here).
func WithReconcilerOptions(opts ...resourceslice.DecisionOption) Option {
	return func(h *Harness) { h.ropts = append(h.ropts, opts...) }
}

// WithAnotherClass adds class, decided by h with opts, to the harness: it is set
// up in the same manager and class set as New's class, as a manager's main
// serves a second class of its set. Classes drawing from one
// *budget.Budget (resourceslice.WithBudget) share it as in production:
// each counts the others' slices, a waiter of one may be woken by a
// release of the other, and with
// budget.WithPreemption a higher resourceslice.WithPriority reclaims from
// a lower one. Harness.Reconcile reconciles a slice with the class its
// spec.class names.
func WithAnotherClass(class string, h handler.Handler, opts ...resourceslice.DecisionOption) Option {
	return func(hs *Harness) { hs.more = append(hs.more, classSpec{class: class, h: h, opts: opts}) }
}

// WithStatusWriteErrors makes the next status writes fail with errs, one
// each, in order; a nil entry lets that write through. A SliceBudget's
// status writes (Harness.SliceBudget) take none. Use Conflict() for a
// concurrent writer, AnswerLost(err) for a write applied whose answer is
// lost, or any API error.
func WithStatusWriteErrors(errs ...error) Option {
	return func(h *Harness) { h.statusErrs = append(h.statusErrs, errs...) }
}

// Conflict returns the error the API server answers when a write carries a
// stale resourceVersion.
func Conflict() error {
	return apierrors.NewConflict(schema.GroupResource{Group: authv1beta1.GroupVersion.Group, Resource: authv1beta1.ResourceSliceResource},
		"slice", fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}

// AnswerLost returns a status-write error for WithStatusWriteErrors that
// the harness answers after applying the write: the API server applied it,
// and the answer (err, e.g. a 503 or a timeout) was lost on the way back.
// A budget must keep counting such a write until the slice shows it was
// applied, and a retry from the old version must not drop it.
func AnswerLost(err error) error {
	if err == nil {
		err = apierrors.NewServiceUnavailable("the answer was lost")
	}
	return answerLost{err}
}

type answerLost struct{ error }

func (a answerLost) Unwrap() error { return a.error }

// Harness runs the real reconciler of one class, or of
// several (WithAnotherClass), on controller-runtime's fake client, set up the way
// a manager sets a class up (see New), and records what they did. It is
// safe for use by one test goroutine.
type Harness struct {
	// Client is the fake client the reconciler reads and writes through; use
	// it to change the world between reconciles (e.g. drain a Tenant). The
	// test's own writes through it are in no Result, but a status write
	// still takes the next error queued by WithStatusWriteErrors. The
	// reconcilers read through it, so they see a change at once; what
	// watches (the budgets, the Tenant index, the controllers' queues)
	// sees it as a watch event at the next Reconcile or ReconcilePending.
	// A SliceBudget's metadata.generation advances when its spec changes,
	// as the API server advances it (the fake client alone does not). A
	// slice created through it in its consumer's tenant namespace
	// (WithConsumer) finds that namespace made, as a seeded one does.
	Client client.Client

	t          testing.TB
	seed       []client.Object
	ropts      []resourceslice.DecisionOption
	more       []classSpec
	statusErrs []error
	// sbSeeds are the SliceBudgets WithSliceBudget gave; sliceBudgets,
	// their budgets by name. setupErrs are the options' errors, which
	// fail the test in New.
	sbSeeds      []sliceBudgetSeed
	sliceBudgets map[string]*followedBudget
	setupErrs    []error
	// classes are New's class, then WithAnotherClass's, in order.
	classes []*harnessClass
	cache   *watchCache
	// feeds are the feeds of the budgets the classes draw from, whose
	// timers the harness runs itself (harness_timers.go).
	feeds []budgethook.Feed

	mu     sync.Mutex
	events []Event
	writes []Write
	// applied and pruned name owned objects (Result.Applied, Result.Pruned).
	applied, pruned []string
	// unsettled are the status writes whose answer did not say whether
	// they were applied (ReadBackUnansweredWrites).
	unsettled []unsettledWrite
	// lastClass is the class that last reconciled each slice.
	lastClass map[types.NamespacedName]string
}

// New builds a Harness serving class with h. It fails the test on a setup
// error (e.g. a reserved class).
//
// Each class is set up as in a manager, in one resourceslice.ClassSet
// that all of the harness's classes share, by the one builder AddToManager
// and ClassSet.Serve use, on the fake client and a controller builder of
// the harness's own, which wires what AddToManager and ClassSet.Serve wire (the budgets' feeds, which count the slices of every class drawing from
// a budget and Liqo's Quotas seeded in the fake API; the Tenant index; the
// namespaces' consumers; the status.class view, which finds no
// status.class, as on Liqo v1.2.0's CRD) and starts the controller. The harness holds the controller's
// queue: a reconcile happens when the test asks (Reconcile,
// ReconcilePending), through the controller that builder built, as a
// worker's does. Before and after each reconcile the cache delivers,
// as watch events, every change made on the fake API server since the
// last one. Status writes go through the fake client (a class AddToManager
// builds sends the same patch over REST and reads only the answer's
// resourceVersion). The inventory and owned-object sweeps a manager runs
// at start do not run on their own: drive them with
// Harness.SweepInventory. The controllers stop at the end of the test
// (t.Cleanup).
func New(t testing.TB, class string, h handler.Handler, opts ...Option) *Harness {
	t.Helper()
	hs := &Harness{t: t, lastClass: map[types.NamespacedName]string{}}
	for _, o := range opts {
		o(hs)
	}
	specs := append([]classSpec{{class: class, h: h, opts: hs.ropts}}, hs.more...)
	if err := errors.Join(append(hs.setupErrs, hs.checkSliceBudgets(specs))...); err != nil {
		t.Fatalf("slicetest: %v", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatalf("slicetest: building scheme: %v", err)
	}
	// What the SDK reads and writes (Liqo's slices, Tenants and Quotas,
	// SliceBudgets, Leases), as a user's main adds it: the SDK never adds
	// to a scheme. Quotas are served, so that a test may seed one;
	// ShadowPods are not (see harnessManager).
	if err := sdkscheme.Add(scheme); err != nil {
		t.Fatalf("slicetest: building scheme: %v", err)
	}
	// Liqo makes a consumer's tenant namespace before any of its slices:
	// the namespace of a seeded slice's consumer (WithConsumer), unless
	// the test seeds it.
	hs.seed = append(hs.seed, tenantNamespaces(hs.seed)...)
	// The fake client gives seeded objects no UID; the API server always
	// does, and the SDK keys owned objects and budgets on it.
	for _, o := range hs.seed {
		if o.GetUID() == "" {
			o.SetUID(types.UID("uid-" + o.GetNamespace() + "-" + o.GetName()))
		}
	}
	// The scope of Kubernetes' own types, so that a handler.Owner's
	// cluster-scoped objects (a PriorityClass) are told apart.
	mapper := testrestmapper.TestOnlyStaticRESTMapper(scheme)
	base := fake.NewClientBuilder().
		WithScheme(scheme).
		WithRESTMapper(mapper).
		WithStatusSubresource(&authv1beta1.ResourceSlice{}, &authv1beta1.Tenant{}, &v1alpha1.SliceBudget{}).
		// The budget feed settles a lost answer with a list by name.
		WithIndex(&authv1beta1.ResourceSlice{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).
		WithObjects(hs.seed...).
		WithInterceptorFuncs(hs.interceptors()).
		Build()
	hs.Client = base
	hs.cache = newWatchCache(scheme, base)
	mgr := &harnessManager{
		scheme: scheme, mapper: mapper, api: heldSettles{Reader: base}, cache: hs.cache,
		client:  base,
		logger:  testr.NewWithInterface(t, testr.Options{}),
		events:  recorder{hs},
		http:    &http.Client{Transport: discovery{}},
		elected: make(chan struct{}),
	}
	close(mgr.elected)

	// One registry for the harness, as a manager has one: parallel tests
	// do not share counters.
	registry := prometheus.NewRegistry()
	if err := hs.setUpSliceBudgets(mgr, specs); err != nil {
		t.Fatalf("slicetest: %v", err)
	}
	// One set for the harness's classes, as a user's main builds one for
	// a manager's: they share its status.class view and ShadowPod watch.
	set, err := resourceslice.NewClassSet(mgr)
	if err != nil {
		t.Fatalf("slicetest: %v", err)
	}
	for _, sp := range specs {
		hc, err := hs.setUp(mgr, set, sp, registry)
		if err != nil {
			t.Fatalf("slicetest: %v", err)
		}
		hs.classes = append(hs.classes, hc)
	}
	hs.holdBudgetTimers(mgr)

	ctx, cancel := context.WithCancel(context.Background())
	wait := mgr.start(ctx)
	t.Cleanup(func() {
		cancel()
		wait()
	})
	for _, c := range hs.classes {
		select {
		case <-c.q.waiting:
		case <-time.After(time.Minute):
			t.Fatalf("slicetest: the controller of class %q did not start", c.class)
		}
	}
	hs.waitSliceBudgets()
	hs.waitFeeds()
	return hs
}

// tenantNamespaces are the tenant namespaces of the seeded slices'
// consumers (tenantNamespaceOf) that seed does not hold, each once.
func tenantNamespaces(seed []client.Object) []client.Object {
	have := map[string]bool{}
	for _, o := range seed {
		if _, ok := o.(*corev1.Namespace); ok || o.GetObjectKind().GroupVersionKind().Kind == "Namespace" {
			have[o.GetName()] = true
		}
	}
	var out []client.Object
	for _, o := range seed {
		rs, ok := o.(*authv1beta1.ResourceSlice)
		if !ok {
			continue
		}
		if ns := tenantNamespaceOf(rs); ns != nil && !have[ns.Name] {
			have[ns.Name] = true
			out = append(out, ns)
		}
	}
	return out
}

// classSpec is a class to set up: New's, or one WithAnotherClass added.
type classSpec struct {
	class string
	h     handler.Handler
	opts  []resourceslice.DecisionOption
}

// harnessClass is a class set up in the harness's manager.
type harnessClass struct {
	class string
	r     classhook.Class
	// do is the controller the class's setup added to the manager: a
	// reconcile goes through it (its shutdown policy), as a worker's does,
	// to r.
	do reconcile.Reconciler
	q  *pendingQueue
}

// setUp builds sp's Reconciler and sets it up in set, of mgr, with the
// harness's event capture and registry before the test's options.
func (h *Harness) setUp(mgr *harnessManager, set *resourceslice.ClassSet, sp classSpec, registry prometheus.Registerer) (*harnessClass, error) {
	ropts := append([]resourceslice.DecisionOption{
		resourceslice.WithMetricsRegisterer(registry),
	}, sp.opts...)
	q := newPendingQueue()
	b := builder.ControllerManagedBy(mgr).WithOptions(controller.Options{
		NewQueue: func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
			return q
		},
	})
	before := mgr.added()
	anyOpts := make([]any, len(ropts))
	for i, o := range ropts {
		anyOpts[i] = o
	}
	r, err := classhook.Build(mgr.client, sp.class, sp.h, recorder{h}, anyOpts, set, b)
	if err != nil {
		return nil, err
	}
	for _, run := range mgr.addedSince(before) {
		if do, ok := run.(reconcile.Reconciler); ok {
			return &harnessClass{class: sp.class, r: r, do: do, q: q}, nil
		}
	}
	return nil, fmt.Errorf("class %q: setting up the class added no controller to the manager", sp.class)
}

// Reconcile runs the reconciler once for slice (only its namespace and
// name are used) and returns what it did. The class that reconciles it is
// the one its stored spec.class names among the harness's classes (for a
// slice gone, the one that last reconciled it), else New's class.
func (h *Harness) Reconcile(slice *authv1beta1.ResourceSlice) Result {
	h.t.Helper()
	key := types.NamespacedName{Namespace: slice.Namespace, Name: slice.Name}
	return h.reconcile(h.classOf(key), key)
}

// ReconcilePending reconciles, one at a time and in the order they came,
// the slices the harness's controllers have queued since they started and
// not reconciled yet: slices whose watch events passed a class's
// predicates (a create, a change made through Client, a Tenant drained),
// and those the SDK queued itself (a budget's waiter woken when capacity
// frees, a slice a reclaim shrinks). It repeats until no slice is pending
// and no budget has a re-check pending, and returns each reconcile's
// Result in order. A budget re-checks its waiting slices shortly after a
// change that may alter what blocks them (in a manager, about 50 ms
// later, on a timer): the harness holds those timers, and runs each
// pending re-check once the queues are empty, so that when
// ReconcilePending returns every waiting slice's condition names what
// blocks it now, with no sleep. A RequeueAfter or an error does not queue
// the slice again: reconcile it again to play a retry. It fails the test
// after 1000 reconciles.
func (h *Harness) ReconcilePending() []Result {
	h.t.Helper()
	var out []Result
	for n := 0; ; n++ {
		h.sync()
		c, req, ok := h.nextPending()
		if !ok && h.runBudgetRechecks() {
			n--
			continue // the re-checks may have woken waiters
		}
		if !ok {
			return out
		}
		if n == 1000 {
			h.t.Fatalf("slicetest: still reconciling pending slices after 1000 reconciles (last %s)", req.NamespacedName)
		}
		out = append(out, h.reconcile(c, req.NamespacedName))
	}
}

func (h *Harness) nextPending() (*harnessClass, reconcile.Request, bool) {
	for _, c := range h.classes {
		if req, ok := c.q.take(); ok {
			return c, req, true
		}
	}
	return nil, reconcile.Request{}, false
}

// classOf is the harness's class that serves the slice key as stored or,
// once it is gone, as it was last reconciled (its deletion is that class's
// to see: a release hook, what it held).
func (h *Harness) classOf(key types.NamespacedName) *harnessClass {
	var stored authv1beta1.ResourceSlice
	name := ""
	if err := h.Client.Get(context.Background(), key, &stored); err == nil {
		name = string(stored.Spec.Class)
	} else {
		h.mu.Lock()
		name = h.lastClass[key]
		h.mu.Unlock()
	}
	for _, c := range h.classes {
		if c.class == name {
			return c
		}
	}
	return h.classes[0]
}

// sync delivers the watch events of every change since the last sync.
func (h *Harness) sync() {
	h.t.Helper()
	if err := h.cache.sync(context.Background()); err != nil {
		h.t.Fatalf("slicetest: delivering watch events: %v", err)
	}
}

func (h *Harness) reconcile(c *harnessClass, key types.NamespacedName) Result {
	h.t.Helper()
	h.sync()
	req := reconcile.Request{NamespacedName: key}
	c.q.drop(req)
	h.mu.Lock()
	e0, w0, a0, p0 := len(h.events), len(h.writes), len(h.applied), len(h.pruned)
	h.lastClass[key] = c.class
	h.mu.Unlock()

	res, err := c.do.Reconcile(context.Background(), req)
	h.sync()

	out := Result{Result: res, Err: err}
	h.mu.Lock()
	out.Events = append(out.Events, h.events[e0:]...)
	out.Writes = append(out.Writes, h.writes[w0:]...)
	out.Applied = append(out.Applied, h.applied[a0:]...)
	out.Pruned = append(out.Pruned, h.pruned[p0:]...)
	h.mu.Unlock()

	var stored authv1beta1.ResourceSlice
	switch gerr := h.Client.Get(context.Background(), key, &stored); {
	case gerr == nil:
		out.Slice = &stored
		if c := conditions.Get(&stored, authv1beta1.ResourceSliceConditionTypeResources); c != nil {
			out.Decision, out.Reason, out.Message = c.Status, c.Reason, c.Message
		}
		out.Resources = stored.Status.Resources
	case !apierrors.IsNotFound(gerr):
		h.t.Fatalf("slicetest: reading back %s: %v", key, gerr)
	}
	return out
}

// AssertIdempotent reconciles slice again and fails the test if that wrote
// anything or changed the decision: a decided slice must cost no API call.
func (h *Harness) AssertIdempotent(slice *authv1beta1.ResourceSlice) {
	h.t.Helper()
	first := h.Reconcile(slice)
	second := h.Reconcile(slice)
	if len(second.Writes) != 0 {
		h.t.Errorf("slicetest: reconciling %s/%s again wrote %d times, want 0: %+v", slice.Namespace, slice.Name, len(second.Writes), second.Writes)
	}
	if first.Decision != second.Decision || first.Reason != second.Reason {
		h.t.Errorf("slicetest: reconciling %s/%s again changed the decision from %s/%s to %s/%s",
			slice.Namespace, slice.Name, first.Decision, first.Reason, second.Decision, second.Reason)
	}
}

// record saves w with its outcome err and returns err.
func (h *Harness) record(w Write, err error) error {
	w.Err = err
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writes = append(h.writes, w)
	return err
}

func (h *Harness) nextStatusErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.statusErrs) == 0 {
		return nil
	}
	err := h.statusErrs[0]
	h.statusErrs = h.statusErrs[1:]
	return err
}

func (h *Harness) interceptors() interceptor.Funcs {
	key := client.ObjectKeyFromObject
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if rs, ok := obj.(*authv1beta1.ResourceSlice); ok {
				// As for a seeded slice: its consumer's tenant namespace
				// first, unless it exists (not a write of the reconcile's).
				if ns := tenantNamespaceOf(rs); ns != nil {
					if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
						return err
					}
				}
			}
			createGeneration(obj)
			w := Write{Verb: "create", Object: key(obj)}
			return h.record(w, c.Create(ctx, obj, opts...))
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			updateGeneration(ctx, c, obj)
			w := Write{Verb: "update", Object: key(obj)}
			return h.record(w, c.Update(ctx, obj, opts...))
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			data, _ := p.Data(obj)
			w := Write{Verb: "patch", Object: key(obj), Patch: string(data)}
			return h.record(w, patchGeneration(ctx, c, obj, func() error { return c.Patch(ctx, obj, p, opts...) }))
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, slice := obj.(*authv1beta1.ResourceSlice); !slice && obj.GetObjectKind().GroupVersionKind().Kind != authv1beta1.ResourceSliceKind {
				err := c.Delete(ctx, obj, opts...)
				if err == nil {
					h.mu.Lock()
					h.pruned = append(h.pruned, objectName(obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName()))
					h.mu.Unlock()
				}
				return err
			}
			w := Write{Verb: "delete", Object: key(obj)}
			return h.record(w, c.Delete(ctx, obj, opts...))
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			err := c.Apply(ctx, obj, opts...)
			if err == nil {
				var meta struct {
					Kind     string `json:"kind"`
					Metadata struct {
						Name      string `json:"name"`
						Namespace string `json:"namespace"`
					} `json:"metadata"`
				}
				if data, merr := json.Marshal(obj); merr == nil && json.Unmarshal(data, &meta) == nil {
					h.mu.Lock()
					h.applied = append(h.applied, objectName(meta.Kind, meta.Metadata.Namespace, meta.Metadata.Name))
					h.mu.Unlock()
				}
			}
			return err
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w := Write{Verb: "update", Subresource: sub, Object: key(obj)}
			if err := h.nextStatusErr(); err != nil {
				return h.record(w, err)
			}
			return h.record(w, c.SubResource(sub).Update(ctx, obj, opts...))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := obj.(*v1alpha1.SliceBudget); ok {
				// A budget's status write (Harness.SliceBudget): no
				// reconcile's, and no injected error is for it.
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			}
			data, _ := p.Data(obj)
			w := Write{Verb: "patch", Subresource: sub, Object: key(obj), Patch: string(data)}
			err := h.nextStatusErr()
			var lost answerLost
			switch {
			case errors.As(err, &lost):
				if perr := c.SubResource(sub).Patch(ctx, obj, p, opts...); perr != nil {
					return h.record(w, perr)
				}
				err = lost.error
			case err == nil:
				err = c.SubResource(sub).Patch(ctx, obj, p, opts...)
			}
			h.noteUnsettled(w.Object, data, err)
			return h.record(w, err)
		},
	}
}

// objectName is how Result names an owned object.
func objectName(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}

// recorder captures events into the harness.
type recorder struct{ h *Harness }

var _ events.EventRecorder = recorder{}

func (r recorder) Eventf(regarding, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	e := Event{Type: eventtype, Reason: reason, Action: action, Note: fmt.Sprintf(note, args...)}
	if o, ok := regarding.(client.Object); ok {
		e.Object = client.ObjectKeyFromObject(o)
	}
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	r.h.events = append(r.h.events, e)
}
