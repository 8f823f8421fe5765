package budget

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A read the API server refuses is said in the words a role grants: the
// verb and the resource (with its group, if any); any other error as it
// is.
func TestReadCause(t *testing.T) {
	for _, tc := range []struct {
		reason string
		err    error
		want   string
	}{{
		reason: "a core resource refused by RBAC",
		err: apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "",
			errors.New(`User "system:serviceaccount:sc:m" cannot list resource "nodes" in API group "" at the cluster scope`)),
		want: "forbidden: cannot list nodes",
	}, {
		reason: "a resource of a group",
		err: apierrors.NewForbidden(schema.GroupResource{Group: "sliceclass.io", Resource: "slicebudgets"}, "",
			errors.New(`User "u" cannot watch resource "slicebudgets" in API group "sliceclass.io" at the cluster scope`)),
		want: "forbidden: cannot watch slicebudgets.sliceclass.io",
	}, {
		reason: "another authorizer's words: kept whole",
		err:    apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("policy says no")),
		want:   `forbidden: nodes is forbidden: policy says no`,
	}, {
		reason: "not a refusal",
		err:    errors.New("connection refused"),
		want:   "connection refused",
	}} {
		assert.Equal(t, tc.want, readCause(tc.err), tc.reason)
	}
}
