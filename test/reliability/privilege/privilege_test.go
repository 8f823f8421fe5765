package privilege

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// managerKubeconfig writes a kubeconfig that authenticates as the deploy's
// ServiceAccount with a client certificate.
func managerKubeconfig(t *testing.T) string {
	t.Helper()
	cfg, err := cp.AddUser(saUser, saGroups[:2]...)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, controlplane.WriteKubeconfig(cfg, path))
	return path
}

// TestForbiddenIsCounted proves the instrument the other tests trust: a
// request RBAC refuses shows in the API server's count of refused
// authorization attempts, and not in apiserver_request_total{code="403"}.
func TestForbiddenIsCounted(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	cfg, err := cp.AddUser("system:serviceaccount:liqo:nobody", "system:serviceaccounts")
	require.NoError(t, err)
	cl, err := client.New(cfg, client.Options{Scheme: cp.Scheme})
	require.NoError(t, err)
	before, err := forbiddenCount(ctx)
	require.NoError(t, err)
	before403, err := answered403(ctx)
	require.NoError(t, err)
	var list authv1beta1.ResourceSliceList
	err = cl.List(ctx, &list)
	require.True(t, apierrors.IsForbidden(err), "a user no role is bound to is refused: got %v", err)
	after, err := forbiddenCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, after-before, "one refused request, one refusal on the API server's counter")
	after403, err := answered403(ctx)
	require.NoError(t, err)
	assert.Equal(t, before403, after403, "apiserver_request_total does not count a request the authorizer refused: "+
		"if it ever does, count 403s there instead")
}

// TestShippedRoleSuffices runs the manager as the deploy's ServiceAccount
// with exactly the shipped RBAC: every step of the scenario holds and the
// API server refuses none of its requests.
func TestShippedRoleSuffices(t *testing.T) {
	cp.Require(t)
	m := loadManifests(t)
	applyBase(t, m)
	applyRoles(t, m, shipped(m))
	kubeconfig := managerKubeconfig(t)

	out := runScenario(t, newWorld("shipped"), kubeconfig, false)
	t.Logf("RELIABILITY: privilege shipped role: %d/%d steps held, %d requests refused (403), %d stderr lines saying forbidden, %s",
		len(out.passed), len((&run{}).steps()), out.forbidden, len(out.refusals), out.elapsed.Round(100*time.Millisecond))
	for _, s := range out.passed {
		t.Logf("  held: %s", s)
	}
	if !assert.Empty(t, out.failed, "every step holds with the shipped role: %v", out.err) ||
		!assert.Zero(t, out.forbidden, "the API server refuses no request of the manager") ||
		!assert.Empty(t, out.refusals, "the manager logs no refusal") {
		t.Logf("manager stderr (tail):\n%s", out.stderr.tail(40))
	}
}

// TestEveryRuleIsNeeded runs the scenario once per variant of the shipped
// RBAC that drops one verb, resource or API group from one rule: each must
// fail, with a refused request or a missing outcome. A variant that passes
// names a permission the manager does not need.
func TestEveryRuleIsNeeded(t *testing.T) {
	cp.Require(t)
	m := loadManifests(t)
	applyBase(t, m)
	t.Cleanup(func() { applyRoles(t, m, shipped(m)) })
	kubeconfig := managerKubeconfig(t)

	vs := variants(m)
	require.NotEmpty(t, vs)
	start := time.Now()
	var unneeded []string
	for i, v := range vs {
		applyRoles(t, m, v)
		out := runScenario(t, newWorld(fmt.Sprintf("v%02d", i+1)), kubeconfig, true)
		verdict := "fails"
		if out.ok() {
			verdict = "PASSES"
			unneeded = append(unneeded, v.name)
		}
		t.Logf("RELIABILITY: privilege variant %-95s %s: %d steps held, %d 403s, %s (%s)",
			v.name, verdict, len(out.passed), out.forbidden, out.summary(), out.elapsed.Round(100*time.Millisecond))
	}
	t.Logf("RELIABILITY: privilege %d variants in %s", len(vs), time.Since(start).Round(time.Second))
	assert.Empty(t, unneeded, "each permission of the shipped role is needed: the scenario passes without\n%s",
		strings.Join(unneeded, "\n"))
}

// TestVariantsDropOneEntry checks the variant generator: each variant loses
// at least one permission of the shipped roles and gains none, and every
// permission is lost by some variant.
func TestVariantsDropOneEntry(t *testing.T) {
	m := loadManifests(t)
	all := permissions(m)
	vs := variants(m)
	require.NotEmpty(t, vs)
	names := map[string]bool{}
	lostSomewhere := map[permission]bool{}
	for _, v := range vs {
		assert.False(t, names[v.name], "variant %q listed twice", v.name)
		names[v.name] = true
		lost := 0
		for _, p := range all {
			if !p.allowedBy(v) {
				lost++
				lostSomewhere[p] = true
			}
		}
		assert.NotZero(t, lost, "variant %q drops nothing", v.name)
		for _, r := range append(append([]rbacv1.PolicyRule{}, v.clusterRules...), v.roleRules...) {
			for _, p := range expand(r) {
				assert.True(t, p.allowedBy(shipped(m)), "variant %q grants %v, which the shipped roles do not", v.name, p)
			}
		}
	}
	for _, p := range all {
		assert.True(t, lostSomewhere[p], "no variant drops %v", p)
	}
	t.Logf("%d variants of %d permissions", len(vs), len(all))
}

// expand lists the permissions a rule grants, asked in saNamespace.
func expand(r rbacv1.PolicyRule) []permission {
	var out []permission
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			for _, verb := range r.Verbs {
				out = append(out, permission{g, res, verb, saNamespace})
			}
		}
	}
	return out
}
