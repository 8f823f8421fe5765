package charttest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// classesChecksum is the checksum annotation the rendered pod template
// carries, and whether it carries one.
func classesChecksum(t *testing.T, values string) (string, bool) {
	t.Helper()
	d, _ := managerContainer(t, render(t, "liqo", values))
	sum, ok := d.Spec.Template.Annotations["checksum/classes"]
	return sum, ok
}

// TestClassesChecksumRollsThePods checks that the pod template's
// checksum/classes changes when the classes file does, so that `helm
// upgrade` rolls the pods of a manager that reads the file once, and only
// then: any other value, or the same classes written in another order,
// leaves it (and so the pods) as it was.
func TestClassesChecksumRollsThePods(t *testing.T) {
	base, ok := classesChecksum(t, "")
	require.True(t, ok, "the defaults roll the pods on a change of classes")
	require.Len(t, base, 64, "a sha256 in hex")

	for _, tc := range []struct{ reason, values string }{
		{"another cap", `classes: {budgets: [], classes: [{name: gold, caps: {cpu: "5", memory: 8Gi, pods: "110"}}]}`},
		{"another class", `classes: {budgets: [], classes: [{name: gold, caps: {cpu: "4", memory: 8Gi, pods: "110"}}, {name: silver}]}`},
		{"a shared budget", `classes: {budgets: [{name: p, total: {cpu: "8"}}], classes: [{name: gold, caps: {cpu: "4", memory: 8Gi, pods: "110"}}]}`},
		{"the list form of the same class", `classes: [{name: gold, caps: {cpu: "4", memory: 8Gi, pods: "110"}}]`},
		{"no class", "classes: []"},
	} {
		sum, ok := classesChecksum(t, tc.values)
		require.True(t, ok, tc.reason)
		assert.NotEqual(t, base, sum, "%s: the pods roll", tc.reason)
	}

	for _, tc := range []struct{ reason, values string }{
		{"the same classes, keys in another order", `classes: {classes: [{caps: {pods: "110", memory: 8Gi, cpu: "4"}, name: gold}], budgets: []}`},
		{"other flags", "defaultCaps: cpu=2\nsharedBudget: cpu=16\nmaxConcurrentReconciles: 8\ndecisionEvents: none\nlogging: {level: debug}"},
		{"replicas and warm-up", "replicaCount: 3\nleaderElection: {warmup: false}"},
		{"pod annotations of the user's", "podAnnotations: {example.com/team: platform}"},
		{"RBAC", "rbac: {unservedReporter: true, namespaceRules: {rates: [{apiGroups: [\"\"], resources: [secrets], verbs: [get]}]}}"},
	} {
		sum, ok := classesChecksum(t, tc.values)
		require.True(t, ok, tc.reason)
		assert.Equal(t, base, sum, "%s: the pods stay", tc.reason)
	}

	d, _ := managerContainer(t, render(t, "liqo", "podAnnotations: {example.com/team: platform}"))
	assert.Equal(t, "platform", d.Spec.Template.Annotations["example.com/team"], "kept beside the checksum")

	_, ok = classesChecksum(t, "rollOnClassesChange: false")
	assert.False(t, ok, "rollOnClassesChange: false leaves the pods to follow the file")
	d, _ = managerContainer(t, render(t, "liqo", "rollOnClassesChange: false"))
	assert.Empty(t, d.Spec.Template.Annotations, "no annotation at all by default then")
}

// TestNotesSayWhatAChangeOfClassesDoes checks that NOTES.txt tells what
// `helm upgrade` with new classes does with each setting: the pods roll,
// or they stay and only a manager that follows the file serves the change.
func TestNotesSayWhatAChangeOfClassesDoes(t *testing.T) {
	notes := renderFiles(t, "liqo", "")["sliceclass-manager/templates/NOTES.txt"]
	assert.Contains(t, notes, "the pods roll")
	assert.Contains(t, notes, "rollout status deployment/sliceclass-manager")
	assert.NotContains(t, notes, "without a restart")

	notes = renderFiles(t, "liqo", "rollOnClassesChange: false")["sliceclass-manager/templates/NOTES.txt"]
	assert.Contains(t, notes, "the pods stay")
	assert.Contains(t, notes, "reads it once")
	assert.Contains(t, notes, "rollout restart deployment/sliceclass-manager")
}
