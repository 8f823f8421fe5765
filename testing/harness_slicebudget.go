package slicetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/budgethook"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// A budget declared as an object in the harness: WithSliceBudget seeds a
// SliceBudget, builds budget.FromObject on the harness's manager for it
// and makes classes draw from it; Harness.SliceBudget writes its status
// and reads it back.

// WithSliceBudget seeds sb, a SliceBudget, into the fake API (with its
// status subresource, as the CRD has it) and builds budget.FromObject for
// it on the harness's manager: classes draw from it as from a budget given
// with resourceslice.WithBudget, and the budget follows the object's spec
// as in a manager. classes names the harness's classes that draw from it
// (New's and WithAnotherClass's); none names New's class. An unknown class, two
// SliceBudgets of one name, or a spec.nodePool (the harness serves no
// nodes: give spec.total, and test a node pool on testing/controlplane)
// fail the test in New.
//
// Read the status the decisions left with Harness.SliceBudget. Edit the
// spec through Harness.Client (Update or Patch of a *v1alpha1.SliceBudget):
// the harness advances metadata.generation on a spec change, as the API
// server does, and the budget follows the change at the next Reconcile or
// ReconcilePending, whose watch events deliver it; a waiter it admits is
// queued, for ReconcilePending. The events the budget records on the
// object (Reclaimed, CapacityBelowUsed) are captured like the
// reconciler's, with Event.Object naming the SliceBudget.
func WithSliceBudget(sb *v1alpha1.SliceBudget, classes ...string) Option {
	return func(h *Harness) {
		if sb == nil {
			h.setupErrs = append(h.setupErrs, errors.New("WithSliceBudget: nil SliceBudget"))
			return
		}
		sb = sb.DeepCopy()
		if sb.Generation == 0 {
			sb.Generation = 1 // as the API server creates it
		}
		h.seed = append(h.seed, sb)
		h.sbSeeds = append(h.sbSeeds, sliceBudgetSeed{name: sb.Name, nodePool: sb.Spec.NodePool != nil, classes: classes})
	}
}

// sliceBudgetSeed is a SliceBudget WithSliceBudget gave.
type sliceBudgetSeed struct {
	name     string
	nodePool bool
	classes  []string
}

// followedBudget is a budget FromObject built in the harness, and its
// runnables.
type followedBudget struct {
	b        *budget.Budget
	follower budgethook.Follower
	writer   budgethook.StatusWriter
}

// checkSliceBudgets refuses, before anything is built, a SliceBudget the
// harness cannot follow, or one drawn from by a class it does not serve
// (specs).
func (h *Harness) checkSliceBudgets(specs []classSpec) error {
	seen := map[string]bool{}
	for _, s := range h.sbSeeds {
		if s.nodePool {
			return fmt.Errorf("SliceBudget %q: spec.nodePool is not followed in the harness, which serves no nodes: "+
				"give spec.total, or test a node pool on a real API server (testing/controlplane)", s.name)
		}
		if seen[s.name] {
			return fmt.Errorf("SliceBudget %q given twice (WithSliceBudget)", s.name)
		}
		seen[s.name] = true
		for _, c := range s.classes {
			if !slices.ContainsFunc(specs, func(sp classSpec) bool { return sp.class == c }) {
				return fmt.Errorf("SliceBudget %q: class %q draws from it, but the harness serves no such class (New, WithAnotherClass)", s.name, c)
			}
		}
	}
	return nil
}

// setUpSliceBudgets builds the budgets of the SliceBudgets given (checked
// by checkSliceBudgets) in mgr, and adds each to the options of the
// classes (in specs) that draw from it.
func (h *Harness) setUpSliceBudgets(mgr *harnessManager, specs []classSpec) error {
	h.sliceBudgets = map[string]*followedBudget{}
	for _, s := range h.sbSeeds {
		classes := s.classes
		if len(classes) == 0 {
			classes = []string{specs[0].class}
		}
		before := mgr.added()
		b, err := budget.FromObject(mgr, s.name)
		if err != nil {
			return err
		}
		fb := &followedBudget{b: b}
		for _, r := range mgr.addedSince(before) {
			switch r := r.(type) {
			case budgethook.Follower:
				fb.follower = r
			case budgethook.StatusWriter:
				fb.writer = r
			}
		}
		if fb.follower == nil || fb.writer == nil {
			return fmt.Errorf("SliceBudget %q: budget.FromObject added no follower or no status writer to the manager", s.name)
		}
		fb.follower.UseEventRecorder(recorder{h})
		h.sliceBudgets[s.name] = fb
		for i := range specs {
			if slices.Contains(classes, specs[i].class) {
				specs[i].opts = append(slices.Clip(specs[i].opts), resourceslice.WithBudget(b))
			}
		}
	}
	return nil
}

// waitSliceBudgets waits until each budget's follower has read its object:
// until then the budget decides nothing.
func (h *Harness) waitSliceBudgets() {
	h.t.Helper()
	for name, fb := range h.sliceBudgets {
		select {
		case <-fb.follower.SpecRead():
		case <-time.After(time.Minute):
			h.t.Fatalf("slicetest: the budget of SliceBudget %q did not read its object", name)
		}
	}
}

// objectBudgets are the budgets of WithSliceBudget.
func (h *Harness) objectBudgets() []*budget.Budget {
	out := make([]*budget.Budget, 0, len(h.sliceBudgets))
	for _, fb := range h.sliceBudgets {
		out = append(out, fb.b)
	}
	return out
}

// SliceBudget returns the SliceBudget called name, which WithSliceBudget
// gave, as the fake API server holds it after its status is written: the
// harness delivers the watch events of every change since the last
// reconcile, then writes the status as the leader's writer would at its
// next tick (capacity, used, inUse, reclaiming, available, the accepted
// and waiting counts, the largest consumers, the Ready condition and
// observedGeneration), if it changed. In a manager the status is written
// at most about once a second; in the harness it is written only here, so
// what a test reads depends on its decisions alone. It returns nil if the
// object was deleted, and fails the test for a name WithSliceBudget did
// not give.
func (h *Harness) SliceBudget(name string) *v1alpha1.SliceBudget {
	h.t.Helper()
	fb := h.sliceBudgets[name]
	if fb == nil {
		h.t.Fatalf("slicetest: SliceBudget %q: the harness follows no such SliceBudget (WithSliceBudget)", name)
		return nil
	}
	ctx := context.Background()
	h.sync()
	if err := fb.writer.WriteStatus(ctx); err != nil {
		h.t.Fatalf("slicetest: writing SliceBudget %q's status: %v", name, err)
	}
	h.sync()
	var sb v1alpha1.SliceBudget
	switch err := h.Client.Get(ctx, client.ObjectKey{Name: name}, &sb); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		h.t.Fatalf("slicetest: reading SliceBudget %q: %v", name, err)
	}
	return &sb
}

// The API server advances a SliceBudget's metadata.generation when its
// spec changes (the CRD has a status subresource); the fake client keeps
// whatever the writer sends. The budget applies a spec by its generation,
// so the harness's interceptors advance it as the server does.

// createGeneration gives a SliceBudget created through the harness's
// client generation 1.
func createGeneration(obj client.Object) {
	if sb, ok := obj.(*v1alpha1.SliceBudget); ok {
		sb.Generation = 1
	}
}

// updateGeneration sets the generation of a SliceBudget update: the
// stored one, advanced when the spec changes.
func updateGeneration(ctx context.Context, c client.Reader, obj client.Object) {
	sb, ok := obj.(*v1alpha1.SliceBudget)
	if !ok {
		return
	}
	var cur v1alpha1.SliceBudget
	if err := c.Get(ctx, client.ObjectKeyFromObject(sb), &cur); err != nil {
		return // the update answers for itself
	}
	sb.Generation = cur.Generation
	if !equality.Semantic.DeepEqual(cur.Spec, sb.Spec) {
		sb.Generation++
	}
}

// patchGeneration patches a SliceBudget with patch, then advances its
// generation if the patch changed its spec; any other object is patched.
func patchGeneration(ctx context.Context, c client.WithWatch, obj client.Object, patch func() error) error {
	sb, ok := obj.(*v1alpha1.SliceBudget)
	if !ok {
		return patch()
	}
	var cur v1alpha1.SliceBudget
	if err := c.Get(ctx, client.ObjectKeyFromObject(sb), &cur); err != nil {
		return patch()
	}
	if err := patch(); err != nil {
		return err
	}
	if sb.Generation != cur.Generation || equality.Semantic.DeepEqual(cur.Spec, sb.Spec) {
		return nil
	}
	sb.Generation = cur.Generation + 1
	return c.Update(ctx, sb)
}
