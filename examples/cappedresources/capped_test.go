package cappedresources_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/examples/cappedresources"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

func TestPolicy(t *testing.T) {
	caps, err := cappedresources.ParseCaps("cpu=4,memory=8Gi")
	require.NoError(t, err)
	p, err := cappedresources.New(caps)
	require.NoError(t, err)
	cases := map[string]struct {
		reason       string
		req          []slicetest.SliceOption
		wantDecision authv1beta1.ResourceSliceConditionStatus
		wantReason   string
		wantMessage  string
		want         map[corev1.ResourceName]string
	}{
		"UnderCaps": {
			reason:       "Requests within the caps are granted as asked.",
			req:          []slicetest.SliceOption{slicetest.WithRequest("cpu", "2"), slicetest.WithRequest("memory", "1Gi")},
			wantDecision: authv1beta1.ResourceSliceConditionAccepted, wantReason: cappedresources.ReasonGranted,
			want: map[corev1.ResourceName]string{"cpu": "2", "memory": "1Gi"},
		},
		"OverCaps": {
			reason:       "Requests above a cap get the cap.",
			req:          []slicetest.SliceOption{slicetest.WithRequest("cpu", "16"), slicetest.WithRequest("memory", "1Gi")},
			wantDecision: authv1beta1.ResourceSliceConditionAccepted, wantReason: cappedresources.ReasonCapped,
			want: map[corev1.ResourceName]string{"cpu": "4", "memory": "1Gi"},
		},
		"Uncapped": {
			reason:       "A resource without a cap is not offered: the standard class must not grant 100 GPUs.",
			req:          []slicetest.SliceOption{slicetest.WithRequest("cpu", "2"), slicetest.WithRequest("nvidia.com/gpu", "100"), slicetest.WithRequest("pods", "10")},
			wantDecision: authv1beta1.ResourceSliceConditionAccepted, wantReason: cappedresources.ReasonCapped,
			wantMessage: "not offered: nvidia.com/gpu, pods",
			want:        map[corev1.ResourceName]string{"cpu": "2"},
		},
		"CappedAndUncapped": {
			reason:       "The message names what was capped and what was dropped.",
			req:          []slicetest.SliceOption{slicetest.WithRequest("cpu", "16"), slicetest.WithRequest("nvidia.com/gpu", "1")},
			wantDecision: authv1beta1.ResourceSliceConditionAccepted, wantReason: cappedresources.ReasonCapped,
			wantMessage: "capped: cpu 16→4; not offered: nvidia.com/gpu",
			want:        map[corev1.ResourceName]string{"cpu": "4"},
		},
		"OnlyUncapped": {
			reason:       "A slice asking only for what the policy does not offer is denied, naming it.",
			req:          []slicetest.SliceOption{slicetest.WithRequest("nvidia.com/gpu", "100")},
			wantDecision: authv1beta1.ResourceSliceConditionDenied, wantReason: cappedresources.ReasonNotOffered,
			wantMessage: "not offered: nvidia.com/gpu",
		},
		"Absurd": {
			reason:       "Absurd quantities are capped, not trusted.",
			req:          []slicetest.SliceOption{slicetest.WithRequest("cpu", "1e15"), slicetest.WithRequest("memory", "9e18")},
			wantDecision: authv1beta1.ResourceSliceConditionAccepted, wantReason: cappedresources.ReasonCapped,
			want: map[corev1.ResourceName]string{"cpu": "4", "memory": "8Gi"},
		},
		"Nothing": {
			reason:       "A slice requesting nothing (a new slice's spec.resources is empty) gets a clear denial.",
			wantDecision: authv1beta1.ResourceSliceConditionDenied, wantReason: cappedresources.ReasonNoResources,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := slicetest.NewSlice("s", append([]slicetest.SliceOption{slicetest.WithClass("gold")}, tc.req...)...)
			res := slicetest.New(t, "gold", p, slicetest.WithObjects(s)).Reconcile(s)
			require.NoError(t, res.Err, tc.reason)
			assert.Equal(t, tc.wantDecision, res.Decision, "%s (%s)", tc.reason, res.Message)
			assert.Equal(t, tc.wantReason, res.Reason, "%s (%s)", tc.reason, res.Message)
			if tc.wantMessage != "" {
				assert.Equal(t, tc.wantMessage, res.Message, tc.reason)
			}
			if diff := cmp.Diff(list(tc.want), res.Resources, cmpopts.EquateEmpty(), quantityByValue); diff != "" {
				t.Errorf("%s\ngranted (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// quantityByValue compares quantities by value: 1Gi equals 1073741824.
var quantityByValue = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// list parses the quantities of a test case.
func list(m map[corev1.ResourceName]string) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for name, q := range m {
		rl[name] = resource.MustParse(q)
	}
	return rl
}

func TestParseCaps(t *testing.T) {
	good, err := cappedresources.ParseCaps(" cpu=4, memory=8Gi ,pods=110")
	require.NoError(t, err)
	want := list(map[corev1.ResourceName]string{"cpu": "4", "memory": "8Gi", "pods": "110"})
	if diff := cmp.Diff(want, good, quantityByValue); diff != "" {
		t.Errorf("good caps (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"cpu", "cpu=", "=4", "cpu=four", "cpu=-1", "cpu=1,cpu=2"} {
		_, err := cappedresources.ParseCaps(bad)
		assert.Error(t, err, "ParseCaps(%q)", bad)
	}
	_, err = cappedresources.New(corev1.ResourceList{"cpu": resource.MustParse("-1")})
	assert.Error(t, err, "New with a negative cap")
	_, err = cappedresources.New(corev1.ResourceList{})
	assert.Error(t, err, "New with no cap: the policy would offer nothing")
}
