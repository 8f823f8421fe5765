package sliceview

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The SDK's own caches beside the manager's: one kind each, decoded into a
// type of the SDK's that holds only what it reads (the status.class view
// of ResourceSlices, the charge of ShadowPods).

// NarrowScheme maps kind, and its list, to obj and list: the Go types the
// cache decodes them into.
func NarrowScheme(kind schema.GroupVersionKind, obj, list runtime.Object) *runtime.Scheme {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(kind, obj)
	scheme.AddKnownTypeWithName(kind.GroupVersion().WithKind(kind.Kind+"List"), list)
	metav1.AddToGroupVersion(scheme, kind.GroupVersion())
	return scheme
}

// NewNarrowCache builds a cache of mgr's API server on scheme (transform,
// if any, applied to each object before it is stored). what names it in
// errors. It lists and watches as any controller-runtime cache does:
// client-go frames the watch, and the API machinery decodes each object
// into scheme's type. It watches nothing until asked for an informer, and
// runs only once started: AddNarrowCache starts it with the manager, a
// budget's parts start it on the leader (internal/feed).
func NewNarrowCache(mgr manager.Manager, what string, scheme *runtime.Scheme, transform toolscache.TransformFunc) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:           scheme,
		Mapper:           mgr.GetRESTMapper(),
		HTTPClient:       mgr.GetHTTPClient(),
		DefaultTransform: transform,
	})
	if err != nil {
		return nil, fmt.Errorf("building the %s cache: %w", what, err)
	}
	return c, nil
}

// AddNarrowCache is NewNarrowCache, added to the manager: it starts and
// stops with the manager.
func AddNarrowCache(mgr manager.Manager, what string, scheme *runtime.Scheme, transform toolscache.TransformFunc) (cache.Cache, error) {
	c, err := NewNarrowCache(mgr, what, scheme, transform)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the %s cache to the manager: %w", what, err)
	}
	return c, nil
}
