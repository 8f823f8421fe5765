package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/examples/cappedresources"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// classSpec is one entry of the --classes-file:
//
//   - name: gold
//     caps: {cpu: "4", memory: 8Gi}
//     budget: {cpu: "64", memory: 256Gi}
//   - name: silver
//
// caps defaults to --cap. budget, when given, is the class's own; without it
// the class draws from the --budget shared by all classes, or from none.
type classSpec struct {
	Name   string              `json:"name"`
	Caps   corev1.ResourceList `json:"caps,omitempty"`
	Budget corev1.ResourceList `json:"budget,omitempty"`
}

// parseClassesFile reads a --classes-file: a YAML list of classSpec. It
// refuses an empty file (a half-written file must not stop every class; an
// explicit [] serves none), unknown fields, a repeated or invalid class
// name, and caps or budgets that --cap and --budget would refuse.
func parseClassesFile(data []byte) ([]classSpec, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the file is empty (write [] to serve no class)")
	}
	var specs []classSpec
	if err := yaml.UnmarshalStrict(data, &specs); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, s := range specs {
		if err := resourceslice.ValidateClass(s.Name); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("entry %d: class %q given twice", i+1, s.Name)
		}
		seen[s.Name] = true
		if _, err := cappedresources.New(s.Caps); err != nil {
			return nil, fmt.Errorf("class %q: caps: %w", s.Name, err)
		}
		if s.Budget != nil {
			if _, err := budget.New(s.Name, s.Budget); err != nil {
				return nil, fmt.Errorf("class %q: budget: %w", s.Name, err)
			}
		}
	}
	return specs, nil
}

// reloadsTotal counts reads of the classes file that found it changed (or
// unreadable), by result: "applied" when the running set now matches the
// file; "refused" when the file was bad or unreadable and the running set
// was kept; "failed" when a class could not be served (the read is tried
// again at the next interval).
var reloadsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "sliceclass_manager_classes_file_reloads_total",
	Help: "Reads of --classes-file that found it changed or unreadable, by result (applied, refused, failed).",
}, []string{"result"})

func init() { metrics.Registry.MustRegister(reloadsTotal) }

// classesFile serves the classes a --classes-file lists through a
// ClassSet, and follows the file: a class added is served, one removed is
// stopped, one changed is served again with its new caps and budget (which
// re-evaluates its slices and writes only what changes); classes the change
// does not touch are undisturbed. A bad file changes nothing.
type classesFile struct {
	path     string
	set      *resourceslice.ClassSet
	caps     corev1.ResourceList // --cap, for entries without caps
	shared   *budget.Budget      // --budget, for entries without a budget
	interval time.Duration
	log      logr.Logger

	mu      sync.Mutex
	last    []byte               // the content last applied
	refused []byte               // the content last refused, reported once
	running map[string]classSpec // what each served class was served with
}

// newClassesFile reads path and serves its classes through set. A bad file
// is an error: at start-up there is no running set to keep.
func newClassesFile(path string, set *resourceslice.ClassSet, caps corev1.ResourceList, shared *budget.Budget, log logr.Logger) (*classesFile, error) {
	f := &classesFile{path: path, set: set, caps: caps, shared: shared, interval: 2 * time.Second,
		log: log.WithValues("classesFile", path), running: map[string]classSpec{}}
	if _, err := f.reload(); err != nil {
		return nil, fmt.Errorf("--classes-file %s: %w", path, err)
	}
	return f, nil
}

// Start implements manager.Runnable: it reads the file every interval until
// ctx ends. It polls the content rather than watching the inode, because a
// mounted ConfigMap is updated by swapping a symlink.
func (f *classesFile) Start(ctx context.Context) error {
	log := f.log
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		changed, err := f.reload()
		switch {
		case err != nil && changed:
			reloadsTotal.WithLabelValues("failed").Inc()
			log.Error(err, "classes file applied in part; trying again", "classes", f.set.Classes())
		case err != nil:
			reloadsTotal.WithLabelValues("refused").Inc()
			log.Error(err, "classes file refused; still serving the classes read before", "classes", f.set.Classes())
		case changed:
			reloadsTotal.WithLabelValues("applied").Inc()
			log.Info("classes file applied", "classes", f.set.Classes())
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica follows the file, so that a standby serves the current set the
// moment it is elected (the ClassSet decides only on the leader).
func (*classesFile) NeedLeaderElection() bool { return false }

// reload reads the file and, when its content changed, makes the served set
// match it. It reports whether it changed anything. A bad content is
// reported once; an unreadable file at every read; a class that failed to
// be served is tried again at the next read.
func (f *classesFile) reload() (bool, error) {
	data, err := os.ReadFile(f.path)
	if err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last != nil && bytes.Equal(data, f.last) {
		f.refused = nil // a bad content written again is reported again
		return false, nil
	}
	if f.refused != nil && bytes.Equal(data, f.refused) {
		return false, nil
	}
	specs, err := parseClassesFile(data)
	if err != nil {
		f.refused = data
		return false, err
	}
	f.refused = nil
	if err := f.apply(specs); err != nil {
		return true, err
	}
	f.last = data
	return true, nil
}

// served is a class ready to be served: its handler and options.
type served struct {
	spec classSpec
	h    *cappedresources.Policy
	opts []resourceslice.Option
}

// apply serves specs. Everything that can fail on the file's content (caps,
// budgets) is built before any class is stopped, so a bad entry leaves the
// running set as it was; f.mu is held.
func (f *classesFile) apply(specs []classSpec) error {
	want := map[string]served{}
	for _, s := range specs {
		caps := s.Caps
		if caps == nil {
			caps = f.caps
		}
		h, err := cappedresources.New(caps)
		if err != nil {
			return fmt.Errorf("class %q: %w", s.Name, err)
		}
		var opts []resourceslice.Option
		switch {
		case s.Budget != nil:
			b, err := budget.New(s.Name, s.Budget)
			if err != nil {
				return fmt.Errorf("class %q: budget: %w", s.Name, err)
			}
			opts = append(opts, resourceslice.WithBudget(b))
		case f.shared != nil:
			opts = append(opts, resourceslice.WithBudget(f.shared))
		}
		want[s.Name] = served{spec: s, h: h, opts: opts}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(f.running)) {
		if _, keep := want[name]; keep {
			continue
		}
		if err := f.set.Stop(name); err != nil {
			errs = append(errs, err)
		}
		delete(f.running, name)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		old, ok := f.running[name]
		if ok && sameSpec(old, w.spec) {
			continue
		}
		if ok {
			if err := f.set.Stop(name); err != nil {
				errs = append(errs, err)
			}
			delete(f.running, name)
		}
		if err := f.set.Serve(name, w.h, w.opts...); err != nil {
			errs = append(errs, err)
			continue
		}
		f.running[name] = w.spec
	}
	return errors.Join(errs...)
}

// sameSpec reports whether two entries serve a class the same way
// (quantities compared by value).
func sameSpec(a, b classSpec) bool {
	// nil (use --cap, --budget) and {} (no cap, a budget of its own) differ,
	// though Semantic.DeepEqual holds them equal.
	return a.Name == b.Name && (a.Caps == nil) == (b.Caps == nil) && (a.Budget == nil) == (b.Budget == nil) &&
		equality.Semantic.DeepEqual(a.Caps, b.Caps) && equality.Semantic.DeepEqual(a.Budget, b.Budget)
}
