package resourceslice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/feed"
	"github.com/sliceclass/sliceclass/internal/sliceview"
)

// What a manager's classes share, in one object per manager: the classes
// it serves (claims), its status.class view, and whether it started (for
// addTypes, which adds Liqo's types to the user's scheme only before). What
// a budget holds (its feed and ShadowPod cache) hangs off the budget
// (internal/feed); namespaces and slices come from the manager's own cache
// (each class reads the namespace informer's store, sliceview.Namespaces).
// It is made the first time the SDK meets the manager, and it goes with
// the manager: it is a runnable of the manager, which empties it when
// the manager stops, and the manager is the only thing that holds it.
//
// How it is found again. A controller-runtime manager has no slot for a
// library's state, and a package-level map keyed by manager would keep
// every manager's companions for the life of the process. The one
// per-manager registry the Manager interface offers is its converter
// registry (GetConverterRegistry), a map from a GroupKind to a value that
// lives exactly as long as the manager: the companions are registered there
// under companionsKind, a GroupKind of the SDK's own that no API server
// serves, so the conversion webhook (which looks converters up by the kind
// of the object a ConversionReview carries) can never reach it. As with
// controller-runtime's own builders, which write that registry too, the
// SDK's registrations in one manager (AddToManager, NewClassSet,
// SetupWithManager, AddUnservedReporter) are made before the manager
// starts, from one goroutine; ClassSet.Serve, which may run later and from
// any goroutine, uses the companions its NewClassSet found.

// companionsKind is the key of a manager's companions in its converter
// registry.
var companionsKind = schema.GroupKind{Group: "companions.sliceclass.io", Kind: "ManagerCompanions"}

// companions is one manager's shared state; see above.
type companions struct {
	mgr manager.Manager

	mu sync.Mutex
	// claims are the classes the manager serves: a class registered twice
	// is refused at registration, with no API call.
	claims map[string]bool
	// views is the status.class view, built on first use.
	views *sliceview.Classes
	// started is set when the manager started: its caches read the
	// scheme, which addTypes then leaves alone.
	started bool
	// stopped is set when the manager stopped: nothing is kept any more.
	stopped bool
}

var _ manager.Runnable = &companions{}

// companionsOf returns mgr's companions, made and added to mgr on first use.
func companionsOf(mgr manager.Manager) (*companions, error) {
	reg := mgr.GetConverterRegistry()
	if reg == nil {
		return nil, errors.New("the manager has no converter registry, where the SDK keeps what the manager's classes share")
	}
	if c, ok := reg.GetConverter(companionsKind); ok {
		mc, ok := c.(*companions)
		if !ok {
			return nil, fmt.Errorf("the manager's converter registry holds a %T under %s, which the SDK keeps for itself", c, companionsKind)
		}
		return mc, nil
	}
	mc := &companions{
		mgr:    mgr,
		claims: map[string]bool{},
	}
	if err := mgr.Add(mc); err != nil {
		return nil, fmt.Errorf("adding the classes' shared state to the manager: %w", err)
	}
	if err := reg.RegisterConverter(companionsKind, mc); err != nil {
		return nil, fmt.Errorf("keeping the classes' shared state in the manager: %w", err)
	}
	return mc, nil
}

// ConvertObject implements conversion.Converter, the type of the registry
// the companions are kept in; nothing converts through it.
func (*companions) ConvertObject(context.Context, runtime.Object, runtime.Object) error {
	return errors.New("sliceclass keeps a manager's shared state in its converter registry: nothing converts through it")
}

// Start implements manager.Runnable: when the manager stops, the
// companions let go of the caches and the feed host (they stopped with the
// manager). Claims and feeds are given back by their classes as each
// stops, once its decisions have returned.
func (mc *companions) Start(ctx context.Context) error {
	mc.mu.Lock()
	mc.started = true
	mc.mu.Unlock()
	<-ctx.Done()
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mc.stopped = true
	mc.views = nil
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the state
// is the manager's, on every replica.
func (*companions) NeedLeaderElection() bool { return false }

// size is how many things the companions hold: the claims and the
// status.class view.
func (mc *companions) size() int {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	n := len(mc.claims)
	if mc.views != nil {
		n++
	}
	return n
}

// claim records that the manager serves class.
func (mc *companions) claim(class string) error {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.claims[class] {
		return fmt.Errorf("class %q: %w", class, ErrClassRegistered)
	}
	mc.claims[class] = true
	return nil
}

func (mc *companions) unclaim(class string) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	delete(mc.claims, class)
}

// addTypes adds to the manager's scheme what the SDK reads and writes and
// the scheme lacks: Liqo's authentication types (ResourceSlice, Tenant),
// Liqo's Quota, and coordination/v1 when leases is set (class Leases and
// the unserved reporter read and write Leases through the manager's
// client). It does so only before the manager starts, one registration at
// a time: once started, the manager's caches read the scheme, so a missing
// type is an error that says what to add, and the scheme is not touched.
func (mc *companions) addTypes(leases bool) error {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	scheme := mc.mgr.GetScheme()
	type want struct {
		what string
		kind schema.GroupVersionKind
		add  func(*runtime.Scheme) error
	}
	wants := []want{
		{"Liqo's authentication/v1beta1 (authv1beta1.AddToScheme)", authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind), authv1beta1.AddToScheme},
		{"Liqo's authentication/v1beta1 (authv1beta1.AddToScheme)", authv1beta1.GroupVersion.WithKind(authv1beta1.TenantKind), authv1beta1.AddToScheme},
		{"Liqo's offloading/v1beta1 Quota", offloadingv1beta1.SchemeGroupVersion.WithKind(feed.QuotaKind.Kind), func(s *runtime.Scheme) error { feed.AddQuotaTypes(s); return nil }},
	}
	if leases {
		wants = append(wants, want{"coordination/v1 (coordinationv1.AddToScheme)", coordinationv1.SchemeGroupVersion.WithKind("Lease"), coordinationv1.AddToScheme})
	}
	var missing []want
	for _, w := range wants {
		if !scheme.Recognizes(w.kind) {
			missing = append(missing, w)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if mc.started {
		var names []string
		for _, w := range missing {
			if !slices.Contains(names, w.what) {
				names = append(names, w.what)
			}
		}
		return fmt.Errorf("the manager's scheme lacks %s and the manager has started: its caches read the scheme, "+
			"so the SDK does not change it now; add them to the scheme before starting the manager", strings.Join(names, ", "))
	}
	for _, w := range missing {
		if scheme.Recognizes(w.kind) { // added with an earlier kind of its group
			continue
		}
		if err := w.add(scheme); err != nil {
			return fmt.Errorf("adding %s to the manager's scheme: %w", w.what, err)
		}
	}
	return nil
}

// statusClasses returns the manager's status.class view, built on first use.
func (mc *companions) statusClasses() (*sliceview.Classes, error) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.views != nil {
		return mc.views, nil
	}
	if mc.stopped {
		return nil, errors.New("the manager stopped")
	}
	v, err := sliceview.NewClasses(mc.mgr)
	if err != nil {
		return nil, err
	}
	mc.views = v
	return v, nil
}
