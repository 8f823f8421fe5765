package budget_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

// byValue compares quantities by value ("1" equals "1000m").
var byValue = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func list(pairs ...string) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		rl[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return rl
}

func TestNew(t *testing.T) {
	cases := map[string]struct {
		reason  string
		name    string
		total   corev1.ResourceList
		wantErr string
	}{
		"Valid": {
			reason: "A named budget over non-negative quantities.",
			name:   "pool", total: list("cpu", "64", "memory", "256Gi"),
		},
		"ZeroIsValid": {
			reason: "A zero capacity admits nothing of it, but is not an error.",
			name:   "pool", total: list("cpu", "0"),
		},
		"EmptyTotal": {
			reason: "A budget over nothing would limit nothing (a pool sized from nodes that report no GPU): refused.",
			name:   "gpu", total: corev1.ResourceList{}, wantErr: `budget "gpu": empty total`,
		},
		"EmptyName": {
			reason: "The name labels metrics and messages; it must be set.",
			total:  list("cpu", "64"), wantErr: "empty name",
		},
		"Negative": {
			reason: "Every negative quantity is named, in order.",
			name:   "pool", total: list("memory", "-1Gi", "cpu", "-2", "pods", "10"),
			wantErr: `budget "pool": negative quantity in total: cpu=-2, memory=-1Gi`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := budget.New(tc.name, tc.total)
			if tc.wantErr != "" {
				require.Error(t, err, tc.reason)
				assert.Contains(t, err.Error(), tc.wantErr, tc.reason)
				assert.Nil(t, b)
				return
			}
			require.NoError(t, err, tc.reason)
			assert.Equal(t, tc.name, b.Name())
			assert.Empty(t, cmp.Diff(tc.total, b.Total(), byValue), "total (-want +got)")
			assert.Empty(t, cmp.Diff(tc.total, b.Free(), byValue), "a new budget is all free (-want +got)")
		})
	}
}

func TestSetTotal(t *testing.T) {
	cases := map[string]struct {
		reason    string
		total     corev1.ResourceList
		wantErr   string
		wantTotal corev1.ResourceList
		wantFree  corev1.ResourceList
	}{
		"Grow": {
			reason: "Growing frees the difference.",
			total:  list("cpu", "16"), wantTotal: list("cpu", "16"), wantFree: list("cpu", "13"),
		},
		"ShrinkBelowUsage": {
			reason: "Shrinking below usage revokes nothing; free is zero, never negative.",
			total:  list("cpu", "2"), wantTotal: list("cpu", "2"), wantFree: list("cpu", "0"),
		},
		"NewResource": {
			reason: "A budget limits exactly the resources it was created with: naming another is an error, and the old total is kept.",
			total:  list("cpu", "8", "memory", "1Gi"), wantErr: `budget "pool" limits cpu, not memory`,
			wantTotal: list("cpu", "8"), wantFree: list("cpu", "5"),
		},
		"MissingResourceIsZero": {
			reason: "A limited resource the new total omits becomes zero, never unlimited.",
			total:  corev1.ResourceList{}, wantTotal: list("cpu", "0"), wantFree: list("cpu", "0"),
		},
		"Negative": {
			reason: "A negative quantity is refused and the old total kept.",
			total:  list("cpu", "-8"), wantErr: `budget "pool": negative quantity in total: cpu=-8`,
			wantTotal: list("cpu", "8"), wantFree: list("cpu", "5"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := budget.New("pool", list("cpu", "8"))
			require.NoError(t, err)
			hold(t, b, "a", list("cpu", "3"))

			err = b.SetTotal(tc.total)
			if tc.wantErr != "" {
				require.Error(t, err, tc.reason)
				assert.Contains(t, err.Error(), tc.wantErr, tc.reason)
			} else {
				require.NoError(t, err, tc.reason)
			}
			assert.Empty(t, cmp.Diff(tc.wantTotal, b.Total(), byValue), "%s: total (-want +got)", tc.reason)
			assert.Empty(t, cmp.Diff(tc.wantFree, b.Free(), byValue), "%s: free (-want +got)", tc.reason)
		})
	}
}

// hold makes a slice of class gold hold offer, as an admitted and written
// acceptance does.
func hold(t *testing.T, b *budget.Budget, name string, offer corev1.ResourceList) {
	t.Helper()
	l := ledger.Of(b)
	_ = l.Attach("gold", ledger.Class{}) // once per budget; later calls say it is attached
	l.ObserveSlice(ledger.Slice{Key: types.NamespacedName{Namespace: "ns", Name: name}, UID: types.UID(name), RV: "1",
		Class: "gold", Accepted: true, Grant: offer})
}

func TestReturnedListsAreCopies(t *testing.T) {
	cases := map[string]struct {
		reason string
		get    func(*budget.Budget) corev1.ResourceList
	}{
		"Total": {reason: "Changing Total's result changes no capacity.", get: (*budget.Budget).Total},
		"Used":  {reason: "Changing Used's result frees nothing.", get: (*budget.Budget).Used},
		"Free":  {reason: "Changing Free's result reserves nothing.", get: (*budget.Budget).Free},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := budget.New("pool", list("cpu", "8", "memory", "4Gi"))
			require.NoError(t, err)
			hold(t, b, "a", list("cpu", "3", "memory", "1Gi"))
			total, used, free := b.Total(), b.Used(), b.Free()

			got := tc.get(b)
			require.NotEmpty(t, got)
			q := got[corev1.ResourceCPU]
			q.Add(resource.MustParse("100"))
			got[corev1.ResourceCPU] = q
			delete(got, corev1.ResourceMemory)
			got[corev1.ResourcePods] = resource.MustParse("1")

			assert.Empty(t, cmp.Diff(total, b.Total(), byValue), "%s: total (-want +got)", tc.reason)
			assert.Empty(t, cmp.Diff(used, b.Used(), byValue), "%s: used (-want +got)", tc.reason)
			assert.Empty(t, cmp.Diff(free, b.Free(), byValue), "%s: free (-want +got)", tc.reason)
		})
	}
}

func TestArgumentsAreCopied(t *testing.T) {
	total := list("cpu", "8")
	b, err := budget.New("pool", total)
	require.NoError(t, err)
	total[corev1.ResourceCPU] = resource.MustParse("100")
	assert.Empty(t, cmp.Diff(list("cpu", "8"), b.Total(), byValue), "New keeps its own copy (-want +got)")

	next := list("cpu", "16")
	require.NoError(t, b.SetTotal(next))
	next[corev1.ResourceCPU] = resource.MustParse("1")
	assert.Empty(t, cmp.Diff(list("cpu", "16"), b.Total(), byValue), "SetTotal keeps its own copy (-want +got)")
}

func TestUsedCountsOnlyLimitedResources(t *testing.T) {
	b, err := budget.New("pool", list("cpu", "8"))
	require.NoError(t, err)
	hold(t, b, "a", list("cpu", "3", "memory", "1Ti"))
	assert.Empty(t, cmp.Diff(list("cpu", "3"), b.Used(), byValue), "used (-want +got)")
	assert.Empty(t, cmp.Diff(list("cpu", "5"), b.Free(), byValue), "free (-want +got)")
}
