package soak

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
)

// checkFinal reads every slice from the API server and lists how the
// outcome differs from what the fleet's record says it must be:
//
//   - the server holds exactly the slices the churn kept;
//   - Liqo's fields are as Liqo last wrote them;
//   - a Drained tenant's slices are Denied/TenantDrained; a Cordoned
//     tenant's are decided (a slice decided before the cordon keeps any
//     decision, a new one is Denied/TenantCordoned);
//   - an Active tenant's slices are decided by their class's policy: gold
//     Accepted with what it asked, silver the same up to silverMaxCPU and
//     Denied/TooLarge above, bronze Accepted or Denied/BudgetExhausted;
//   - the bronze budget's Used equals what bronze slices hold, at most its
//     total: an Accepted slice its offer, and a slice denied after its
//     acceptance (a Drained tenant's) the grant it keeps, since a denial
//     shrinks no Liqo Quota; and no waiting slice of an Active tenant fits
//     what is free.
//
// tally counts the slices by tenant condition, class and decision.
func checkFinal(ctx context.Context, t *testing.T, f *fleet, bronze *budget.Budget, bronzeCPU int) (problems []string, tally map[string]int) {
	t.Helper()
	want, tenants := f.snapshot()
	byNamespace := map[string]authv1beta1.TenantCondition{}
	for i, tn := range f.tenants {
		byNamespace[tn.namespace] = tenants[i]
	}
	var list authv1beta1.ResourceSliceList
	tally = map[string]int{}
	held, waiting := resource.Quantity{}, 0
	seen := 0
	for {
		require.NoError(t, cp.Client.List(ctx, &list, client.Limit(2000), client.Continue(list.Continue)))
		for i := range list.Items {
			rs := &list.Items[i]
			key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
			r, ok := want[key]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: on the server, not kept by the churn", key))
				continue
			}
			seen++
			if c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources); c != nil {
				tally[fmt.Sprintf("%s %s %s/%s", byNamespace[rs.Namespace], r.class, c.Status, c.Reason)]++
			}
			if p := checkSlice(rs, r, byNamespace[rs.Namespace]); p != "" {
				problems = append(problems, fmt.Sprintf("%s (%s, %d CPU, tenant %s): %s", key, r.class, r.cpu, byNamespace[rs.Namespace], p))
			}
			if r.class == classBronze {
				c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
				switch {
				case conditions.IsAccepted(rs):
					held.Add(rs.Status.Resources[corev1.ResourceCPU])
				case c != nil && c.Reason == "TenantDrained":
					// The tenant rule's denial keeps status.resources: the
					// grant the slice had, which it still holds.
					held.Add(rs.Status.Resources[corev1.ResourceCPU])
				case c != nil && c.Reason == budget.ReasonExhausted && byNamespace[rs.Namespace] == authv1beta1.TenantConditionActive:
					waiting++
				}
			}
		}
		if list.Continue == "" {
			break
		}
	}
	if seen != len(want) {
		problems = append(problems, fmt.Sprintf("%d slices kept by the churn, %d of them on the server", len(want), seen))
	}
	used, free := bronze.Used()[corev1.ResourceCPU], bronze.Free()[corev1.ResourceCPU]
	if used.Cmp(held) != 0 {
		problems = append(problems, fmt.Sprintf("budget: Used %s CPU, bronze slices hold %s", used.String(), held.String()))
	}
	if held.Value() > int64(bronzeCPU) {
		problems = append(problems, fmt.Sprintf("budget over-committed: bronze slices hold %s CPU of %d", held.String(), bronzeCPU))
	}
	if waiting > 0 && free.Value() >= 1 {
		problems = append(problems, fmt.Sprintf("budget: %d slices of 1 CPU wait with %s CPU free", waiting, free.String()))
	}
	return problems, tally
}

// checkSlice says how one slice differs from what it must be; "" when it
// is as expected.
func checkSlice(rs *authv1beta1.ResourceSlice, r sliceRecord, tenant authv1beta1.TenantCondition) string {
	if p := checkLiqoFields(rs, r.rev); p != "" {
		return p
	}
	c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
	if c == nil || !conditions.IsDecided(rs) {
		return "undecided"
	}
	got := string(c.Status) + "/" + c.Reason
	var allowed []string
	switch tenant {
	case authv1beta1.TenantConditionDrained:
		allowed = []string{"Denied/" + "TenantDrained"}
	case authv1beta1.TenantConditionCordoned:
		return ""
	default:
		allowed = []string{"Accepted/" + reasonGranted}
		switch {
		case r.class == classSilver && r.cpu > silverMaxCPU:
			allowed = []string{"Denied/" + reasonTooLarge}
		case r.class == classBronze:
			allowed = append(allowed, "Denied/"+budget.ReasonExhausted)
		}
	}
	if !slices.Contains(allowed, got) {
		return fmt.Sprintf("decision %s, want %s", got, strings.Join(allowed, " or "))
	}
	if conditions.IsAccepted(rs) {
		if cpu := rs.Status.Resources.Cpu(); cpu.Value() != int64(r.cpu) {
			return fmt.Sprintf("Accepted with %s CPU, asked %d", cpu, r.cpu)
		}
	}
	return ""
}
