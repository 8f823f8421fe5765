// Package classhook is how the SDK's unit-test harness (package testing)
// builds a class on a controller builder of its own and drives what a
// manager runs on its own clock: a class's re-evaluation pass and its
// inventory sweep. Production code reaches none of this: a class is served
// with resourceslice.AddToManager or a resourceslice.ClassSet, and the
// passes and sweeps run inside the controller. Package resourceslice sets
// Build when it is initialised.
package classhook

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/handler"
)

// Class is one class's reconciler as the harness drives it.
type Class interface {
	reconcile.Reconciler
	// Pass lets every slice the controller gave up on be tried again (a
	// new retry epoch) and returns every slice the class serves, as the
	// pass a watched input's change starts.
	Pass(ctx context.Context) ([]types.NamespacedName, error)
	// SweepInventory marks as held every key a handler.Inventory that is
	// also a handler.Releaser says it holds, and returns them, as the
	// sweep the SDK runs after the cache syncs and at the resync period.
	SweepInventory(ctx context.Context) ([]types.NamespacedName, error)
}

// Build builds class's reconciler reading and writing through c, deciding
// with h under opts (each a resourceslice.DecisionOption), recording its
// events with rec, and completes b,
// a builder of set's manager (set is a *resourceslice.ClassSet), into the
// controller that runs it, with every watch AddToManager's controller has.
// It is nil until package resourceslice is initialised.
var Build func(c client.Client, class string, h handler.Handler, rec events.EventRecorder, opts []any, set any, b *builder.Builder) (Class, error)
