package resourceslice_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// offer is what a handler decides at one step of TestStatusPatchFollowsEveryOffer.
type offer struct {
	reason    string
	accept    bool
	resources corev1.ResourceList
	storage   []liqov1beta1.StorageType
	labels    map[string]string
	// wantKeys are the status keys the patch must carry (and no others).
	wantKeys []string
}

// Each step changes the offer in a different way; after each one the stored
// slice must hold exactly the offer, Liqo's fields must be untouched, and the
// patch must carry only the owned fields that changed, with the
// resourceVersion.
func TestStatusPatchFollowsEveryOffer(t *testing.T) {
	q := resource.MustParse
	steps := []offer{
		{reason: "first decision: condition, resources, storage and labels appear",
			accept: true, resources: corev1.ResourceList{"cpu": q("2"), "memory": q("4Gi")},
			storage: []liqov1beta1.StorageType{{StorageClassName: "fast"}}, labels: map[string]string{"tier": "gold", "zone": "a"},
			wantKeys: []string{"conditions", "resources", "storageClasses", "nodeLabels"}},
		{reason: "a resource removed, a label changed and one removed; condition and storage unchanged",
			accept: true, resources: corev1.ResourceList{"cpu": q("2")},
			storage: []liqov1beta1.StorageType{{StorageClassName: "fast"}}, labels: map[string]string{"tier": "silver"},
			wantKeys: []string{"resources", "nodeLabels"}},
		{reason: "the same quantity in another notation is no change",
			accept: true, resources: corev1.ResourceList{"cpu": q("2000m")},
			storage: []liqov1beta1.StorageType{{StorageClassName: "fast"}}, labels: map[string]string{"tier": "silver"},
			wantKeys: nil},
		{reason: "denied: the offer emptied and the condition flipped",
			accept: false, wantKeys: []string{"conditions", "resources", "storageClasses", "nodeLabels"}},
	}
	var step int
	h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		o := steps[step]
		rs.Status.Resources, rs.Status.StorageClasses, rs.Status.NodeLabels = o.resources, o.storage, o.labels
		if o.accept {
			conditions.Accept(rs, "Granted", "")
		} else {
			conditions.Deny(rs, "Full", "")
		}
		return ctrl.Result{}, nil
	})
	s := goldSlice("offers")
	hs := slicetest.New(t, gold, h, slicetest.WithObjects(s))
	for i, o := range steps {
		step = i
		res := hs.Reconcile(s)
		if res.Err != nil {
			t.Fatalf("step %d (%s): %v", i, o.reason, res.Err)
		}
		got := res.Slice
		if diff := cmp.Diff(o, offer{resources: got.Status.Resources, storage: got.Status.StorageClasses, labels: got.Status.NodeLabels}, offerFields...); diff != "" {
			t.Errorf("step %d (%s): stored offer (-want +got):\n%s", i, o.reason, diff)
		}
		if o.accept != conditions.IsAccepted(got) || !conditions.IsAuthenticated(got) || got.Status.AuthParams == nil || string(got.Status.AuthParams.SignedCRT) != string(s.Status.AuthParams.SignedCRT) {
			t.Errorf("step %d (%s): conditions %+v authParams %+v", i, o.reason, got.Status.Conditions, got.Status.AuthParams)
		}
		if len(o.wantKeys) == 0 {
			if len(res.Writes) != 0 {
				t.Errorf("step %d (%s): want no write, got %+v", i, o.reason, res.Writes)
			}
			continue
		}
		if len(res.Writes) != 1 {
			t.Fatalf("step %d (%s): want 1 write, got %+v", i, o.reason, res.Writes)
		}
		var body struct {
			Metadata map[string]any `json:"metadata"`
			Status   map[string]any `json:"status"`
		}
		if err := json.Unmarshal([]byte(res.Writes[0].Patch), &body); err != nil {
			t.Fatalf("step %d: patch %q: %v", i, res.Writes[0].Patch, err)
		}
		if body.Metadata["resourceVersion"] == nil || len(body.Metadata) != 1 {
			t.Errorf("step %d (%s): patch metadata %v, want only the resourceVersion", i, o.reason, body.Metadata)
		}
		var keys []string
		for k := range body.Status {
			keys = append(keys, k)
		}
		if diff := cmp.Diff(o.wantKeys, keys, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("step %d (%s): patched status keys (-want +got):\n%s\npatch: %s", i, o.reason, diff, res.Writes[0].Patch)
		}
	}
}

// offerFields compares only an offer's resources (by value), storage classes
// and labels, nil and empty alike.
var offerFields = []cmp.Option{
	cmp.AllowUnexported(offer{}),
	cmpopts.IgnoreFields(offer{}, "reason", "accept", "wantKeys"),
	cmpopts.EquateEmpty(),
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
}
