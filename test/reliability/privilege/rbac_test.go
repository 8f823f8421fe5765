package privilege

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// rbacFile is the shipped RBAC, relative to this package.
const rbacFile = "../../../examples/manager/deploy/rbac.yaml"

// The deploy's ServiceAccount, as the API server knows its user.
const (
	saNamespace = "liqo"
	saName      = "sliceclass-manager"
	saUser      = "system:serviceaccount:" + saNamespace + ":" + saName
)

// saGroups are the groups the API server gives a ServiceAccount's token.
var saGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"}

// manifests are the objects of rbac.yaml, typed: the roles are kept apart
// because the variants change them.
type manifests struct {
	serviceAccount *corev1.ServiceAccount
	clusterRole    *rbacv1.ClusterRole
	role           *rbacv1.Role
	// bindings are the ClusterRoleBinding and RoleBinding.
	bindings []client.Object
}

// loadManifests decodes every document of rbac.yaml into its typed object
// and fails on a kind it does not expect, so that a new kind in the file is
// not silently left out of the test.
func loadManifests(t *testing.T) manifests {
	t.Helper()
	raw, err := os.ReadFile(rbacFile)
	require.NoError(t, err)
	// client-go's types: a unit test of the variants needs no control plane.
	decoder := serializer.NewCodecFactory(clientgoscheme.Scheme).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var m manifests
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if isBlank(doc) {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		require.NoError(t, err, "decoding a document of %s", rbacFile)
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			m.serviceAccount = o
		case *rbacv1.ClusterRole:
			require.Nil(t, m.clusterRole, "one ClusterRole expected")
			m.clusterRole = o
		case *rbacv1.Role:
			require.Nil(t, m.role, "one Role expected")
			m.role = o
		case *rbacv1.ClusterRoleBinding, *rbacv1.RoleBinding:
			m.bindings = append(m.bindings, o.(client.Object))
		default:
			t.Fatalf("%s holds a %T this test does not know", rbacFile, obj)
		}
	}
	require.NotNil(t, m.serviceAccount, "%s has no ServiceAccount", rbacFile)
	require.Equal(t, saName, m.serviceAccount.Name)
	require.Equal(t, saNamespace, m.serviceAccount.Namespace)
	require.NotNil(t, m.clusterRole, "%s has no ClusterRole", rbacFile)
	require.NotNil(t, m.role, "%s has no Role", rbacFile)
	require.Len(t, m.bindings, 2, "%s: a ClusterRoleBinding and a RoleBinding", rbacFile)
	return m
}

// isBlank reports whether a YAML document holds only comments and space.
func isBlank(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") && l != "---" {
			return false
		}
	}
	return true
}

// variant is the shipped RBAC with one entry dropped from one rule.
type variant struct {
	// name says what was dropped, e.g. "Role liqo/x rule 1 (leases): -verb patch".
	name string
	// clusterRules and roleRules are the variant's rules.
	clusterRules, roleRules []rbacv1.PolicyRule
}

// shipped is the variant that drops nothing.
func shipped(m manifests) variant {
	return variant{name: "shipped", clusterRules: m.clusterRole.Rules, roleRules: m.role.Rules}
}

// variants returns every variant that drops exactly one verb, one resource,
// or (when a rule has several) one API group from one rule of either role.
// A rule left with no verb or no resource is dropped whole; variants that
// end up with the same rules are listed once.
func variants(m manifests) []variant {
	var out []variant
	seen := map[string]bool{}
	add := func(v variant) {
		key := fmt.Sprint(v.clusterRules, "|", v.roleRules)
		if !seen[key] {
			seen[key] = true
			out = append(out, v)
		}
	}
	for _, role := range []struct {
		label   string
		rules   []rbacv1.PolicyRule
		cluster bool
	}{
		{"ClusterRole " + m.clusterRole.Name, m.clusterRole.Rules, true},
		{"Role " + m.role.Namespace + "/" + m.role.Name, m.role.Rules, false},
	} {
		for i, rule := range role.rules {
			for _, d := range drops(rule) {
				rules := slices.Clone(role.rules)
				name := fmt.Sprintf("%s rule %d %v: -%s %s", role.label, i+1, rule.Resources, d.what, d.entry)
				if d.rule == nil {
					rules = slices.Delete(rules, i, i+1)
				} else {
					rules[i] = *d.rule
				}
				v := variant{name: name, clusterRules: m.clusterRole.Rules, roleRules: m.role.Rules}
				if role.cluster {
					v.clusterRules = rules
				} else {
					v.roleRules = rules
				}
				add(v)
			}
		}
	}
	return out
}

// drop is one entry taken out of a rule; rule is what is left, nil when
// nothing is.
type drop struct {
	what, entry string
	rule        *rbacv1.PolicyRule
}

// drops lists the ways to take one entry out of rule.
func drops(rule rbacv1.PolicyRule) []drop {
	var out []drop
	without := func(list []string, i int) []string { return slices.Delete(slices.Clone(list), i, i+1) }
	keep := func(r rbacv1.PolicyRule) *rbacv1.PolicyRule {
		if len(r.Verbs) == 0 || len(r.Resources) == 0 || len(r.APIGroups) == 0 {
			return nil
		}
		return &r
	}
	for i, v := range rule.Verbs {
		r := *rule.DeepCopy()
		r.Verbs = without(rule.Verbs, i)
		out = append(out, drop{"verb", v, keep(r)})
	}
	for i, res := range rule.Resources {
		r := *rule.DeepCopy()
		r.Resources = without(rule.Resources, i)
		out = append(out, drop{"resource", res, keep(r)})
	}
	if len(rule.APIGroups) > 1 {
		for i, g := range rule.APIGroups {
			r := *rule.DeepCopy()
			r.APIGroups = without(rule.APIGroups, i)
			out = append(out, drop{"apiGroup", fmt.Sprintf("%q", g), keep(r)})
		}
	}
	return out
}

// applyBase creates the ServiceAccount and the bindings of rbac.yaml (an
// existing one is fine); the roles are applied per variant.
func applyBase(t *testing.T, m manifests) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, cp.CreateNamespace(ctx, saNamespace))
	for _, obj := range append([]client.Object{m.serviceAccount}, m.bindings...) {
		obj = obj.DeepCopyObject().(client.Object)
		if err := cp.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "creating %T %s", obj, obj.GetName())
		}
	}
}

// applyRoles deletes the ClusterRole and the Role and creates them again
// with v's rules, then waits until the API server's authorizer answers for
// the ServiceAccount as v's rules say it should.
func applyRoles(t *testing.T, m manifests, v variant) {
	t.Helper()
	ctx := context.Background()
	cr := m.clusterRole.DeepCopy()
	cr.Rules = v.clusterRules
	role := m.role.DeepCopy()
	role.Rules = v.roleRules
	for _, obj := range []client.Object{cr, role} {
		existing := obj.DeepCopyObject().(client.Object)
		require.NoError(t, client.IgnoreNotFound(cp.Client.Delete(ctx, existing)))
		obj.SetResourceVersion("")
		require.Eventually(t, func() bool {
			err := cp.Client.Create(ctx, obj.DeepCopyObject().(client.Object))
			return err == nil
		}, testwait.Timeout, pollInterval, "recreating %T %s", obj, obj.GetName())
	}
	perms := permissions(m)
	testkit.Every(pollInterval).Eventually(t, "the authorizer to apply the roles of variant "+v.name, func() bool {
		for _, p := range perms {
			allowed, err := sarAllowed(ctx, p)
			if err != nil || allowed != p.allowedBy(v) {
				return false
			}
		}
		return true
	})
}

// permission is one verb on one resource in one API group, asked
// cluster-wide (namespace "") or in a namespace.
type permission struct {
	group, resource, verb, namespace string
}

// permissions expands the shipped roles' rules into single permissions: the
// ClusterRole's cluster-wide, the Role's in its namespace.
func permissions(m manifests) []permission {
	var out []permission
	expand := func(rules []rbacv1.PolicyRule, ns string) {
		for _, r := range rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, verb := range r.Verbs {
						out = append(out, permission{g, res, verb, ns})
					}
				}
			}
		}
	}
	expand(m.clusterRole.Rules, "")
	expand(m.role.Rules, m.role.Namespace)
	return out
}

// allowedBy reports whether v's rules grant p: the ClusterRole's everywhere,
// the Role's in its namespace only.
func (p permission) allowedBy(v variant) bool {
	if grants(v.clusterRules, p) {
		return true
	}
	return p.namespace == saNamespace && grants(v.roleRules, p)
}

// grants reports whether one of rules names p's group, resource and verb.
func grants(rules []rbacv1.PolicyRule, p permission) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, p.group) && slices.Contains(r.Resources, p.resource) && slices.Contains(r.Verbs, p.verb) {
			return true
		}
	}
	return false
}

// sarAllowed asks the API server, as the administrator, whether the
// ServiceAccount has p.
func sarAllowed(ctx context.Context, p permission) (bool, error) {
	resource, sub, _ := strings.Cut(p.resource, "/")
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   saUser,
		Groups: saGroups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: p.namespace, Verb: p.verb, Group: p.group, Resource: resource, Subresource: sub,
		},
	}}
	if err := cp.Client.Create(ctx, sar); err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}
