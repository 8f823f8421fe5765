package budget

import (
	"context"
	"errors"
	"fmt"
	"sync"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// Liqo's labels that tell its virtual nodes and the pods it runs for a
// consumer (offloaded through a ShadowPod) from the provider's own.
const (
	labelNodeType       = "liqo.io/type"
	nodeTypeVirtual     = "virtual-node"
	labelManagedBy      = "liqo.io/managed-by"
	managedByShadowPod  = "shadowpod"
	defaultSharePercent = 100
	maxSharePercent     = 100
	minSharePercent     = 1
)

// defaultPoolResources are the resources a node-pool budget limits unless
// WithResources says otherwise.
var defaultPoolResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods}

// WithResources names the resources a node-pool budget limits (default cpu,
// memory, pods). A named resource no node of the pool has is 0: it admits
// none, never unlimited.
func WithResources(names ...corev1.ResourceName) NodePoolOption {
	return optionFunc(func(o *options) {
		if len(names) == 0 {
			o.errs = append(o.errs, errors.New("WithResources names no resource"))
			return
		}
		o.resources = append([]corev1.ResourceName(nil), names...)
	})
}

// WithReserve keeps reserve back from a node pool for the provider's own
// use: the total is what the pool offers minus reserve, never below zero.
func WithReserve(reserve corev1.ResourceList) NodePoolOption {
	return optionFunc(func(o *options) { o.reserve = reserve.DeepCopy() })
}

// WithSharePercent offers p percent of a node pool (1–100, default 100),
// before the reserve is taken.
func WithSharePercent(p int) NodePoolOption {
	return optionFunc(func(o *options) {
		if p < minSharePercent || p > maxSharePercent {
			o.errs = append(o.errs, fmt.Errorf("share percent %d is not within %d–%d", p, minSharePercent, maxSharePercent))
			return
		}
		o.share = p
	})
}

// WithLocalPods subtracts local pods' requests from a node pool's total:
// the pods running on its nodes that were not offloaded through Liqo, the
// provider's own workloads. A pod Liqo runs for a consumer carries the label
// liqo.io/managed-by=shadowpod (it is made from a ShadowPod) and is not
// subtracted, since the consumer's grant already counts it; pods that
// finished (Succeeded, Failed) hold nothing. It needs list and watch on pods.
func WithLocalPods() NodePoolOption {
	return optionFunc(func(o *options) { o.localPods = true })
}

// NewNodePool returns a Budget whose total follows the nodes matching
// nodes that are Ready, schedulable and not Liqo virtual nodes: the sum of
// their allocatable, times the share (WithSharePercent), minus the reserve
// (WithReserve) and, with WithLocalPods, the provider's own pods' requests,
// never below zero, for the resources of WithResources (default cpu,
// memory, pods). It follows nodes added, removed, cordoned, made NotReady
// or resized as the watch reports them, with no handler code; a smaller
// total revokes nothing (see SetTotal). SetTotal on it is an error.
//
// It watches the pool's nodes (and, with WithLocalPods, pods) through a
// cache of its own, trimmed to what the total needs, added to mgr: call it
// before mgr.Start. The manager's client needs list and watch on nodes,
// and its scheme the core types (clientgoscheme.AddToScheme; a missing one
// is an error naming that call).
func NewNodePool(mgr manager.Manager, name string, nodes labels.Selector, opts ...NodePoolOption) (*Budget, error) {
	if mgr == nil {
		return nil, fmt.Errorf("budget %q: nil manager", name)
	}
	if nodes == nil {
		return nil, fmt.Errorf("budget %q: nil node selector; use labels.Everything() for every node", name)
	}
	o, err := build(opts, NodePoolOption.applyToNodePool)
	if err == nil {
		err = o.checkNames()
	}
	if err != nil {
		return nil, fmt.Errorf("budget %q: %w", name, err)
	}
	names := o.resources
	if names == nil {
		names = defaultPoolResources
	}
	zero := corev1.ResourceList{}
	for _, n := range names {
		zero[n] = resource.Quantity{}
	}
	for n, q := range o.reserve {
		if q.Sign() < 0 {
			return nil, fmt.Errorf("budget %q: negative reserve %s=%s", name, n, q.String())
		}
	}
	if err := (schemeKinds{nodes: true, pods: o.localPods}).check(mgr.GetScheme()); err != nil {
		return nil, fmt.Errorf("budget %q: %w", name, err)
	}
	l, err := ledger.New(name, zero, o.ledgerOptions())
	if err != nil {
		return nil, err
	}
	p, err := newPool(mgr.GetConfig(), mgr.GetScheme(), l, nodes, o)
	if err != nil {
		return nil, fmt.Errorf("budget %q: %w", name, err)
	}
	if err := mgr.Add(p); err != nil {
		return nil, fmt.Errorf("budget %q: adding its node cache to the manager: %w", name, err)
	}
	return &Budget{ledgerHandle: ledger.NewHandle(l), l: l, pool: p}, nil
}

// newPool builds the pool of the nodes matching nodes for l, by o's
// node-pool options, with a cache of its own, not started.
func newPool(cfg *rest.Config, scheme *runtime.Scheme, l *ledger.Ledger, nodes labels.Selector, o options) (*nodePool, error) {
	names := o.resources
	if names == nil {
		names = defaultPoolResources
	}
	byObject := map[client.Object]cache.ByObject{
		&corev1.Node{}: {Label: nodes, Transform: trimNode},
	}
	if o.localPods {
		byObject[&corev1.Pod{}] = cache.ByObject{Field: fields.OneTermNotEqualSelector("spec.nodeName", ""), Transform: trimPod}
	}
	p := &nodePool{
		l: l, selector: nodes, names: names, reserve: o.reserve, share: o.share, localPods: o.localPods,
		nodes: map[string]*poolNode{}, pods: map[types.NamespacedName]podUse{},
		alloc: corev1.ResourceList{}, podSum: corev1.ResourceList{},
	}
	// Nodes and pods are core types: a mapper of their own spares the
	// discovery call the manager's would make here, so a pool is built
	// without an API server, like the rest of the wiring.
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, Mapper: coreMapper(), ByObject: byObject,
		DefaultWatchErrorHandler: p.watchFailed})
	if err != nil {
		return nil, fmt.Errorf("building its node cache: %w", err)
	}
	p.c = c
	return p, nil
}

// watchFailed is the pool's informers' watch error handler: it logs as
// client-go does, and tells the pool's owner (readFailed) why the pool is
// not read. The informer tries again by itself.
func (p *nodePool) watchFailed(ctx context.Context, r *toolscache.Reflector, err error) {
	toolscache.DefaultWatchErrorHandler(ctx, r, err)
	p.mu.Lock()
	failed := p.readFailed
	p.mu.Unlock()
	if failed != nil {
		failed(err)
	}
}

// nodePool keeps a node-pool budget's total equal to what its nodes offer.
// It is a manager runnable in the caches group: its informers sync before
// any controller starts, so no slice is admitted against an empty pool.
type nodePool struct {
	l         *ledger.Ledger
	c         cache.Cache
	selector  labels.Selector
	names     []corev1.ResourceName
	reserve   corev1.ResourceList
	share     int
	localPods bool

	mu sync.Mutex
	// nodes are the pool's nodes; eligible ones add their allocatable to
	// alloc, and their local pods' requests to podSum.
	nodes  map[string]*poolNode
	pods   map[types.NamespacedName]podUse
	alloc  corev1.ResourceList
	podSum corev1.ResourceList
	// held (a SliceBudget's pool, see objectpool.go): the total is not
	// given to the ledger, until the pool is read whole, or after it was
	// replaced; handled are the event handlers' HasSynced.
	held    bool
	handled []func() bool
	// readFailed, when set, is told each error listing or watching the
	// pool's nodes (or pods) returns.
	readFailed func(error)
}

type poolNode struct {
	eligible    bool
	allocatable corev1.ResourceList
	// pods is what the provider's own pods on the node request.
	pods corev1.ResourceList
}

type podUse struct {
	node     string
	requests corev1.ResourceList
}

// GetCache makes the manager start the pool with its caches.
func (p *nodePool) GetCache() cache.Cache { return p.c }

// Start implements manager.Runnable: it follows the pool's nodes (and
// pods) until ctx ends.
func (p *nodePool) Start(ctx context.Context) error {
	nodes, err := p.c.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return fmt.Errorf("budget %q: watching nodes: %w", p.l.Name(), err)
	}
	reg, err := nodes.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.node(o, false) },
		UpdateFunc: func(_, o any) { p.node(o, false) },
		DeleteFunc: func(o any) { p.node(o, true) },
	})
	if err != nil {
		return fmt.Errorf("budget %q: watching nodes: %w", p.l.Name(), err)
	}
	handled := []func() bool{reg.HasSynced}
	if p.localPods {
		pods, err := p.c.GetInformer(ctx, &corev1.Pod{})
		if err != nil {
			return fmt.Errorf("budget %q: watching pods: %w", p.l.Name(), err)
		}
		reg, err := pods.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { p.pod(o, false) },
			UpdateFunc: func(_, o any) { p.pod(o, false) },
			DeleteFunc: func(o any) { p.pod(o, true) },
		})
		if err != nil {
			return fmt.Errorf("budget %q: watching pods: %w", p.l.Name(), err)
		}
		handled = append(handled, reg.HasSynced)
	}
	p.mu.Lock()
	p.handled = handled
	p.mu.Unlock()
	return p.c.Start(ctx)
}

func (p *nodePool) node(o any, gone bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o, gone = t.Obj, true
	}
	n, ok := o.(*corev1.Node)
	if !ok {
		return
	}
	p.mu.Lock()
	pn := p.nodes[n.Name]
	if pn == nil {
		pn = &poolNode{}
		p.nodes[n.Name] = pn
	}
	p.count(pn, -1)
	if gone {
		// Its pods may outlive it, or it may come back under its name:
		// keep what they request until they go.
		pn.eligible, pn.allocatable = false, nil
		if isZero(pn.pods) {
			delete(p.nodes, n.Name)
		}
	} else {
		pn.eligible = eligible(n)
		pn.allocatable = pick(n.Status.Allocatable, p.names)
		p.count(pn, +1)
	}
	p.setLocked()
	p.mu.Unlock()
}

func (p *nodePool) pod(o any, gone bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o, gone = t.Obj, true
	}
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	p.mu.Lock()
	if old, ok := p.pods[key]; ok {
		p.podOn(old, -1)
		delete(p.pods, key)
		if pn := p.nodes[old.node]; pn != nil && pn.allocatable == nil && !pn.eligible && isZero(pn.pods) {
			delete(p.nodes, old.node) // the last pod of a node that is gone
		}
	}
	if !gone && local(pod) {
		use := podUse{node: pod.Spec.NodeName, requests: pick(podRequests(pod), p.names)}
		p.pods[key] = use
		p.podOn(use, +1)
	}
	p.setLocked()
	p.mu.Unlock()
}

// count adds (sign +1) or removes (-1) an eligible node's allocatable and
// local pods.
func (p *nodePool) count(pn *poolNode, sign int) {
	if !pn.eligible {
		return
	}
	addTo(p.alloc, pn.allocatable, sign)
	addTo(p.podSum, pn.pods, sign)
}

// podOn adds or removes a local pod's requests on its node.
func (p *nodePool) podOn(use podUse, sign int) {
	pn := p.nodes[use.node]
	if pn == nil {
		pn = &poolNode{} // a pod seen before its node: counted once the node is
		p.nodes[use.node] = pn
	}
	if pn.pods == nil {
		pn.pods = corev1.ResourceList{}
	}
	addTo(pn.pods, use.requests, sign)
	if pn.eligible {
		addTo(p.podSum, use.requests, sign)
	}
}

// totalLocked is alloc × share − reserve − local pods, never below zero,
// for the pool's resources.
func (p *nodePool) totalLocked() corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, n := range p.names {
		a := p.alloc[n]
		t := a.DeepCopy()
		if p.share != defaultSharePercent {
			// In decimal arithmetic: memory in bytes times 1000 (milli)
			// times a percentage overflows int64 on a large pool.
			d := new(inf.Dec).Mul(a.AsDec(), inf.NewDec(int64(p.share), 0))
			d.QuoRound(d, inf.NewDec(100, 0), 3, inf.RoundDown)
			t = *resource.NewDecimalQuantity(*d, a.Format)
		}
		if r, ok := p.reserve[n]; ok {
			t.Sub(r)
		}
		if p.localPods {
			t.Sub(p.podSum[n])
		}
		if t.Sign() < 0 {
			t = resource.Quantity{}
		}
		total[n] = t
	}
	return total
}

// setLocked gives the ledger the pool's total, under the pool's lock so
// that a node and a pod event handled at once store their totals in order.
func (p *nodePool) setLocked() {
	if p.held {
		return
	}
	// The total only names the pool's resources, never negative: SetTotal
	// cannot refuse it.
	_ = p.l.SetTotal(p.totalLocked())
}

func isZero(rl corev1.ResourceList) bool {
	for _, q := range rl {
		if !q.IsZero() {
			return false
		}
	}
	return true
}

// eligible reports whether a node offers its capacity to the pool: Ready,
// schedulable, and not one of Liqo's virtual nodes.
func eligible(n *corev1.Node) bool {
	if n.Spec.Unschedulable || n.Labels[labelNodeType] == nodeTypeVirtual || !n.DeletionTimestamp.IsZero() {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// local reports whether a pod is the provider's own and still holds what
// it requests.
func local(pod *corev1.Pod) bool {
	if pod.Labels[labelManagedBy] == managedByShadowPod {
		return false
	}
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// podRequests is what a pod holds on its node, as the scheduler counts
// it: pod-level requests when set; else the larger of its containers'
// requests plus its sidecars' (init containers that keep running,
// restartPolicy Always) and, for each other init container, its requests
// plus the sidecars started before it; plus its overhead, and one pod.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	if pr := pod.Spec.Resources; pr != nil && len(pr.Requests) > 0 {
		addTo(out, pr.Requests, +1)
	} else {
		sidecars, initMax := corev1.ResourceList{}, corev1.ResourceList{}
		for _, c := range pod.Spec.InitContainers {
			step := sidecars.DeepCopy()
			addTo(step, c.Resources.Requests, +1)
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				addTo(sidecars, c.Resources.Requests, +1)
			}
			for n, q := range step {
				if cur, ok := initMax[n]; !ok || q.Cmp(cur) > 0 {
					initMax[n] = q
				}
			}
		}
		for _, c := range pod.Spec.Containers {
			addTo(out, c.Resources.Requests, +1)
		}
		addTo(out, sidecars, +1)
		for n, q := range initMax {
			if cur, ok := out[n]; !ok || q.Cmp(cur) > 0 {
				out[n] = q.DeepCopy()
			}
		}
	}
	addTo(out, pod.Spec.Overhead, +1)
	if _, ok := out[corev1.ResourcePods]; !ok {
		out[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	}
	return out
}

func pick(rl corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		if q, ok := rl[n]; ok {
			out[n] = q.DeepCopy()
		}
	}
	return out
}

func addTo(dst, src corev1.ResourceList, sign int) {
	for n, q := range src {
		v := dst[n]
		if sign > 0 {
			v.Add(q)
		} else {
			v.Sub(q)
		}
		dst[n] = v
	}
}

// trimNode keeps what the pool's total needs of a node: its name, labels,
// schedulability, allocatable and Ready condition. A node's status also
// lists its images and addresses, which dominate its size.
func trimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, ResourceVersion: n.ResourceVersion, UID: n.UID, DeletionTimestamp: n.DeletionTimestamp},
		Spec:       corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable},
		Status:     corev1.NodeStatus{Allocatable: n.Status.Allocatable},
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out, nil
}

// trimPod keeps what a pod holds on its node: its name, the label that
// tells Liqo's offloaded pods apart, its node, phase and requests.
func trimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, ResourceVersion: pod.ResourceVersion, UID: pod.UID},
		Spec:       corev1.PodSpec{NodeName: pod.Spec.NodeName, Overhead: pod.Spec.Overhead},
		Status:     corev1.PodStatus{Phase: pod.Status.Phase},
	}
	if pr := pod.Spec.Resources; pr != nil && len(pr.Requests) > 0 {
		out.Spec.Resources = &corev1.ResourceRequirements{Requests: pr.Requests}
	}
	if v, ok := pod.Labels[labelManagedBy]; ok {
		out.Labels = map[string]string{labelManagedBy: v}
	}
	for _, c := range pod.Spec.Containers {
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests}})
	}
	for _, c := range pod.Spec.InitContainers {
		out.Spec.InitContainers = append(out.Spec.InitContainers, corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy,
			Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests}})
	}
	return out, nil
}

// PinToNodePool pins an offer to a node-pool budget's nodes: it sets the slice's
// status.nodeSelector to the pool's selector, so that the consumer's
// virtual kubelet asks for those nodes, and adds the selector's labels to
// status.nodeLabels, so that the consumer's virtual node shows them. Call it
// from Handle when accepting. Liqo's provider does not enforce
// nodeSelector: the consumer's virtual kubelet applies it to the pods it
// offloads. It returns an error for a budget that is not a node pool, or a
// pool whose selector is not made of key=value terms (a nodeSelector can
// express no other). A budget from FromObject pins to its SliceBudget's
// spec.nodePool once the pool is read.
func (b *Budget) PinToNodePool(rs *authv1beta1.ResourceSlice) error {
	p := b.pool
	if p == nil && b.object != nil {
		p = b.object.pool.Load() // its SliceBudget's spec.nodePool, once read
	}
	if p == nil {
		return fmt.Errorf("budget %q is not a node pool", b.l.Name())
	}
	pin, err := p.pin()
	if err != nil {
		return fmt.Errorf("budget %q: %w", b.l.Name(), err)
	}
	if rs.Status.NodeSelector == nil {
		rs.Status.NodeSelector = map[string]string{}
	}
	if rs.Status.NodeLabels == nil {
		rs.Status.NodeLabels = map[string]string{}
	}
	for k, v := range pin {
		rs.Status.NodeSelector[k] = v
		rs.Status.NodeLabels[k] = v
	}
	return nil
}

// pin is the pool's selector as key=value pairs.
func (p *nodePool) pin() (map[string]string, error) {
	reqs, selectable := p.selector.Requirements()
	if !selectable {
		return nil, errors.New("its node selector selects nothing")
	}
	out := map[string]string{}
	for _, r := range reqs {
		vals := r.Values().List()
		if (r.Operator() != selection.Equals && r.Operator() != selection.DoubleEquals && r.Operator() != selection.In) || len(vals) != 1 {
			return nil, fmt.Errorf("its node selector term %q is not key=value: a nodeSelector cannot express it", r.String())
		}
		out[r.Key()] = vals[0]
	}
	return out, nil
}

// coreMapper maps the two core types a pool reads.
func coreMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{corev1.SchemeGroupVersion})
	m.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	return m
}
