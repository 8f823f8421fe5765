package resourceslice

import (
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/classname"
)

// ErrClassRegistered is returned (wrapped) when a class is registered twice
// in one ClassSet (Serve). Two sets (or two AddToManager
// calls) naming one class in one manager meet controller-runtime's
// controller-name check instead, as any two controllers of one name do.
var ErrClassRegistered = errors.New("class already registered in this ClassSet")

// AddToManager registers a controller named "resourceslice-<class>" in mgr
// that decides the class's ResourceSlices with h: a ClassSet of one class,
// with its own status.class view and ShadowPod watch. Call it once per
// class, before mgr.Start; a manager serving many classes, or classes that
// share budgets, is better served by one ClassSet (NewClassSet), whose
// classes and budgets share one view and one ShadowPod watch.
//
// It returns an error naming the class for an empty or "default" class
// (Liqo's own), a class that is not a valid label value, a nil handler, a
// bad option, or a manager's scheme that lacks a type the class reads or
// writes (see AddToScheme; the scheme is never changed). A class registered
// twice in one manager is refused by controller-runtime's controller-name
// check, unless the manager's controller options skip it
// (SkipNameValidation). It makes no API call: a manager whose API server is
// unreachable fails at Start, not here.
//
// The manager's client must read ResourceSlices (and Tenants, unless
// WithoutTenantRule) and patch resourceslices/status; its cache must see the
// namespaces where Liqo replicates slices.
//
// Shutdown. The handler's context is the manager's, as for any
// controller-runtime reconciler: it is cancelled when the manager stops or
// loses its leader election (another replica may then be deciding the same
// slices). From then on no handler call and no status write starts; a
// handler that returns after its context ended has its answer discarded
// (with no HandlerFailed event), and a status patch already sent is left
// two seconds to be answered. Every goroutine the SDK started for the
// manager (the class's workers, sources and sweeps, its class Lease,
// released on the way out, the budgets' feeds and the evictor) has
// returned before the runnable that started it does, so before the
// manager's Start returns. Honour ctx in your handler: one that
// ignores it holds the manager's shutdown, up to its
// GracefulShutdownTimeout.
func AddToManager(mgr manager.Manager, class string, h handler.Handler, opts ...Option) error {
	if mgr == nil {
		return fmt.Errorf("class %q: nil manager", class)
	}
	// Validated before the set's runnables are added: a refused class
	// leaves nothing in the manager.
	if err := classname.Validate(class); err != nil {
		return err
	}
	mc, err := newCompanions(mgr)
	if err != nil {
		return fmt.Errorf("class %q: %w", class, err)
	}
	cc, err := mc.newClassController(class, h, opts, false)
	if err != nil {
		return err
	}
	if err := mgr.Add(managedClass{cc: cc}); err != nil {
		cc.release()
		return fmt.Errorf("class %q: adding controller %q to the manager: %w", class, controllerName(class), err)
	}
	return nil
}

// errBudgetNeedsLeader refuses a budget on a manager whose controllers run
// on every replica: a budget is counted in one process, the leader, and a
// class deciding on the others would wait for a feed that never runs there.
var errBudgetNeedsLeader = errors.New("WithBudget needs the class's controller to run on the elected leader only, " +
	"but the manager's Controller.NeedLeaderElection is false (a budget is counted in one process: replicas deciding " +
	"at once would each admit up to its total); unset it, or serve budgeted classes from a manager that elects a leader")

// requestLogger builds controller-runtime's per-request logger from base:
// the same keys its default logger adds (namespace, name), so WithLogger
// changes where lines go, not what they say.
func requestLogger(base logr.Logger) func(*reconcile.Request) logr.Logger {
	return func(req *reconcile.Request) logr.Logger {
		if req == nil {
			return base
		}
		return base.WithValues("ResourceSlice", req.String(), "namespace", req.Namespace, "name", req.Name)
	}
}
