package owned_test

import (
	"context"
	"maps"
	"sync"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/sliceclass/sliceclass/internal/owned"
)

const (
	class      = "gold"
	sliceNS    = "liqo-tenant-a"
	accounting = "sliceclass-accounting"
)

// newScheme holds client-go's types and Liqo's authentication group.
func newScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := authv1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// slice is a ResourceSlice as read from the API server: with a UID.
func slice(name string, uid types.UID) *authv1beta1.ResourceSlice {
	return &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: sliceNS, Name: name, UID: uid}}
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func priorityClass(name string, value int32) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
}

// calls counts the API calls made through a client, by verb ("get",
// "list", "apply", "delete"), and fails the applies of the objects named in
// failApply.
type calls struct {
	mu        sync.Mutex
	n         map[string]int
	failApply map[string]error
}

// counted wraps c so that calls counts what goes through it.
func counted(c client.WithWatch) (client.WithWatch, *calls) {
	k := &calls{n: map[string]int{}, failApply: map[string]error{}}
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			k.add("get")
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			k.add("list")
			return c.List(ctx, list, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			k.add("apply")
			if err := k.failure(obj.(interface{ GetName() string }).GetName()); err != nil {
				return err
			}
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			k.add("delete")
			return c.Delete(ctx, obj, opts...)
		},
	}), k
}

func (k *calls) add(verb string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.n[verb]++
}

func (k *calls) failure(name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.failApply[name]
}

// failApplyOf makes every apply of the object named name fail with err.
func (k *calls) failApplyOf(name string, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.failApply[name] = err
}

// take returns the counts since the last take and starts again from zero.
func (k *calls) take() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := maps.Clone(k.n)
	clear(k.n)
	return n
}

// fakeEnv is an Applier of class gold on controller-runtime's fake client,
// whose REST mapper knows ConfigMaps and ResourceSlices as namespaced and
// PriorityClasses as cluster-scoped. The Applier reads and writes through
// the counted client.
type fakeEnv struct {
	a       *owned.Applier
	c       client.WithWatch // the fake client itself, uncounted: what the test checks with
	counted client.WithWatch // the client the Appliers use
	calls   *calls
}

func newFakeEnv(t *testing.T, objs ...client.Object) *fakeEnv {
	t.Helper()
	s := newScheme(t)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Namespace"), meta.RESTScopeRoot)
	mapper.Add(schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"), meta.RESTScopeRoot)
	mapper.Add(authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind), meta.RESTScopeNamespace)
	c := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(objs...).WithReturnManagedFields().Build()
	e := &fakeEnv{c: c}
	e.counted, e.calls = counted(c)
	e.a = e.applier(t, owned.WithTypes(&corev1.ConfigMap{}))
	return e
}

// applier is another Applier of the class on the same client: a restart.
func (e *fakeEnv) applier(t *testing.T, opts ...owned.Option) *owned.Applier {
	t.Helper()
	a, err := owned.New(e.counted, e.counted, e.c.Scheme(), class, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// exists reports whether obj's kind has an object of obj's name, and reads
// it into obj.
func exists(t *testing.T, c client.Reader, obj client.Object) bool {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return err == nil
}

// refs names objects as a Report does.
func refs(t *testing.T, s *runtime.Scheme, objs ...client.Object) []owned.Ref {
	t.Helper()
	var out []owned.Ref
	for _, o := range objs {
		gvks, _, err := s.ObjectKinds(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, owned.Ref{GVK: gvks[0], Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	return out
}
