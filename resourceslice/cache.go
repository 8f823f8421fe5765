package resourceslice

import (
	"reflect"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// trimSlice is the transform DropUnreadSliceFields installs.
func trimSlice(obj any) (any, error) {
	rs, ok := obj.(*authv1beta1.ResourceSlice)
	if !ok {
		return obj, nil
	}
	rs.ManagedFields = nil
	rs.Spec.CSR = nil
	rs.Status.AuthParams = nil
	return rs, nil
}

var _ toolscache.TransformFunc = trimSlice

// DropUnreadSliceFields makes a manager's cache drop from ResourceSlices what a class
// controller never reads (metadata.managedFields, spec.csr, and
// status.authParams: the signed certificate, CA and API server address
// Liqo hands back), whatever the scheme holds when it is called:
//
//	opts := manager.Options{...}
//	resourceslice.DropUnreadSliceFields(&opts.Cache)
//	mgr, err := manager.New(cfg, opts)
//
// It chains the trim after the cache's default transform (which applies to
// every type without a transform of its own), so it needs no scheme entry;
// when opts already configures ResourceSlices (ByObject: a label selector,
// namespaces, a transform), it chains after that entry's transform and
// keeps the rest. Other objects pass through unchanged.
//
// It is safe with the SDK's status writes: the patch is the difference
// between the cached object and the desired one, so fields missing from both
// are never in it and stay as they are on the server. Handlers of a trimmed
// cache must not read spec.csr or status.authParams; everything else
// (labels, spec.resources, spec.class, the consumer ID, conditions, the
// offered status) is kept.
func DropUnreadSliceFields(opts *cache.Options) {
	sliceType := reflect.TypeOf(&authv1beta1.ResourceSlice{})
	for k, v := range opts.ByObject {
		if reflect.TypeOf(k) != sliceType {
			continue
		}
		v.Transform = chain(v.Transform, trimSlice)
		opts.ByObject[k] = v
		return
	}
	opts.DefaultTransform = chain(opts.DefaultTransform, trimSlice)
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
