package cappedresources_test

import (
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/cappedresources"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

func TestPolicy(t *testing.T) {
	caps, err := cappedresources.ParseCaps("cpu=4,memory=8Gi")
	if err != nil {
		t.Fatal(err)
	}
	p, err := cappedresources.New(caps)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason       string
		req          []slicetest.SliceOption
		wantDecision authv1beta1.ResourceSliceConditionStatus
		wantReason   string
		want         map[corev1.ResourceName]string
	}{
		"UnderCaps": {
			reason:       "Requests within the caps are granted as asked.",
			req:          []slicetest.SliceOption{slicetest.WithRequest("cpu", "2"), slicetest.WithRequest("memory", "1Gi")},
			wantDecision: conditions.Accepted, wantReason: cappedresources.ReasonGranted,
			want: map[corev1.ResourceName]string{"cpu": "2", "memory": "1Gi"},
		},
		"OverCaps": {
			reason:       "Requests above a cap get the cap.",
			req:          []slicetest.SliceOption{slicetest.WithRequest("cpu", "16"), slicetest.WithRequest("memory", "1Gi")},
			wantDecision: conditions.Accepted, wantReason: cappedresources.ReasonCapped,
			want: map[corev1.ResourceName]string{"cpu": "4", "memory": "1Gi"},
		},
		"Uncapped": {
			reason:       "A resource without a cap is granted as requested.",
			req:          []slicetest.SliceOption{slicetest.WithRequest("pods", "500")},
			wantDecision: conditions.Accepted, wantReason: cappedresources.ReasonGranted,
			want: map[corev1.ResourceName]string{"pods": "500"},
		},
		"Absurd": {
			reason:       "Absurd quantities are capped, not trusted.",
			req:          []slicetest.SliceOption{slicetest.WithRequest("cpu", "1e15"), slicetest.WithRequest("memory", "9e18")},
			wantDecision: conditions.Accepted, wantReason: cappedresources.ReasonCapped,
			want: map[corev1.ResourceName]string{"cpu": "4", "memory": "8Gi"},
		},
		"Nothing": {
			reason:       "A slice requesting nothing gets a clear denial.",
			req:          []slicetest.SliceOption{slicetest.WithRequests(corev1.ResourceList{})},
			wantDecision: conditions.Denied, wantReason: cappedresources.ReasonNoResources,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := slicetest.NewSlice("s", append([]slicetest.SliceOption{slicetest.WithClass("gold")}, tc.req...)...)
			res := slicetest.Run(t, "gold", p, s)
			if res.Err != nil {
				t.Fatalf("%s\n%v", tc.reason, res.Err)
			}
			if res.Decision != tc.wantDecision || res.Reason != tc.wantReason {
				t.Errorf("%s\nwant %s/%s, got %s/%s (%s)", tc.reason, tc.wantDecision, tc.wantReason, res.Decision, res.Reason, res.Message)
			}
			if len(res.Resources) != len(tc.want) {
				t.Errorf("%s\ngranted %v, want %v", tc.reason, res.Resources, tc.want)
			}
			for name, q := range tc.want {
				got := res.Resources[name]
				if got.Cmp(resource.MustParse(q)) != 0 {
					t.Errorf("%s\n%s: want %s, got %s", tc.reason, name, q, got.String())
				}
			}
		})
	}
}

func TestParseCaps(t *testing.T) {
	good, err := cappedresources.ParseCaps(" cpu=4, memory=8Gi ,pods=110")
	if err != nil || len(good) != 3 || good.Pods().Value() != 110 {
		t.Errorf("good caps: %v %v", good, err)
	}
	for _, bad := range []string{"cpu", "cpu=", "=4", "cpu=four", "cpu=-1", "cpu=1,cpu=2"} {
		if _, err := cappedresources.ParseCaps(bad); err == nil {
			t.Errorf("ParseCaps(%q): want an error", bad)
		}
	}
	if _, err := cappedresources.New(corev1.ResourceList{"cpu": resource.MustParse("-1")}); err == nil {
		t.Error("New with a negative cap: want an error")
	}
}
