package v1alpha1_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
)

// column is what kubectl shows of a printer column.
type column struct {
	Name     string
	Priority int32
}

// wantColumns answer "does it admit, how full, who waits, what it borrows
// and lends" at a glance, for a budget of any resource (its fullest resource
// and the percent held; borrowed and lent per resource); -o wide adds CPU
// and memory, the cohort and its members, the Ready condition's reason and whom waiting
// slices may preempt, both rules (spec.preemption: withinBudget and, in a
// cohort, reclaimWithinCohort).
var wantColumns = []column{
	{"Name", 0}, {"Ready", 0}, {"Accepted", 0}, {"Waiting", 0}, {"Fullest", 0}, {"Full%", 0},
	{"CPU Used", 1}, {"CPU Capacity", 1}, {"Borrowed", 0}, {"Lent", 0}, {"Cohort", 1}, {"Members", 1},
	{"Memory Used", 1}, {"Memory Capacity", 1}, {"Reason", 1}, {"Preemption", 1}, {"Age", 0},
}

// table asks the API server for path as a Table, as kubectl get does (the
// server prints the CRD's printer columns).
func table(t *testing.T, path string) metav1.Table {
	t.Helper()
	hc, err := rest.HTTPClientFor(cp.Config)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, strings.TrimSuffix(cp.Config.Host, "/")+path, http.NoBody)
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
	return tab
}

// kubectl get sb shows how full a budget is and who waits, from its
// status: the API server prints the CRD's columns.
func TestPrinterColumns(t *testing.T) {
	c := server(t)
	full, idle, unserved, gpu := newBudget("printed"), newBudget("printed-idle"), newBudget("printed-unserved"), newBudget("printed-gpu")
	// A cohort member: the Preemption column shows both of its rules.
	gpu.Spec.Cohort = "tiers"
	gpu.Spec.Preemption.ReclaimWithinCohort = v1alpha1.CohortReclaimAny
	for _, sb := range []*v1alpha1.SliceBudget{full, idle, unserved, gpu} {
		require.NoError(t, c.Create(t.Context(), sb))
		cleanup(t, c, sb)
	}
	full.Status = fullStatus()
	require.NoError(t, c.Status().Update(t.Context(), full))
	idle.Status = v1alpha1.SliceBudgetStatus{
		Capacity: list("cpu", "64", "memory", "256Gi"), Used: list("cpu", "0", "memory", "0"),
		Available: list("cpu", "64", "memory", "256Gi"), Fullest: &v1alpha1.Fullness{Resource: "cpu", Percent: 0},
	}
	require.NoError(t, c.Status().Update(t.Context(), idle))
	gpu.Status = v1alpha1.SliceBudgetStatus{
		Capacity: list("nvidia.com/gpu", "4"), Used: list("nvidia.com/gpu", "2"), Available: list("nvidia.com/gpu", "2"),
		Accepted: 1, Fullest: &v1alpha1.Fullness{Resource: "nvidia.com/gpu", Percent: 50},
		// As a member of a cohort that borrows GPUs and lends none.
		Borrowed: list("nvidia.com/gpu", "1"), Lent: list("nvidia.com/gpu", "0"),
		CohortMembers: []string{"printed-gpu", "printed-spot"},
	}
	require.NoError(t, c.Status().Update(t.Context(), gpu))

	tab := table(t, "/apis/sliceclass.io/v1alpha1/slicebudgets")
	var got []column
	for _, d := range tab.ColumnDefinitions {
		got = append(got, column{d.Name, d.Priority})
	}
	if diff := cmp.Diff(wantColumns, got); diff != "" {
		t.Fatalf("columns (-want +got):\n%s", diff)
	}
	rows := map[string][]any{}
	for _, r := range tab.Rows {
		rows[r.Cells[0].(string)] = r.Cells[:len(r.Cells)-1] // Age varies
	}
	want := map[string][]any{
		// JSON numbers decode as float64.
		// Borrowed, lent, cohort and members are blank: a budget in no cohort.
		"printed": {"printed", "True", float64(12), float64(3), "cpu", float64(90), "58", "64", nil, nil, nil, nil, "200Gi", "256Gi", "Serving", `{"withinBudget":"LowerPriority"}`},
		// Served and empty: zeros, not blanks.
		"printed-idle": {"printed-idle", nil, float64(0), float64(0), "cpu", float64(0), "0", "64", nil, nil, nil, nil, "0", "256Gi", nil, `{"withinBudget":"LowerPriority"}`},
		// A budget of GPUs only: how full it is, not blank CPU cells; what
		// it borrows and lends, per resource of any name.
		"printed-gpu": {"printed-gpu", nil, float64(1), float64(0), "nvidia.com/gpu", float64(50), nil, nil, `{"nvidia.com/gpu":"1"}`, `{"nvidia.com/gpu":"0"}`, "tiers", `["printed-gpu","printed-spot"]`, nil, nil, nil, `{"reclaimWithinCohort":"Any","withinBudget":"LowerPriority"}`},
		// A budget no manager serves yet: the API server prints no value
		// (kubectl leaves the cell blank) for the status columns, and 0 is
		// never claimed for what nobody counted.
		"printed-unserved": {"printed-unserved", nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, `{"withinBudget":"LowerPriority"}`},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

// kubectl finds the budgets by their short name sb, and by the category
// sliceclass (kubectl get sliceclass), cluster-wide.
func TestShortNameResolves(t *testing.T) {
	server(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	require.NoError(t, err)
	groups, err := restmapper.GetAPIGroupResources(dc)
	require.NoError(t, err)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDiscoveryRESTMapper(groups), dc, func(string) {})

	gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Resource: "sb"})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.GroupVersion.WithResource("slicebudgets"), gvr)
	m, err := mapper.RESTMapping(v1alpha1.GroupVersion.WithKind("SliceBudget").GroupKind())
	require.NoError(t, err)
	assert.Equal(t, "root", string(m.Scope.Name()), "cluster-scoped")

	list, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
	require.NoError(t, err)
	for _, r := range list.APIResources {
		if r.Name == "slicebudgets" {
			assert.Equal(t, []string{"sliceclass"}, r.Categories)
			return
		}
	}
	t.Fatalf("slicebudgets not served in %s", v1alpha1.GroupVersion)
}

// tableHeader finds the header line of a kubectl get sb example (-o wide
// or not) in a page.
var tableHeader = regexp.MustCompile(`(?m)^\$ kubectl get sb( -o wide)?\n(NAME .*)$`)

// The README's and docs/budgets.md's kubectl get sb examples show the
// columns the API server prints by default, in order, and with -o wide
// every column.
func TestReadmeShowsThePrintedColumns(t *testing.T) {
	for _, page := range []string{"README.md", filepath.Join("docs", "budgets.md")} {
		raw, err := os.ReadFile(filepath.Join("..", "..", page))
		require.NoError(t, err)
		ms := tableHeader.FindAllSubmatch(raw, -1)
		require.NotEmpty(t, ms, "%s: no `$ kubectl get sb` example followed by its NAME header line", page)
		for _, m := range ms {
			wide := len(m[1]) > 0
			var want []string
			for _, c := range wantColumns {
				if c.Priority == 0 || wide {
					want = append(want, strings.ToUpper(c.Name))
				}
			}
			got := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(string(m[2])), -1)
			assert.Equal(t, want, got, "%s: kubectl get sb%s", page, m[1])
		}
	}
}
