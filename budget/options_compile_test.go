package budget_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An option a constructor cannot take is refused by the compiler (issue
// 51), not at run time: each misuse below fails to build, at its own line,
// while the uses beside it build. The programs are built with the go
// command over an overlay, as a user's code would be.
func TestMisplacedOptionsDoNotCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs with the go command")
	}
	misuses := []string{
		`budget.New("x", total, budget.WithSharePercent(50))`,
		`budget.New("x", total, budget.WithResources("cpu"))`,
		`budget.New("x", total, budget.WithReserve(total))`,
		`budget.New("x", total, budget.WithLocalPods())`,
		`budget.NewNodePool(mgr, "x", nil, budget.WithCohort("pool"))`,
		`budget.NewNodePool(mgr, "x", nil, budget.WithBorrowingLimit(total))`,
		`budget.NewNodePool(mgr, "x", nil, budget.WithLendingLimit(total))`,
		`budget.NewNodePool(mgr, "x", nil, budget.WithReclaimWithinCohort(v1alpha1.CohortReclaimAny))`,
		`budget.FromObject(mgr, "x", budget.WithPreemption())`,
		`budget.FromObject(mgr, "x", budget.WithConsumerLimit(total))`,
		`budget.FromObject(mgr, "x", budget.WithEvictionAfter(1))`,
		`budget.FromObject(mgr, "x", budget.WithCohort("pool"))`,
		`budget.FromObject(mgr, "x", budget.WithSharePercent(50))`,
	}
	uses := []string{
		`budget.New("x", total, budget.WithCohort("pool"), budget.WithBorrowingLimit(total), budget.WithLendingLimit(total), budget.WithReclaimWithinCohort(v1alpha1.CohortReclaimAny), budget.WithConsumerLimit(total), budget.WithPreemption(), budget.WithEvictionAfter(1), budget.WithOldestFirst())`,
		`budget.NewNodePool(mgr, "x", nil, budget.WithResources("cpu"), budget.WithReserve(total), budget.WithSharePercent(50), budget.WithLocalPods(), budget.WithConsumerLimit(total), budget.WithPreemption(), budget.WithEvictionAfter(1), budget.WithOldestFirst())`,
		`budget.FromObject(mgr, "x", budget.WithOldestFirst())`,
	}
	out, err := buildCalls(t, uses)
	require.NoError(t, err, "the options each constructor takes build:\n%s", out)
	out, err = buildCalls(t, misuses)
	require.Error(t, err, "every misuse is refused")
	for i, m := range misuses {
		line := fmt.Sprintf("x.go:%d:", firstCallLine+i)
		assert.Contains(t, out, line, "%s is refused at its line", m)
	}
	assert.Contains(t, out, "does not implement", "refused for its type")
}

// firstCallLine is the line of the first call buildCalls writes.
const firstCallLine = 12

// buildCalls builds a package in the module making each call on a line of
// its own, from line firstCallLine, and returns the go command's output.
func buildCalls(t *testing.T, calls []string) (string, error) {
	t.Helper()
	var src strings.Builder
	src.WriteString(`package zzoptions

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
)

func calls(mgr manager.Manager, total corev1.ResourceList) {
`)
	for _, c := range calls {
		src.WriteString("\t_, _ = " + c + "\n")
	}
	src.WriteString("}\n")
	dir := t.TempDir()
	file := filepath.Join(dir, "x.go")
	require.NoError(t, os.WriteFile(file, []byte(src.String()), 0o600))
	wd, err := os.Getwd()
	require.NoError(t, err)
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(wd, "zzoptions", "x.go"): file}})
	require.NoError(t, err)
	ov := filepath.Join(dir, "overlay.json")
	require.NoError(t, os.WriteFile(ov, overlay, 0o600))
	// go test puts its GOROOT/bin first on the test's PATH.
	gocmd, err := exec.LookPath("go")
	require.NoError(t, err, "the go command")
	cmd := exec.Command(gocmd, "build", "-gcflags=-e", "-overlay="+ov, "-o", os.DevNull, "./zzoptions")
	cmd.Dir = wd
	b, err := cmd.CombinedOutput()
	return string(b), err
}
