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

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/examples/cappedresources"
	sdkflags "github.com/sliceclass/sliceclass/flags"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// The --classes-file is the SDK's classes file (flags.ClassesConfig: a
// list of classes, or {budgets, classes}), read by the SDK's parser
// (flags.ParseClassesConfig) and built by its flags.ClassBuilder, which
// gives each class the budgets and priority it names: what any manager
// built from the flags package serves a file with. This manager adds its
// policy's caps (an entry's caps, else --cap), the --budget shared by the
// classes that name no budget, and grant records.

// parseClassesFile reads a --classes-file with the SDK's parser
// (flags.ParseClassesConfig, whose errors name the entry and the field)
// and refuses caps the capped policy refuses (caps: {}, which offers
// nothing).
func parseClassesFile(data []byte) (sdkflags.ClassesConfig, error) {
	cfg, err := sdkflags.ParseClassesConfig(data)
	if err != nil {
		return cfg, err
	}
	for _, s := range cfg.Classes {
		if s.Caps == nil {
			continue
		}
		if _, err := cappedresources.New(s.Caps); err != nil {
			return cfg, fmt.Errorf("class %q: caps: %w", s.Name, err)
		}
	}
	return cfg, nil
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
// stopped, one changed (or drawing from a budget that changed) is served
// again with its new caps and budgets (which re-evaluates its slices and
// writes only what changes); classes and budgets the change does not touch
// are undisturbed, and keep what they hold. A bad file changes nothing.
//
// A node pool is built when it first appears (its node watch starts then,
// even on a running manager) and kept while the file declares it
// unchanged; a pool removed or changed keeps watching its nodes until the
// process restarts (a manager cannot remove a runnable), counting nothing.
//
// A budget following a SliceBudget is built when a class first names the
// object, and kept for the life of the process, whether or not a class
// still names it: the object, not the file, is its configuration, and a
// second budget following the same object would write its status too.
type classesFile struct {
	path     string
	set      *resourceslice.ClassSet
	caps     corev1.ResourceList // --cap, for entries without caps
	shared   *budget.Budget      // --budget, for entries without a budget
	records  string              // --grant-records-namespace, "" for none
	build    *sdkflags.ClassBuilder
	interval time.Duration
	log      logr.Logger

	mu      sync.Mutex
	last    []byte // the content last applied
	refused []byte // the content last refused, reported once
	// running is what each served class was served with.
	running map[string]runningClass
}

// runningClass is a served class: its entry and the budgets it draws from.
type runningClass struct {
	spec    sdkflags.ClassEntry
	budgets []*budget.Budget
}

// newClassesFile reads path and serves its classes through set, building
// their budgets with build (the SDK's flags.ClassBuilder, held for the
// life of the process so that an unchanged budget is kept across reads).
// A bad file is an error: at start-up there is no running set to keep.
func newClassesFile(path string, set *resourceslice.ClassSet, caps corev1.ResourceList, shared *budget.Budget, records string, build *sdkflags.ClassBuilder, log logr.Logger) (*classesFile, error) {
	f := &classesFile{path: path, set: set, caps: caps, shared: shared, records: records, build: build, interval: 2 * time.Second,
		log: log.WithValues("classesFile", path), running: map[string]runningClass{}}
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
	cfg, err := parseClassesFile(data)
	if err == nil && len(f.caps) == 0 {
		for _, s := range cfg.Classes {
			if s.Caps == nil {
				err = fmt.Errorf("class %q: no caps, and no --cap to default to: the capped policy offers only the resources it caps", s.Name)
				break
			}
		}
	}
	if err != nil {
		f.refused = data
		return false, err
	}
	f.refused = nil
	if err := f.apply(cfg); err != nil {
		return true, err
	}
	f.last = data
	return true, nil
}

// served is a class ready to be served: its handler and options.
type served struct {
	run  runningClass
	h    handler.Handler
	opts []resourceslice.Option
}

// stopTimeout bounds how long a reload waits for a stopped class's
// decisions in flight.
const stopTimeout = 30 * time.Second

// stop stops serving class, waiting at most stopTimeout for its decisions
// in flight; a class whose decisions outlast it is released when they end,
// and serving it again fails (and is retried) until then.
func (f *classesFile) stop(class string) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return f.set.Stop(ctx, class)
}

// apply serves cfg. Everything that can fail on the file's content (caps,
// budgets, pools: f.build, the SDK's flags.ClassBuilder, which keeps the
// budgets whose entries did not change) is built before any class is
// stopped, so a bad entry leaves the running set as it was; f.mu is held.
func (f *classesFile) apply(cfg sdkflags.ClassesConfig) error {
	classes, err := f.build.Build(cfg)
	if err != nil {
		return err
	}
	want := map[string]served{}
	for _, c := range classes {
		caps := c.Entry.Caps
		if caps == nil {
			caps = f.caps
		}
		h, err := cappedresources.New(caps)
		if err != nil {
			return fmt.Errorf("class %q: %w", c.Name, err)
		}
		budgets, opts := c.Budgets, c.Options
		if len(budgets) == 0 && f.shared != nil {
			budgets = []*budget.Budget{f.shared}
			opts = append(slices.Clone(opts), resourceslice.WithBudget(f.shared))
		}
		var sh handler.Handler = h
		if f.records != "" {
			if sh, err = grantRecords(c.Name, f.records, h); err != nil {
				return fmt.Errorf("class %q: %w", c.Name, err)
			}
			opts = append(slices.Clone(opts), grantRecordTypes())
		}
		want[c.Name] = served{run: runningClass{spec: c.Entry, budgets: budgets}, h: sh, opts: opts}
	}

	var errs []error
	for _, name := range slices.Sorted(maps.Keys(f.running)) {
		if _, keep := want[name]; keep {
			continue
		}
		if err := f.stop(name); err != nil {
			errs = append(errs, err)
		}
		delete(f.running, name)
	}
	// Every changed class stops before any is served again: a new budget
	// that replaces an old one of the same name exports its metrics only
	// once no class draws from the old one.
	for _, name := range slices.Sorted(maps.Keys(want)) {
		old, ok := f.running[name]
		if !ok || sameClass(old, want[name].run) {
			continue
		}
		if err := f.stop(name); err != nil {
			errs = append(errs, err)
		}
		delete(f.running, name)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		if _, ok := f.running[name]; ok {
			continue
		}
		if err := f.set.Serve(name, w.h, w.opts...); err != nil {
			errs = append(errs, err)
			continue
		}
		f.running[name] = w.run
	}
	return errors.Join(errs...)
}

// sameClass reports whether two entries serve a class the same way: the
// same entry (quantities compared by value) drawing from the very same
// budgets.
func sameClass(a, b runningClass) bool {
	// nil (use --cap) and {} differ, though Semantic.DeepEqual holds them
	// equal (the file refuses caps: {}, which offers nothing).
	return (a.spec.Caps == nil) == (b.spec.Caps == nil) && equality.Semantic.DeepEqual(a.spec, b.spec) &&
		slices.Equal(a.budgets, b.budgets)
}
