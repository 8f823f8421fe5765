package resourceslice

import (
	"reflect"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TrimSlice is a cache transform for ResourceSlices that drops what a class
// controller never reads: metadata.managedFields, spec.csr (the consumer's
// certificate signing request) and status.authParams (the signed
// certificate, CA and API server address Liqo hands back). Other objects
// pass through unchanged.
//
// It is safe with the SDK's status writes: the patch is the difference
// between the cached object and the desired one, so fields missing from both
// are never in it and stay as they are on the server. Handlers of a trimmed
// cache must not read spec.csr or status.authParams; everything else
// (labels, spec.resources, spec.class, the consumer ID, conditions, the
// offered status) is kept.
func TrimSlice(obj any) (any, error) {
	rs, ok := obj.(*authv1beta1.ResourceSlice)
	if !ok {
		return obj, nil
	}
	rs.ManagedFields = nil
	rs.Spec.CSR = nil
	rs.Status.AuthParams = nil
	return rs, nil
}

var _ toolscache.TransformFunc = TrimSlice

// TrimCache sets TrimSlice as the ResourceSlice transform of a manager's
// cache options, keeping any ByObject settings (label selector, namespaces)
// already there and running an existing transform first:
//
//	opts := manager.Options{...}
//	resourceslice.TrimCache(&opts.Cache)
//	mgr, err := manager.New(cfg, opts)
func TrimCache(opts *cache.Options) {
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	sliceType := reflect.TypeOf(&authv1beta1.ResourceSlice{})
	for k, v := range opts.ByObject {
		if reflect.TypeOf(k) != sliceType {
			continue
		}
		prev := v.Transform
		v.Transform = chain(prev, TrimSlice)
		opts.ByObject[k] = v
		return
	}
	opts.ByObject[&authv1beta1.ResourceSlice{}] = cache.ByObject{Transform: TrimSlice}
}

func chain(first, second toolscache.TransformFunc) toolscache.TransformFunc {
	if first == nil {
		return second
	}
	return func(obj any) (any, error) {
		out, err := first(obj)
		if err != nil {
			return nil, err
		}
		return second(out)
	}
}
