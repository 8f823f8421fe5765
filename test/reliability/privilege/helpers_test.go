package privilege

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sliceclass/sliceclass/internal/apiserver"
	"github.com/sliceclass/sliceclass/internal/testwait"
)

// pollInterval is how often the waits check.
const pollInterval = 100 * time.Millisecond

// waitFor checks cond every pollInterval until it holds, ctx ends, or
// testwait.Timeout passes; the error says what it waited for and the last
// error cond returned.
func waitFor(ctx context.Context, what string, cond func(ctx context.Context) (bool, error)) error {
	const timeout = testwait.Timeout
	var last error
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok && err == nil, nil
	})
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil {
		return fmt.Errorf("%s: %w", what, cause)
	}
	if last != nil {
		return fmt.Errorf("timed out after %s waiting for %s (last error: %w)", timeout, what, last)
	}
	return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
}

// forbiddenCount returns how many requests the API server's authorizers
// refused: authorization_attempts_total with a result other than
// "allowed" ("denied", or "no-opinion" from every authorizer, which RBAC
// answers when no rule grants the request). A request refused there is
// answered 403 before it reaches a handler, so apiserver_request_total does
// not count it (TestForbiddenIsCounted pins both). SubjectAccessReviews do
// not count either. Only the manager runs under an identity RBAC can
// refuse, so the difference between two readings is what it was refused.
func forbiddenCount(ctx context.Context) (int, error) {
	return apiserver.MetricSum(ctx, cp.Config, "authorization_attempts_total", func(labels string) bool {
		return !strings.Contains(labels, `result="allowed"`)
	})
}

// answered403 sums apiserver_request_total{code="403"}: what handlers
// answered 403, which does not include the authorizers' refusals.
func answered403(ctx context.Context) (int, error) {
	return apiserver.MetricSum(ctx, cp.Config, "apiserver_request_total", func(labels string) bool {
		return strings.Contains(labels, `code="403"`)
	})
}
