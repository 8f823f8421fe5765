package grantrecords

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
)

// Defaults of the options.
const (
	// DefaultClass is the class whose grants are recorded.
	DefaultClass = "gold"
	// DefaultNamespace is the accounting namespace holding the records.
	DefaultNamespace = "sliceclass-accounting"
	// DefaultPriority is the value of the consumers' PriorityClasses.
	DefaultPriority int32 = 1000
)

// highestUserPriority is the highest value the API server accepts for a
// PriorityClass that is not the system's.
const highestUserPriority = 1_000_000_000

// ReasonGranted is the reason of the Accepted condition when the policy
// decides itself: the slice is granted what it asks.
const ReasonGranted = "Granted"

// Keys of a record's data.
const (
	KeyClass          = "class"
	KeySliceNamespace = "sliceNamespace"
	KeySliceName      = "sliceName"
	KeySliceUID       = "sliceUID"
	// KeyResources holds status.resources, one "name=quantity" line per
	// resource, sorted by name (a resource name such as nvidia.com/gpu
	// cannot be a key of its own).
	KeyResources = "resources"
)

// Policy decides the slices of a class and owns a grant record and a
// PriorityClass for each one it Accepts.
type Policy struct {
	class     string
	namespace string
	priority  int32
	decide    handler.Handler
}

var (
	_ handler.Handler = (*Policy)(nil)
	_ handler.Owner   = (*Policy)(nil)
)

// Option configures a Policy.
type Option func(*Policy)

// WithClass names the class (default DefaultClass): it prefixes the names
// of the objects, so that two classes recording the same slice do not claim
// one object.
func WithClass(class string) Option { return func(p *Policy) { p.class = class } }

// WithNamespace sets the accounting namespace (default DefaultNamespace).
func WithNamespace(ns string) Option { return func(p *Policy) { p.namespace = ns } }

// WithPriority sets the value of the PriorityClasses (default
// DefaultPriority, at most 1000000000 as for any PriorityClass not the
// system's). The API server refuses to change a PriorityClass's value: after
// a change, the existing ones fail to apply until they are deleted.
func WithPriority(value int32) Option { return func(p *Policy) { p.priority = value } }

// WithHandler lets h decide instead of granting what is asked. The records
// are made for the slices h Accepts.
func WithHandler(h handler.Handler) Option { return func(p *Policy) { p.decide = h } }

// New returns the policy, or an error naming the option that is wrong.
func New(opts ...Option) (*Policy, error) {
	p := &Policy{class: DefaultClass, namespace: DefaultNamespace, priority: DefaultPriority, decide: handler.Func(grantAsked)}
	for _, o := range opts {
		o(p)
	}
	if errs := validation.IsDNS1123Label(p.class); len(errs) > 0 {
		return nil, fmt.Errorf("grantrecords: class %q prefixes object names and must be a DNS label: %s", p.class, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(p.namespace); len(errs) > 0 {
		return nil, fmt.Errorf("grantrecords: namespace %q: %s", p.namespace, strings.Join(errs, "; "))
	}
	if p.priority > highestUserPriority {
		return nil, fmt.Errorf("grantrecords: priority %d is above %d, the highest a PriorityClass may have", p.priority, highestUserPriority)
	}
	if p.decide == nil {
		return nil, errors.New("grantrecords: WithHandler(nil)")
	}
	return p, nil
}

// Handle decides the slice: by the handler given WithHandler, else by
// granting what it asks.
func (p *Policy) Handle(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	return p.decide.Handle(ctx, rs)
}

func grantAsked(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, ReasonGranted, "all requested resources granted")
	return ctrl.Result{}, nil
}

// Owned returns the grant record of rs, a ConfigMap in the accounting
// namespace, and the consumer's PriorityClass, both named by objectName.
func (p *Policy) Owned(_ context.Context, rs *authv1beta1.ResourceSlice) ([]client.Object, error) {
	name := p.objectName(rs)
	record := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: name},
		Data: map[string]string{
			KeyClass:          p.class,
			KeySliceNamespace: rs.Namespace,
			KeySliceName:      rs.Name,
			KeySliceUID:       string(rs.UID),
			KeyResources:      formatResources(rs.Status.Resources),
		},
	}
	priority := &schedulingv1.PriorityClass{
		ObjectMeta:  metav1.ObjectMeta{Name: name},
		Value:       p.priority,
		Description: fmt.Sprintf("Pods offloaded by the consumer of slice %s/%s, class %s.", rs.Namespace, rs.Name, p.class),
	}
	return []client.Object{record, priority}, nil
}

// objectName is "<class>.<slice namespace>.<slice name>": unambiguous (a
// namespace has no dot), so two slices never share an object, not even two
// slices of one consumer. A name longer than an object name allows (253)
// keeps its first 242 characters and ends with a dash and a hash of the
// whole.
func (p *Policy) objectName(rs *authv1beta1.ResourceSlice) string {
	name := p.class + "." + rs.Namespace + "." + rs.Name
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:242], ".-") + "-" + hex.EncodeToString(sum[:])[:10]
}

func formatResources(rl corev1.ResourceList) string {
	lines := make([]string, 0, len(rl))
	for name, q := range rl {
		lines = append(lines, string(name)+"="+q.String())
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
