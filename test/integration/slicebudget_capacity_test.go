package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/apiserver"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// How full a SliceBudget is, on the API server: the CapacityBelowUsed
// condition that a capacity cut below what is held turns True (one event
// when it begins, none while it lasts), and the fullest resource that
// kubectl get sb prints for a budget of any resource.

// capacityBelowUsed returns the SliceBudget's CapacityBelowUsed condition,
// nil when it has none.
func capacityBelowUsed(t *testing.T, name string) *metav1.Condition {
	t.Helper()
	return meta(sliceBudget(t, cp.Client, name).Status.Conditions, "CapacityBelowUsed")
}

// A SliceBudget's total cut below what its Accepted slices hold turns its
// CapacityBelowUsed condition True with one Warning event; the status
// writes that follow while it lasts (a waiter, a spec edit) leave the
// condition as it was and record no other event; a total raised above
// what is held turns it False, with no event.
func TestSliceBudgetCapacityBelowUsedCondition(t *testing.T) {
	c := sbClient(t)
	ns := testkit.Namespace(t, cp, "sb-below")
	createSliceBudget(t, c, "sb-below", v1alpha1.SliceBudgetSpec{Total: cpuList("12")})
	objectClass(t, "sb-below", "sb-below")

	create(t, sliceIn(ns, "a", "sb-below", slicetest.WithRequest(corev1.ResourceCPU, "6")))
	create(t, sliceIn(ns, "b", "sb-below", slicetest.WithRequest(corev1.ResourceCPU, "6")))
	testkit.Eventually(t, "a and b Accepted", func() bool {
		return conditions.IsAccepted(get(t, ns, "a")) && conditions.IsAccepted(get(t, ns, "b"))
	})
	testkit.Eventually(t, "used 12 of 12, CapacityBelowUsed False", func() bool {
		st := sliceBudget(t, c, "sb-below").Status
		cnd := meta(st.Conditions, "CapacityBelowUsed")
		return cpuIs(st.Used, "12") && cnd != nil && cnd.Status == metav1.ConditionFalse
	})
	assert.Equal(t, "WithinCapacity", capacityBelowUsed(t, "sb-below").Reason)
	assert.Empty(t, budgetEvents(t, "sb-below"), "no event while within capacity")

	editSliceBudget(t, c, "sb-below", func(s *v1alpha1.SliceBudgetSpec) { s.Total = cpuList("8") })
	testkit.Eventually(t, "CapacityBelowUsed True", func() bool {
		cnd := capacityBelowUsed(t, "sb-below")
		return cnd != nil && cnd.Status == metav1.ConditionTrue
	})
	began := *capacityBelowUsed(t, "sb-below")
	assert.Equal(t, "UsedExceedsCapacity", began.Reason)
	assert.Contains(t, began.Message, "cpu 12 held of 8", "the message names the resource and the figures")
	testkit.Eventually(t, "one CapacityBelowUsed event", func() bool {
		evs := budgetEvents(t, "sb-below")
		return len(evs) == 1 && evs[0].Reason == "CapacityBelowUsed" && evs[0].Type == corev1.EventTypeWarning
	})
	assert.Contains(t, budgetEvents(t, "sb-below")[0].Note, "cpu 12 held of 8")

	// Status writes while the state lasts: a waiter, then a spec edit
	// (a new generation), each a write the API server counts.
	writes := func() int {
		n, err := apiserver.RequestCount(context.Background(), cp.Config, "PATCH", "slicebudgets", "status")
		require.NoError(t, err)
		return n
	}
	before := writes()
	create(t, sliceIn(ns, "c", "sb-below", slicetest.WithRequest(corev1.ResourceCPU, "1")))
	testkit.Eventually(t, "the waiter counted", func() bool { return sliceBudget(t, c, "sb-below").Status.Waiting == 1 })
	editSliceBudget(t, c, "sb-below", func(s *v1alpha1.SliceBudgetSpec) { s.Total = cpuList("7") })
	testkit.Eventually(t, "capacity 7 shown for the new generation", func() bool {
		sb := sliceBudget(t, c, "sb-below")
		return cpuIs(sb.Status.Capacity, "7") && sb.Status.ObservedGeneration == sb.Generation
	})
	assert.GreaterOrEqual(t, writes()-before, 2, "the status was written while the capacity stayed below")
	held := capacityBelowUsed(t, "sb-below")
	require.NotNil(t, held)
	assert.Equal(t, metav1.ConditionTrue, held.Status)
	assert.Equal(t, began.Message, held.Message, "the state held: the condition is not rewritten for figures")
	assert.True(t, began.LastTransitionTime.Equal(&held.LastTransitionTime), "the transition time is kept")
	testkit.Consistently(t, 2*time.Second, "still one CapacityBelowUsed event", func() bool { return len(budgetEvents(t, "sb-below")) == 1 })

	editSliceBudget(t, c, "sb-below", func(s *v1alpha1.SliceBudgetSpec) { s.Total = cpuList("20") })
	testkit.Eventually(t, "CapacityBelowUsed False once raised", func() bool {
		cnd := capacityBelowUsed(t, "sb-below")
		return cnd != nil && cnd.Status == metav1.ConditionFalse && cnd.Reason == "WithinCapacity"
	})
	testkit.Eventually(t, "the waiter admitted", func() bool { return conditions.IsAccepted(get(t, ns, "c")) })
	testkit.Consistently(t, 2*time.Second, "no event for the end of it", func() bool { return len(budgetEvents(t, "sb-below")) == 1 })
}

// kubectl get sb on a budget of GPUs only: the table the API server
// returns (the CRD's printer columns over the status the manager writes)
// shows its fullest resource and how full, not blank CPU cells.
func TestSliceBudgetTableShowsAGPUBudgetsFullness(t *testing.T) {
	c := sbClient(t)
	ns := testkit.Namespace(t, cp, "sb-gpu")
	createSliceBudget(t, c, "sb-gpu", v1alpha1.SliceBudgetSpec{Total: v1alpha1.Quantities{resourceGPU: resource.MustParse("4")}})
	objectClass(t, "sb-gpu", "sb-gpu")
	create(t, sliceIn(ns, "a", "sb-gpu", slicetest.WithRequest(resourceGPU, "2")))
	testkit.Eventually(t, "a Accepted", func() bool { return conditions.IsAccepted(get(t, ns, "a")) })

	var cells map[string]any
	testkit.Eventually(t, "the table shows nvidia.com/gpu 50% full", func() bool {
		cells = sliceBudgetRow(t, "sb-gpu")
		return cells["Fullest"] == "nvidia.com/gpu" && cells["Full%"] == float64(50)
	})
	assert.Equal(t, "True", cells["Ready"])
	assert.Equal(t, float64(1), cells["Accepted"])
}

// sliceBudgetRow asks the API server for the named SliceBudget as a Table,
// as kubectl get does, and returns its cells by column name.
func sliceBudgetRow(t *testing.T, name string) map[string]any {
	t.Helper()
	hc, err := rest.HTTPClientFor(cp.Config)
	require.NoError(t, err)
	url := strings.TrimSuffix(cp.Config.Host, "/") + "/apis/sliceclass.io/v1alpha1/slicebudgets/" + name
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var tab metav1.Table
	require.NoError(t, json.Unmarshal(body, &tab))
	require.Len(t, tab.Rows, 1)
	cells := map[string]any{}
	for i, d := range tab.ColumnDefinitions {
		cells[d.Name] = tab.Rows[0].Cells[i]
	}
	return cells
}
