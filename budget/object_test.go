package budget_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// FromObject's construction: the API types are added to the manager's
// scheme, and the budget decides nothing until the object is read. (The
// options the spec sets do not compile here: FromObject takes
// ObjectOptions only.)
func TestFromObjectBuild(t *testing.T) {
	cases := map[string]struct {
		reason  string
		name    string
		opts    []budget.ObjectOption
		wantErr string
	}{
		"Plain":       {reason: "A name is all it takes.", name: "gold"},
		"OldestFirst": {reason: "The one option the spec does not set applies.", name: "gold", opts: []budget.ObjectOption{budget.WithOldestFirst()}},
		"EmptyName":   {reason: "A SliceBudget has a name.", wantErr: "empty SliceBudget name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mgr := envkit.UnreachableManager(t)
			b, err := budget.FromObject(mgr, tc.name, tc.opts...)
			if tc.wantErr != "" {
				require.Error(t, err, tc.reason)
				assert.Contains(t, err.Error(), tc.wantErr, tc.reason)
				return
			}
			require.NoError(t, err, tc.reason)
			assert.True(t, mgr.GetScheme().Recognizes(v1alpha1.GroupVersion.WithKind("SliceBudget")), "the API is added to the scheme")
			assert.Equal(t, tc.name, b.Name())
			l := ledger.Of(b)
			_, refusal := ledger.AdmitAll([]*ledger.Ledger{l}, ledger.Request{Holder: ledger.Holder{Class: "c"},
				Offer: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}})
			require.NotNil(t, refusal)
			assert.Equal(t, ledger.ReasonNotCounted, refusal.Reason, "not read yet: nothing is decided, nothing denied")
			assert.Contains(t, refusal.Message, `SliceBudget "gold" not read yet`)
			err = b.SetTotal(list("cpu", "1"))
			require.Error(t, err)
			assert.Equal(t, `budget "gold" follows SliceBudget "gold": edit its spec.total`, err.Error())
			err = b.SetConsumerLimit("acme", list("cpu", "1"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "edit its spec.consumerLimits")
		})
	}
	_, err := budget.FromObject(nil, "gold")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nil manager")
}
