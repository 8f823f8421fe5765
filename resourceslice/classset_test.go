package resourceslice_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// ClassSet tests that need no API server: every rule here is checked at
// Serve or Stop, before any API call (the manager never starts).

func TestNewClassSetRejectsBadSetup(t *testing.T) {
	_, err := resourceslice.NewClassSet(nil)
	require.Error(t, err, "a nil manager")
	assert.ErrorContains(t, err, "nil manager")

	cases := map[string]struct {
		reason string
		opt    resourceslice.Option
		want   string
	}{
		"NilOption":   {reason: "a nil default option is a setup error", opt: nil, want: "nil Option"},
		"ZeroWorkers": {reason: "defaults are validated eagerly, not at the first Serve", opt: resourceslice.WithMaxConcurrentReconciles(0), want: "at least 1"},
		"BadLease":    {reason: "a lease namespace must be a DNS label", opt: resourceslice.WithClassLease("Not A Namespace"), want: "lease namespace"},
		"EventsMode":  {reason: "an unknown decision events mode", opt: resourceslice.WithDecisionEvents(42), want: "decision events"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cs, err := resourceslice.NewClassSet(unreachableManager(t), tc.opt)
			require.Error(t, err, tc.reason)
			assert.ErrorContains(t, err, tc.want, tc.reason)
			assert.Nil(t, cs, "no set is returned with an error")
		})
	}
}

// Serve applies AddToManager's rules, and a refused Serve claims nothing.
func TestClassSetServeRejectsBadSetup(t *testing.T) {
	cs, err := resourceslice.NewClassSet(unreachableManager(t))
	require.NoError(t, err)
	cases := map[string]struct {
		reason string
		class  string
		h      handler.Handler
		opts   []resourceslice.Option
		want   string
	}{
		"Empty":       {reason: "Liqo's own controller serves slices with no class", class: "", h: grant, want: "reserved"},
		"Default":     {reason: "Liqo's own controller serves the default class", class: "default", h: grant, want: "reserved"},
		"NotLabel":    {reason: "a class is a label value", class: "Gold Class", h: grant, want: "not a valid label value"},
		"NilHandler":  {reason: "nothing would decide", class: "cs-nil", want: "nil handler"},
		"ZeroWorkers": {reason: "a class's own options are validated", class: "cs-workers", h: grant, opts: []resourceslice.Option{resourceslice.WithMaxConcurrentReconciles(0)}, want: "at least 1"},
		"NilOption":   {reason: "a nil option is a setup error", class: "cs-nilopt", h: grant, opts: []resourceslice.Option{nil}, want: "nil Option"},
		"NilBudget":   {reason: "WithBudget(nil) is a setup error", class: "cs-budget", h: grant, opts: []resourceslice.Option{resourceslice.WithBudget(nil)}, want: "nil budget"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := cs.Serve(tc.class, tc.h, tc.opts...)
			require.Error(t, err, tc.reason)
			assert.ErrorContains(t, err, tc.want, tc.reason)
			assert.ErrorContains(t, err, fmt.Sprintf("%q", tc.class), "the error names the class")
			assert.False(t, errors.Is(err, resourceslice.ErrClassRegistered), "a bad setup is not a duplicate: %v", err)
		})
	}
	assert.Empty(t, cs.Classes(), "a refused Serve serves nothing")
	for _, class := range []string{"cs-nil", "cs-workers", "cs-nilopt", "cs-budget"} {
		assert.NoError(t, cs.Serve(class, grant), "a refused Serve must not keep %q claimed", class)
	}
}

// A class belongs to one registration per set (issue 43): a set refuses a
// class it serves with ErrClassRegistered. Two sets, or a set and
// AddToManager (a set of one), naming one class in one manager meet
// controller-runtime's controller-name check, as any two controllers of one
// name do; a manager that turns that check off (SkipNameValidation) answers
// for what it registers.
func TestClassSetAndAddToManagerExcludeEachOther(t *testing.T) {
	mgr := nameCheckedManager(t)
	static, dynamic := uniqueClass("static"), uniqueClass("dynamic")
	cs, err := resourceslice.NewClassSet(mgr)
	require.NoError(t, err)
	require.NoError(t, resourceslice.AddToManager(mgr, static, grant))
	require.NoError(t, cs.Serve(dynamic, grant))

	err = cs.Serve(static, grant)
	require.Error(t, err, "a ClassSet serving a class AddToManager registered")
	assert.ErrorContains(t, err, "already exists", "controller-runtime's controller-name check")
	assert.ErrorContains(t, err, fmt.Sprintf("%q", static))

	err = resourceslice.AddToManager(mgr, dynamic, grant)
	require.Error(t, err, "AddToManager registering a class a ClassSet serves")
	assert.ErrorContains(t, err, "already exists", "controller-runtime's controller-name check")
	assert.ErrorContains(t, err, fmt.Sprintf("%q", dynamic))

	err = cs.Serve(dynamic, grant)
	require.Error(t, err, "the same set serving a class twice")
	assert.ErrorIs(t, err, resourceslice.ErrClassRegistered)

	other, err := resourceslice.NewClassSet(mgr)
	require.NoError(t, err, "a manager may hold several sets")
	err = other.Serve(dynamic, grant)
	require.Error(t, err, "a second set serving the first set's class")
	assert.ErrorContains(t, err, "already exists", "controller-runtime's controller-name check")

	assert.Equal(t, []string{dynamic}, cs.Classes(), "refused registrations leave the set as it was")
	assert.Empty(t, other.Classes())

	// Once the set stops the class, it serves it again: the name is the
	// set's, and controller-runtime is not asked twice.
	require.NoError(t, cs.Stop(context.Background(), dynamic))
	require.NoError(t, cs.Serve(dynamic, grant), "a stopped class is served again by its set")

	// Another manager is another set.
	cs2, err := resourceslice.NewClassSet(unreachableManager(t))
	require.NoError(t, err)
	assert.NoError(t, cs2.Serve("static", grant), "another manager may serve the same class")
}

func TestClassSetServeStopServeBeforeStart(t *testing.T) {
	cs, err := resourceslice.NewClassSet(unreachableManager(t))
	require.NoError(t, err)
	for _, class := range []string{"zeta", "alpha", "mid", "beta"} {
		require.NoError(t, cs.Serve(class, grant), class)
	}
	assert.Equal(t, []string{"alpha", "beta", "mid", "zeta"}, cs.Classes(), "Classes is sorted")

	require.NoError(t, cs.Stop(context.Background(), "mid"))
	assert.Equal(t, []string{"alpha", "beta", "zeta"}, cs.Classes())

	err = cs.Stop(context.Background(), "mid")
	require.Error(t, err, "stopping a class twice")
	assert.ErrorIs(t, err, resourceslice.ErrClassNotServed)
	assert.ErrorContains(t, err, `"mid"`, "the error names the class")

	err = cs.Stop(context.Background(), "never-served")
	require.Error(t, err)
	assert.ErrorIs(t, err, resourceslice.ErrClassNotServed)

	require.NoError(t, cs.Serve("mid", grant, resourceslice.WithMaxConcurrentReconciles(3)), "serving a stopped class again, with other options")
	assert.Equal(t, []string{"alpha", "beta", "mid", "zeta"}, cs.Classes())

	// The returned slice is a copy: changing it changes nothing.
	got := cs.Classes()
	got[0] = "tampered"
	assert.Equal(t, []string{"alpha", "beta", "mid", "zeta"}, cs.Classes())
}

// Serve, Stop and Classes from many goroutines on overlapping classes: no
// race (run with -race), every error is one of the two documented ones, and
// the set, the manager's registry and Classes agree at the end.
func TestClassSetConcurrentServeStop(t *testing.T) {
	cs, err := resourceslice.NewClassSet(unreachableManager(t))
	require.NoError(t, err)
	// The first Serve adds Liqo's types to the manager's scheme; the storm
	// starts after it (see TestClassSetConcurrentFirstServe for the storm
	// that includes it).
	require.NoError(t, cs.Serve("warm-up", grant))
	require.NoError(t, cs.Stop(context.Background(), "warm-up"))
	serveStopStorm(t, cs)
}

// The same storm with every class drawing from one budget: a Serve racing
// a Stop of its class sees the class registered or free, never "already
// draws from budget" (Stop detaches from the budgets before releasing the
// name, and Serve claims the name before attaching).
func TestClassSetConcurrentServeStopWithBudget(t *testing.T) {
	cs, err := resourceslice.NewClassSet(unreachableManager(t))
	require.NoError(t, err)
	b, err := budget.New("storm", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")})
	require.NoError(t, err)
	require.NoError(t, cs.Serve("warm-up", grant, resourceslice.WithBudget(b)))
	require.NoError(t, cs.Stop(context.Background(), "warm-up"))
	for range 5 {
		serveStopStorm(t, cs, resourceslice.WithBudget(b))
		for _, class := range cs.Classes() {
			require.NoError(t, cs.Stop(context.Background(), class))
		}
	}
}

// The same storm on a manager whose scheme lacks Liqo's types: the first
// Serve calls race to add them.
func TestClassSetConcurrentFirstServe(t *testing.T) {
	cs, err := resourceslice.NewClassSet(unreachableManager(t))
	require.NoError(t, err)
	serveStopStorm(t, cs)
}

// serveStopStorm runs Serve, Stop and Classes on cs from many goroutines
// over four classes, and checks that the set is consistent afterwards.
func serveStopStorm(t *testing.T, cs *resourceslice.ClassSet, opts ...resourceslice.Option) {
	t.Helper()
	classes := []string{"c0", "c1", "c2", "c3"}
	const goroutines, rounds = 16, 40

	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		unexpected []error
		served     int
	)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				class := classes[(g+i)%len(classes)]
				err := cs.Serve(class, grant, opts...)
				if err == nil {
					mu.Lock()
					served++
					mu.Unlock()
				} else if !errors.Is(err, resourceslice.ErrClassRegistered) {
					mu.Lock()
					unexpected = append(unexpected, err)
					mu.Unlock()
				}
				_ = cs.Classes()
				if err := cs.Stop(context.Background(), classes[(g+i+1)%len(classes)]); err != nil && !errors.Is(err, resourceslice.ErrClassNotServed) {
					mu.Lock()
					unexpected = append(unexpected, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	assert.Empty(t, unexpected, "Serve and Stop return only ErrClassRegistered or ErrClassNotServed under contention")
	assert.Positive(t, served, "some Serve calls must succeed")

	// What Classes reports is exactly what Stop can stop; afterwards every
	// class is free again, in the set and in the manager.
	for _, class := range cs.Classes() {
		require.NoError(t, cs.Stop(context.Background(), class), "Classes lists %q, so Stop must find it", class)
	}
	assert.Empty(t, cs.Classes())
	for _, class := range classes {
		assert.ErrorIs(t, cs.Stop(context.Background(), class), resourceslice.ErrClassNotServed)
		assert.NoError(t, cs.Serve(class, grant, opts...), "class %q left claimed after the storm", class)
	}
	assert.Equal(t, classes, cs.Classes())
}
