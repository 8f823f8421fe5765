package ledger_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

func TestNew(t *testing.T) {
	cases := map[string]struct {
		reason  string
		name    string
		total   corev1.ResourceList
		wantErr []string // substrings of the error; nil: no error
		want    []corev1.ResourceName
	}{
		"Valid": {
			reason: "A budget limits exactly the resources it was created with, listed sorted.",
			name:   "pool",
			total:  corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2"), corev1.ResourceCPU: resource.MustParse("4")},
			want:   []corev1.ResourceName{corev1.ResourceCPU, "nvidia.com/gpu"},
		},
		"ZeroIsALimit": {
			reason: "A resource named with 0 is limited (admits none), so New accepts it.",
			name:   "pool",
			total:  cpu("0"),
			want:   []corev1.ResourceName{corev1.ResourceCPU},
		},
		"EmptyName": {
			reason:  "A budget needs a name.",
			total:   cpu("4"),
			wantErr: []string{"empty name"},
		},
		"NilTotal": {
			reason:  "A budget naming no resource would limit nothing.",
			name:    "pool",
			wantErr: []string{`budget "pool"`, "empty total"},
		},
		"EmptyTotal": {
			reason:  "An empty (non-nil) total is refused like a nil one.",
			name:    "pool",
			total:   corev1.ResourceList{},
			wantErr: []string{"empty total"},
		},
		"Negative": {
			reason:  "Every negative quantity is named, sorted.",
			name:    "pool",
			total:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Gi"), corev1.ResourceCPU: resource.MustParse("-2"), "pods": resource.MustParse("3")},
			wantErr: []string{`budget "pool"`, "negative quantity in total: cpu=-2, memory=-1Gi"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, err := ledger.New(tc.name, tc.total)
			if tc.wantErr != nil {
				require.Error(t, err, tc.reason)
				assert.Nil(t, l, tc.reason)
				for _, s := range tc.wantErr {
					assert.Contains(t, err.Error(), s, tc.reason)
				}
				return
			}
			require.NoError(t, err, tc.reason)
			assert.Equal(t, tc.name, l.Name(), tc.reason)
			assert.Empty(t, cmp.Diff(tc.want, l.Resources()), "%s: Resources (-want +got)", tc.reason)
			assertList(t, tc.total, l.Total(), tc.reason+": Total")
			assertList(t, tc.total, l.Free(), tc.reason+": Free")
		})
	}
}

func TestNewCopiesTotal(t *testing.T) {
	total := cpu("4")
	l, _ := newLedger(t, total)
	total[corev1.ResourceCPU] = resource.MustParse("100")
	assertList(t, cpu("4"), l.Total(), "changing the caller's list must not change the budget")
}

func TestSetTotal(t *testing.T) {
	cases := map[string]struct {
		reason  string
		set     corev1.ResourceList
		wantErr string
		want    corev1.ResourceList
	}{
		"Grow": {
			reason: "SetTotal replaces the capacity.",
			set:    res("8", "4Gi"),
			want:   res("8", "4Gi"),
		},
		"MissingIsZero": {
			reason: "A limited resource the new total omits becomes 0, never unlimited.",
			set:    cpu("8"),
			want:   res("8", "0"),
		},
		"Extra": {
			reason:  "A resource the budget was not created with is refused; the old total stays.",
			set:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), "nvidia.com/gpu": resource.MustParse("1")},
			wantErr: "not nvidia.com/gpu",
			want:    res("4", "2Gi"),
		},
		"Negative": {
			reason:  "A negative quantity is refused; the old total stays.",
			set:     res("-1", "2Gi"),
			wantErr: "negative quantity in total: cpu=-1",
			want:    res("4", "2Gi"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, _ := newLedger(t, res("4", "2Gi"))
			err := l.SetTotal(tc.set)
			if tc.wantErr != "" {
				require.Error(t, err, tc.reason)
				assert.Contains(t, err.Error(), tc.wantErr, tc.reason)
			} else {
				require.NoError(t, err, tc.reason)
			}
			assertList(t, tc.want, l.Total(), tc.reason+": Total")
		})
	}
}

func TestSetTotalMissingResourceAdmitsNone(t *testing.T) {
	l, _ := newLedger(t, res("4", "2Gi"))
	require.NoError(t, l.SetTotal(cpu("4")))
	ok, msg := l.Check(gold("a"), res("1", "1Mi"))
	assert.False(t, ok, "memory dropped from the total is 0, not unlimited")
	assert.Equal(t, "budget pool: memory: asked 1Mi, waits until 1Mi is free (memory: asked 1Mi, more than the budget's total 0: it fits only if the total grows)", msg)
}

func TestUnnamedResourcesAreUnlimited(t *testing.T) {
	l, _ := newLedger(t, cpu("4"))
	offer := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "nvidia.com/gpu": resource.MustParse("1000")}
	a := admit(t, l, gold("a"), "1", at(0), offer)
	assertList(t, cpu("1"), l.Used(), "Used lists only limited resources")
	l.Done(a, ledger.Applied)
	l.ObserveSlice(slice("a", "2", offer))
	assertList(t, cpu("1"), l.Used(), "an observed grant of an unlimited resource is not counted")
	assertList(t, cpu("3"), l.Free(), "Free")
}

func TestFreeNeverNegative(t *testing.T) {
	l, _ := newLedger(t, res("4", "2Gi"))
	hold(l, "a", res("3", "1Gi"))
	require.NoError(t, l.SetTotal(res("1", "2Gi")))
	assertList(t, res("3", "1Gi"), l.Used(), "a smaller total revokes nothing")
	assertList(t, res("0", "1Gi"), l.Free(), "Free is clamped at zero")
}

func TestReturnedListsAreCopies(t *testing.T) {
	l, _ := newLedger(t, res("4", "2Gi"))
	hold(l, "a", res("1", "1Gi"))
	big := resource.MustParse("100")
	l.Total()[corev1.ResourceCPU] = big
	l.Used()[corev1.ResourceCPU] = big
	l.Free()[corev1.ResourceCPU] = big
	l.Resources()[0] = "changed"
	assertList(t, res("4", "2Gi"), l.Total(), "Total")
	assertList(t, res("1", "1Gi"), l.Used(), "Used")
	assertList(t, res("3", "1Gi"), l.Free(), "Free")
	assert.Equal(t, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}, l.Resources())
}

func TestAttachTwice(t *testing.T) {
	l, _ := newLedger(t, cpu("4"))
	assert.Error(t, l.Attach("gold", ledger.Class{}), "a class draws from a budget once")
	l.Detach("gold")
	assert.NoError(t, l.Attach("gold", ledger.Class{}), "a detached class may attach again")
}
