package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/examples/cappedresources"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// The --classes-file is either a YAML list of classes (classSpec):
//
//   - name: platinum
//     caps: {cpu: "8"}
//     sliceBudget: premium
//   - name: gold
//     caps: {cpu: "4", memory: 8Gi}
//     budget: {cpu: "64", memory: 256Gi}
//     consumerLimit: {cpu: "16"}
//   - name: gpu
//     caps: {nvidia.com/gpu: "2", cpu: "8", memory: 32Gi}
//     pool: {selector: {pool: gpu}, resources: [nvidia.com/gpu, cpu, memory], reserve: {cpu: "2"}, sharePercent: 90}
//     consumerLimit: {nvidia.com/gpu: "2"}
//   - name: silver
//
// or an object that also declares budgets shared by several classes
// (budgetSpec), which a class names in budgets:
//
//	budgets:
//	  - name: provider
//	    pool: {selector: {}, resources: [cpu, memory]}
//	    consumerLimit: {cpu: "32"}
//	classes:
//	  - name: gold
//	    caps: {cpu: "8"}
//	    budget: {cpu: "64"}
//	    budgets: [provider]
//	  - name: silver
//	    caps: {cpu: "2"}
//	    budgets: [provider]
type classesConfig struct {
	// Budgets are the shared budgets, by name.
	Budgets []budgetSpec `json:"budgets,omitempty"`
	// Classes are the classes to serve.
	Classes []classSpec `json:"classes"`
}

// classSpec is one class of the --classes-file. caps defaults to --cap:
// the capped policy offers only the resources it has a cap for.
//
// sliceBudget names a SliceBudget object (sliceclass.io/v1alpha1) the class
// draws from: a budget built with budget.FromObject, which follows the
// object's spec live and writes its status from the leader; classes naming
// the same object share that one budget. It replaces budget and pool, and
// its rules (consumer limits, preemption, eviction) are the object's. The
// manager then needs the SliceBudget CRD and deploy/rbac-slicebudgets.yaml;
// a file naming no sliceBudget needs neither.
//
// Otherwise budget (a fixed total) or pool (a node pool's) is the class's
// own budget, which consumerLimit limits per consumer; budgets names shared
// budgets it also draws from, all at once (beside a sliceBudget too). A
// class with none of sliceBudget, budget, pool and budgets draws from the
// --budget shared by such classes, or from none.
//
// priority is the class's priority in every budget it draws from
// (resourceslice.WithPriority); preemption, consumerLimits and
// evictionAfter apply to the class's own budget as to a shared one.
type classSpec struct {
	Name           string                         `json:"name"`
	Caps           corev1.ResourceList            `json:"caps,omitempty"`
	SliceBudget    string                         `json:"sliceBudget,omitempty"`
	Budget         corev1.ResourceList            `json:"budget,omitempty"`
	Pool           *poolSpec                      `json:"pool,omitempty"`
	ConsumerLimit  corev1.ResourceList            `json:"consumerLimit,omitempty"`
	ConsumerLimits map[string]corev1.ResourceList `json:"consumerLimits,omitempty"`
	Preemption     bool                           `json:"preemption,omitempty"`
	EvictionAfter  *metav1.Duration               `json:"evictionAfter,omitempty"`
	Budgets        []string                       `json:"budgets,omitempty"`
	Priority       int32                          `json:"priority,omitempty"`
}

// budgetSpec is a budget: a fixed total or a node pool, with an optional
// per-consumer limit (budget.WithConsumerLimit), per-consumer overrides of
// it (Budget.SetConsumerLimit: a change is applied to the running budget,
// which is not rebuilt), preemption (budget.WithPreemption) and
// evictionAfter, a duration such as "10m" (budget.WithEvictionAfter: the
// manager then needs delete on shadowpods.offloading.liqo.io).
type budgetSpec struct {
	Name           string                         `json:"name"`
	Total          corev1.ResourceList            `json:"total,omitempty"`
	Pool           *poolSpec                      `json:"pool,omitempty"`
	ConsumerLimit  corev1.ResourceList            `json:"consumerLimit,omitempty"`
	ConsumerLimits map[string]corev1.ResourceList `json:"consumerLimits,omitempty"`
	Preemption     bool                           `json:"preemption,omitempty"`
	EvictionAfter  *metav1.Duration               `json:"evictionAfter,omitempty"`
}

// sameButLimits reports whether a and b build the same budget, apart from
// the per-consumer overrides, which a running budget follows.
func sameButLimits(a, b budgetSpec) bool {
	a.ConsumerLimits, b.ConsumerLimits = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}

// setLimits applies the per-consumer overrides want to b, which has was:
// changed ones are set, removed ones lifted.
func setLimits(b *budget.Budget, was, want map[string]corev1.ResourceList) error {
	var errs []error
	for c := range was {
		if _, keep := want[c]; !keep {
			errs = append(errs, b.SetConsumerLimit(c, nil))
		}
	}
	for c, lim := range want {
		if old, ok := was[c]; !ok || !equality.Semantic.DeepEqual(old, lim) {
			errs = append(errs, b.SetConsumerLimit(c, lim))
		}
	}
	return errors.Join(errs...)
}

// poolSpec is a node-pool budget (budget.NewNodePool): the Ready,
// schedulable nodes whose labels match selector ({} for every node), for
// resources (default cpu, memory, pods), sharePercent of them (default
// 100), minus reserve and, with localPods, the provider's own pods'
// requests. The manager then needs list and watch on nodes (and on pods
// with localPods).
type poolSpec struct {
	Selector     map[string]string     `json:"selector"`
	Resources    []corev1.ResourceName `json:"resources,omitempty"`
	Reserve      corev1.ResourceList   `json:"reserve,omitempty"`
	SharePercent int                   `json:"sharePercent,omitempty"`
	LocalPods    bool                  `json:"localPods,omitempty"`
}

// own returns the class's own budget, if it has one.
func (s classSpec) own() (budgetSpec, bool) {
	if s.Budget == nil && s.Pool == nil {
		return budgetSpec{}, false
	}
	return budgetSpec{Name: s.Name, Total: s.Budget, Pool: s.Pool, ConsumerLimit: s.ConsumerLimit,
		ConsumerLimits: s.ConsumerLimits, Preemption: s.Preemption, EvictionAfter: s.EvictionAfter}, true
}

// parseClassesFile reads a --classes-file: a YAML list of classSpec, or a
// classesConfig object. It refuses an empty file (a half-written file must
// not stop every class; an explicit [] serves none), unknown fields, a
// repeated or invalid class or budget name, caps or budgets that --cap and
// --budget would refuse, a bad node pool, a consumer limit without a budget
// of the class's own, a class naming a budget the file does not declare,
// and a sliceBudget that is not an object name or comes with budget, pool
// or their rules. Each error names the entry.
func parseClassesFile(data []byte) (classesConfig, error) {
	var cfg classesConfig
	if len(bytes.TrimSpace(data)) == 0 {
		return cfg, errors.New("the file is empty (write [] to serve no class)")
	}
	var shape any
	if err := yaml.Unmarshal(data, &shape); err != nil {
		return cfg, err
	}
	switch m := shape.(type) {
	case []any:
		if err := yaml.UnmarshalStrict(data, &cfg.Classes); err != nil {
			return cfg, err
		}
	case map[string]any:
		if _, ok := m["classes"]; !ok {
			return cfg, errors.New("the file has no classes (write classes: [] to serve none)")
		}
		if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
			return cfg, err
		}
	default:
		return cfg, errors.New("the file is neither a list of classes nor {budgets, classes}")
	}
	if cfg.Classes == nil {
		cfg.Classes = []classSpec{}
	}
	return cfg, cfg.validate()
}

// validate checks cfg as parseClassesFile says.
func (cfg classesConfig) validate() error {
	shared := map[string]bool{}
	for i, b := range cfg.Budgets {
		if b.Name == "" {
			return fmt.Errorf("budget entry %d: no name", i+1)
		}
		if shared[b.Name] {
			return fmt.Errorf("budget entry %d: budget %q given twice", i+1, b.Name)
		}
		shared[b.Name] = true
		if b.Total == nil && b.Pool == nil {
			return fmt.Errorf("budget %q: give a total or a pool", b.Name)
		}
		if err := validateBudget(b); err != nil {
			return fmt.Errorf("budget %q: %w", b.Name, err)
		}
	}
	// The budgets the file builds, by the name their metrics carry: a
	// SliceBudget's must not share them.
	named := maps.Clone(shared)
	for _, s := range cfg.Classes {
		if _, ok := s.own(); ok {
			named[s.Name] = true
		}
	}
	seen := map[string]bool{}
	for i, s := range cfg.Classes {
		if err := resourceslice.ValidateClass(s.Name); err != nil {
			return fmt.Errorf("entry %d: %w", i+1, err)
		}
		if seen[s.Name] {
			return fmt.Errorf("entry %d: class %q given twice", i+1, s.Name)
		}
		seen[s.Name] = true
		if err := validateClass(s, shared); err != nil {
			return fmt.Errorf("class %q: %w", s.Name, err)
		}
		if s.SliceBudget != "" && named[s.SliceBudget] {
			return fmt.Errorf("class %q: sliceBudget %q: the file builds a budget of that name too, and the two would share one set of metric series: rename one", s.Name, s.SliceBudget)
		}
	}
	return nil
}

// validateClass checks one class against the shared budgets' names.
func validateClass(s classSpec, shared map[string]bool) error {
	if s.Caps != nil {
		if _, err := cappedresources.New(s.Caps); err != nil {
			return fmt.Errorf("caps: %w", err)
		}
	}
	if err := validateSliceBudget(s); err != nil {
		return err
	}
	if own, ok := s.own(); ok {
		if shared[own.Name] {
			// Two live budgets of one name would share one set of metric
			// series.
			return fmt.Errorf("its own budget is named after the class, and a shared budget of the file has that name %q: rename one", own.Name)
		}
		if err := validateBudget(own); err != nil {
			return err
		}
	} else if s.ConsumerLimit != nil || s.ConsumerLimits != nil || s.Preemption || s.EvictionAfter != nil {
		return errors.New("consumerLimit, consumerLimits, preemption and evictionAfter apply to the class's own budget or pool: give one, or set them on a shared budget")
	}
	named := map[string]bool{}
	for _, n := range s.Budgets {
		switch {
		case !shared[n]:
			return fmt.Errorf("budgets: %q is not among the file's budgets", n)
		case named[n]:
			return fmt.Errorf("budgets: %q given twice", n)
		}
		named[n] = true
	}
	return nil
}

// validateSliceBudget checks a class's sliceBudget: an object's name, and
// nothing beside it that the object's spec says (the class's own budget or
// pool, its consumer limits, preemption, eviction).
func validateSliceBudget(s classSpec) error {
	if s.SliceBudget == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(s.SliceBudget); len(errs) > 0 {
		return fmt.Errorf("sliceBudget %q is not an object name: %s", s.SliceBudget, strings.Join(errs, "; "))
	}
	if s.Budget != nil || s.Pool != nil {
		return fmt.Errorf("sliceBudget %q and budget or pool are exclusive: a class's budget is the SliceBudget or its own, not both (set total or nodePool in the SliceBudget's spec)", s.SliceBudget)
	}
	if s.ConsumerLimit != nil || s.ConsumerLimits != nil || s.Preemption || s.EvictionAfter != nil {
		return fmt.Errorf("sliceBudget %q: consumerLimit, consumerLimits, preemption and evictionAfter of a SliceBudget are in its spec: edit the object (kubectl edit sb %s)", s.SliceBudget, s.SliceBudget)
	}
	return nil
}

// validateBudget checks what building b would check, without a manager.
func validateBudget(b budgetSpec) error {
	var opts []budget.Option
	if b.ConsumerLimit != nil {
		opts = append(opts, budget.WithConsumerLimit(b.ConsumerLimit))
	}
	if b.EvictionAfter != nil {
		opts = append(opts, budget.WithEvictionAfter(b.EvictionAfter.Duration))
	}
	for c, lim := range b.ConsumerLimits {
		if c == "" {
			return errors.New("consumerLimits: an empty consumer")
		}
		for n, q := range lim {
			if q.Sign() < 0 {
				return fmt.Errorf("consumerLimits: %s: negative %s=%s", c, n, q.String())
			}
		}
	}
	if b.Pool == nil {
		if _, err := budget.New(b.Name, b.Total, opts...); err != nil {
			return fmt.Errorf("budget: %w", err)
		}
		return nil
	}
	if b.Total != nil {
		return errors.New("budget and pool are exclusive: a pool's total follows its nodes")
	}
	p := b.Pool
	if p.Selector == nil {
		return errors.New("pool: no selector (write selector: {} for every node)")
	}
	if _, err := labels.ValidatedSelectorFromSet(p.Selector); err != nil {
		return fmt.Errorf("pool: selector: %w", err)
	}
	if p.SharePercent != 0 && (p.SharePercent < 1 || p.SharePercent > 100) {
		return fmt.Errorf("pool: sharePercent %d is not within 1–100", p.SharePercent)
	}
	if p.Resources != nil && len(p.Resources) == 0 {
		return errors.New("pool: resources names no resource (omit it for cpu, memory, pods)")
	}
	// The pool's total names its resources; a budget over them at zero
	// checks the names and the consumer limit as the pool's ledger will.
	zero := corev1.ResourceList{}
	for _, n := range p.resources() {
		if _, dup := zero[n]; dup {
			return fmt.Errorf("pool: resource %s given twice", n)
		}
		zero[n] = resource.Quantity{}
	}
	for n, q := range p.Reserve {
		if q.Sign() < 0 {
			return fmt.Errorf("pool: negative reserve %s=%s", n, q.String())
		}
	}
	if _, err := budget.New(b.Name, zero, opts...); err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	return nil
}

// resources are the resources the pool counts.
func (p *poolSpec) resources() []corev1.ResourceName {
	if p.Resources == nil {
		return []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods}
	}
	return p.Resources
}

// options are the pool's budget options.
func (p *poolSpec) options() []budget.Option {
	opts := []budget.Option{budget.WithResources(p.resources()...)}
	if p.Reserve != nil {
		opts = append(opts, budget.WithReserve(p.Reserve))
	}
	if p.SharePercent != 0 {
		opts = append(opts, budget.WithSharePercent(p.SharePercent))
	}
	if p.LocalPods {
		opts = append(opts, budget.WithLocalPods())
	}
	return opts
}

// newPoolFunc builds a node-pool budget: budget.NewNodePool on the
// manager.
type newPoolFunc func(name string, nodes labels.Selector, opts ...budget.Option) (*budget.Budget, error)

// fromObjectFunc builds the budget that follows the named SliceBudget:
// budget.FromObject on the manager.
type fromObjectFunc func(name string) (*budget.Budget, error)

// builders build the budgets that need the manager.
type builders struct {
	newPool    newPoolFunc
	fromObject fromObjectFunc
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
	build    builders
	interval time.Duration
	log      logr.Logger

	mu      sync.Mutex
	last    []byte // the content last applied
	refused []byte // the content last refused, reported once
	// running is what each served class was served with.
	running map[string]runningClass
	// budgets are the budgets built from the file, by budgetKey.
	budgets map[string]builtBudget
	// objects are the budgets following SliceBudgets, by object name.
	objects map[string]*budget.Budget
}

// runningClass is a served class: its entry and the budgets it draws from.
type runningClass struct {
	spec    classSpec
	budgets []*budget.Budget
}

// builtBudget is a budget built from the file, and the entry it was built
// from.
type builtBudget struct {
	spec budgetSpec
	b    *budget.Budget
}

// budgetKey tells a shared budget from a class's own of the same name.
func budgetKey(shared bool, name string) string {
	if shared {
		return "budgets/" + name
	}
	return "classes/" + name
}

// newClassesFile reads path and serves its classes through set, building
// node pools and budgets following SliceBudgets with build. A bad file is
// an error: at start-up there is no running set to keep.
func newClassesFile(path string, set *resourceslice.ClassSet, caps corev1.ResourceList, shared *budget.Budget, records string, build builders, log logr.Logger) (*classesFile, error) {
	f := &classesFile{path: path, set: set, caps: caps, shared: shared, records: records, build: build, interval: 2 * time.Second,
		log: log.WithValues("classesFile", path), running: map[string]runningClass{}, budgets: map[string]builtBudget{},
		objects: map[string]*budget.Budget{}}
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

// budget returns the budget built from s, reusing the one built before
// from the same entry; built collects what the file now declares.
func (f *classesFile) budget(key string, s budgetSpec, built map[string]builtBudget) (*budget.Budget, error) {
	if b, ok := built[key]; ok {
		return b.b, nil
	}
	if old, ok := f.budgets[key]; ok && sameButLimits(old.spec, s) {
		// Followed live: the running budget takes the new overrides.
		if err := setLimits(old.b, old.spec.ConsumerLimits, s.ConsumerLimits); err != nil {
			return nil, err
		}
		built[key] = builtBudget{spec: s, b: old.b}
		return old.b, nil
	}
	var opts []budget.Option
	if s.ConsumerLimit != nil {
		opts = append(opts, budget.WithConsumerLimit(s.ConsumerLimit))
	}
	if s.Preemption {
		opts = append(opts, budget.WithPreemption())
	}
	if s.EvictionAfter != nil {
		opts = append(opts, budget.WithEvictionAfter(s.EvictionAfter.Duration))
	}
	var b *budget.Budget
	var err error
	if s.Pool == nil {
		b, err = budget.New(s.Name, s.Total, opts...)
	} else {
		b, err = f.build.newPool(s.Name, labels.SelectorFromSet(s.Pool.Selector), append(opts, s.Pool.options()...)...)
	}
	if err != nil {
		return nil, err
	}
	if err := setLimits(b, nil, s.ConsumerLimits); err != nil {
		return nil, err
	}
	built[key] = builtBudget{spec: s, b: b}
	return b, nil
}

// objectBudget returns the budget following the SliceBudget name, building
// it the first time.
func (f *classesFile) objectBudget(name string) (*budget.Budget, error) {
	if b, ok := f.objects[name]; ok {
		return b, nil
	}
	b, err := f.build.fromObject(name)
	if err != nil {
		return nil, err
	}
	f.objects[name] = b
	return b, nil
}

// apply serves cfg. Everything that can fail on the file's content (caps,
// budgets, pools) is built before any class is stopped, so a bad entry
// leaves the running set as it was; f.mu is held.
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

func (f *classesFile) apply(cfg classesConfig) error {
	shared := map[string]budgetSpec{}
	for _, b := range cfg.Budgets {
		shared[b.Name] = b
	}
	built := map[string]builtBudget{}
	want := map[string]served{}
	for _, s := range cfg.Classes {
		caps := s.Caps
		if caps == nil {
			caps = f.caps
		}
		h, err := cappedresources.New(caps)
		if err != nil {
			return fmt.Errorf("class %q: %w", s.Name, err)
		}
		var budgets []*budget.Budget
		if s.SliceBudget != "" {
			b, err := f.objectBudget(s.SliceBudget)
			if err != nil {
				return fmt.Errorf("class %q: sliceBudget %q: %w", s.Name, s.SliceBudget, err)
			}
			budgets = append(budgets, b)
		}
		if own, ok := s.own(); ok {
			b, err := f.budget(budgetKey(false, s.Name), own, built)
			if err != nil {
				return fmt.Errorf("class %q: %w", s.Name, err)
			}
			budgets = append(budgets, b)
		}
		for _, n := range s.Budgets {
			b, err := f.budget(budgetKey(true, n), shared[n], built)
			if err != nil {
				return fmt.Errorf("budget %q: %w", n, err)
			}
			budgets = append(budgets, b)
		}
		if len(budgets) == 0 && f.shared != nil {
			budgets = append(budgets, f.shared)
		}
		var opts []resourceslice.Option
		for _, b := range budgets {
			opts = append(opts, resourceslice.WithBudget(b))
		}
		if s.Priority != 0 {
			opts = append(opts, resourceslice.WithPriority(s.Priority))
		}
		var sh handler.Handler = h
		if f.records != "" {
			if sh, err = grantRecords(s.Name, f.records, h); err != nil {
				return fmt.Errorf("class %q: %w", s.Name, err)
			}
			opts = append(opts, grantRecordTypes())
		}
		want[s.Name] = served{run: runningClass{spec: s, budgets: budgets}, h: sh, opts: opts}
	}
	// A shared budget no class draws from is built all the same: a pool's
	// node watch starts with the file, not with its first class.
	for _, b := range cfg.Budgets {
		if _, err := f.budget(budgetKey(true, b.Name), b, built); err != nil {
			return fmt.Errorf("budget %q: %w", b.Name, err)
		}
	}
	f.budgets = built

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
