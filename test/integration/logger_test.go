package integration

import (
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// Defect (issue 11): WithLogger reached only the work queue; the reconcile
// logs went to the manager's logger. Every line of the class's controller,
// the decision included, must reach the given logger.
func TestWithLoggerReceivesReconcileLogs(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "logger")
	var mu sync.Mutex
	var lines []string
	l := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 1})
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "logged", accept("Granted", nil), resourceslice.WithLogger(l))
	})
	create(t, sliceIn(ns, "a", "logged"))
	testkit.Eventually(t, "a decided", decided(ns, "a"))
	testkit.Eventually(t, "the decision logged through WithLogger's logger", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, line := range lines {
			if strings.Contains(line, `"decided"`) && strings.Contains(line, `"name"="a"`) && strings.Contains(line, "resourceslice-logged") {
				return true
			}
		}
		return false
	})
	mu.Lock()
	defer mu.Unlock()
	assert.NotEmpty(t, lines)
}
