package budget

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

// A SliceBudget's override for a consumer the budget counts no slice of is
// logged as Budget.SetConsumerLimit logs it (docs/budgets.md), once the
// books count the cluster; one for a consumer it counts is not.
func TestSpecOverrideForUnknownConsumerIsLogged(t *testing.T) {
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")}
	overrides := map[string]corev1.ResourceList{"acme": cpu, "acmee": cpu}
	snap := ledger.Snapshot{Counted: true, Consumers: []ledger.ConsumerSnapshot{{Name: "acme"}}}
	var lines []string
	ctx := log.IntoContext(context.Background(), funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}))

	logUnknownConsumers(ctx, "pool", snap, overrides)
	if assert.Len(t, lines, 1, "the typo only: %v", lines) {
		assert.Contains(t, lines[0], "knows no slice of")
		assert.Contains(t, lines[0], "check the consumer ID")
		assert.Contains(t, lines[0], `"consumer"="acmee"`)
	}

	lines = nil
	logUnknownConsumers(ctx, "pool", ledger.Snapshot{}, overrides)
	assert.Empty(t, lines, "books not counted yet: every consumer would look unknown")

	got := limitsInForce(overrides, snap, nil)
	var s []string
	for _, l := range got {
		q := l.Limits[corev1.ResourceCPU]
		s = append(s, l.Consumer+" "+q.String()+" "+map[bool]string{true: "known", false: "unknown"}[l.Known])
	}
	assert.Equal(t, "acme 6 known,acmee 6 unknown", strings.Join(s, ","))
	shown := []v1alpha1.ConsumerLimitStatus{{Consumer: "acmee", Known: true}}
	got = limitsInForce(overrides, ledger.Snapshot{}, shown)
	assert.True(t, got[0].Known && got[1].Known, "uncounted books: known as shown, or true for an entry not shown")
	assert.Nil(t, limitsInForce(nil, snap, shown), "no override, no entry")
}
