package charttest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/sliceclass/sliceclass/testing/envkit"
)

// provenRBAC is the RBAC test/reliability/privilege proves: the manager
// works with it, and fails without any one of its verbs, resources or rules.
var provenRBAC = filepath.Join(repoRoot, "examples/manager/deploy/rbac.yaml")

// permission is one verb on one resource of one API group, in a namespace
// ("" for cluster-wide), on the object named name only (a rule's
// resourceNames) or on every object ("").
type permission struct {
	namespace, group, resource, verb, name string
}

// expand lists the permissions rules grant in namespace.
func expand(namespace string, rules []rbacv1.PolicyRule) []permission {
	var out []permission
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					for _, n := range names {
						out = append(out, permission{namespace, g, res, v, n})
					}
				}
			}
		}
	}
	return out
}

// sorted returns ps sorted, without repeats.
func sorted(ps []permission) []permission {
	slices.SortFunc(ps, func(a, b permission) int {
		for _, c := range [][2]string{{a.namespace, b.namespace}, {a.group, b.group}, {a.resource, b.resource}, {a.verb, b.verb}, {a.name, b.name}} {
			if c[0] != c[1] {
				if c[0] < c[1] {
					return -1
				}
				return 1
			}
		}
		return 0
	})
	return slices.Compact(ps)
}

// provenPermissions reads the rules of rbac.yaml: its ClusterRole's, and its
// Role's in namespace (the manager's own, which rbac.yaml fixes as liqo).
func provenPermissions(t *testing.T, namespace string) []permission {
	t.Helper()
	raw, err := os.ReadFile(provenRBAC)
	require.NoError(t, err)
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var out []permission
	roles := 0
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		var head struct{ Kind string }
		require.NoError(t, yaml.Unmarshal(doc, &head))
		switch head.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			require.NoError(t, yaml.UnmarshalStrict(doc, &r))
			out = append(out, expand("", r.Rules)...)
			roles++
		case "Role":
			var r rbacv1.Role
			require.NoError(t, yaml.UnmarshalStrict(doc, &r))
			require.Equal(t, "liqo", r.Namespace, "%s: the Role's namespace", provenRBAC)
			out = append(out, expand(namespace, r.Rules)...)
			roles++
		}
	}
	require.Equal(t, 2, roles, "%s: a ClusterRole and a Role", provenRBAC)
	return sorted(out)
}

// renderedPermissions lists what the rendered roles grant, after checking
// that each is bound to the rendered ServiceAccount and nothing else.
func renderedPermissions(t *testing.T, objs []rendered) []permission {
	t.Helper()
	sa := only(t, objs, "ServiceAccount", 1)[0]
	bound := map[string]bool{}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, r := range objsOf(objs, kind) {
			b := typed[rbacv1.RoleBinding](t, r.obj) // same fields as a ClusterRoleBinding
			require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.GetName(), Namespace: sa.GetNamespace()}}, b.Subjects,
				"%s %s binds only the chart's ServiceAccount", kind, b.Name)
			bound[b.RoleRef.Kind+"/"+b.Namespace+"/"+b.RoleRef.Name] = true
		}
	}
	var out []permission
	for _, r := range objsOf(objs, "ClusterRole") {
		require.True(t, bound["ClusterRole//"+r.obj.GetName()], "ClusterRole %s is not bound", r.obj.GetName())
		out = append(out, expand("", typed[rbacv1.ClusterRole](t, r.obj).Rules)...)
	}
	for _, r := range objsOf(objs, "Role") {
		require.True(t, bound["Role/"+r.obj.GetNamespace()+"/"+r.obj.GetName()], "Role %s/%s is not bound", r.obj.GetNamespace(), r.obj.GetName())
		out = append(out, expand(r.obj.GetNamespace(), typed[rbacv1.Role](t, r.obj).Rules)...)
	}
	return sorted(out)
}

// TestDefaultRBACIsTheProvenOne checks that the defaults, with a budget as
// test/reliability/privilege runs the manager, grant exactly what rbac.yaml
// grants: nothing that suite has not shown to be needed, and nothing it needs
// missing; without a budget, the Quota and ShadowPod rule goes.
func TestDefaultRBACIsTheProvenOne(t *testing.T) {
	proven := provenPermissions(t, "liqo")
	got := renderedPermissions(t, render(t, "liqo", `sharedBudget: "cpu=3"`))
	if diff := cmp.Diff(proven, got, cmp.AllowUnexported(permission{})); diff != "" {
		t.Errorf("the chart's RBAC with a budget differs from %s (-proven +chart):\n%s", provenRBAC, diff)
	}
	quotas := []permission{{"", "offloading.liqo.io", "quotas", "list", ""}, {"", "offloading.liqo.io", "quotas", "watch", ""},
		{"", "offloading.liqo.io", "shadowpods", "list", ""}, {"", "offloading.liqo.io", "shadowpods", "watch", ""}}
	withoutBudget := slices.DeleteFunc(slices.Clone(proven), func(p permission) bool { return slices.Contains(quotas, p) })
	got = renderedPermissions(t, render(t, "liqo", ""))
	if diff := cmp.Diff(withoutBudget, got, cmp.AllowUnexported(permission{})); diff != "" {
		t.Errorf("the chart's default RBAC (no budget) differs from %s less the Quota rule (-want +chart):\n%s", provenRBAC, diff)
	}
	got = renderedPermissions(t, render(t, "liqo", "classes: [{name: gold, budget: {cpu: 4}}]"))
	if diff := cmp.Diff(proven, got, cmp.AllowUnexported(permission{})); diff != "" {
		t.Errorf("a class's own budget brings the Quota rule (-proven +chart):\n%s", diff)
	}
}

// TestOptionalRBAC checks that each switch adds only its own rule to the
// proven set, and that the Lease rules follow the features that need them.
func TestOptionalRBAC(t *testing.T) {
	leases := func(ns string, verbs ...string) []permission {
		var out []permission
		for _, v := range verbs {
			out = append(out, permission{ns, "coordination.k8s.io", "leases", v, ""})
		}
		return out
	}
	quotas := []permission{{"", "offloading.liqo.io", "quotas", "list", ""}, {"", "offloading.liqo.io", "quotas", "watch", ""},
		{"", "offloading.liqo.io", "shadowpods", "list", ""}, {"", "offloading.liqo.io", "shadowpods", "watch", ""}}
	without := func(ps []permission, drop ...permission) []permission {
		return slices.DeleteFunc(slices.Clone(ps), func(p permission) bool { return slices.Contains(drop, p) })
	}
	proven := without(provenPermissions(t, "sc-all"), quotas...) // no budget in these values
	nodes := []permission{{"", "", "nodes", "get", ""}, {"", "", "nodes", "list", ""}, {"", "", "nodes", "watch", ""}}
	pods := []permission{{"", "", "pods", "list", ""}, {"", "", "pods", "watch", ""}}
	// Budgets as objects: followed, their status written; their events go
	// through the proven events.k8s.io create, which every case keeps.
	sliceBudgets := []permission{
		{"", "sliceclass.io", "slicebudgets", "get", ""}, {"", "sliceclass.io", "slicebudgets", "list", ""},
		{"", "sliceclass.io", "slicebudgets", "watch", ""},
		{"", "sliceclass.io", "slicebudgets/status", "get", ""}, {"", "sliceclass.io", "slicebudgets/status", "update", ""},
		{"", "sliceclass.io", "slicebudgets/status", "patch", ""},
	}
	require.Contains(t, proven, permission{"", "events.k8s.io", "events", "create", ""})
	evict := permission{"", "offloading.liqo.io", "shadowpods", "delete", ""}
	for _, tc := range []struct {
		reason, values string
		want           []permission
	}{{
		reason: "every switch on: nodes, Liqo Quotas, SliceBudgets, the owned types, grant records; class Leases in a namespace of their own",
		values: everyOptionIn("sc-all"),
		want: sorted(append(append(append(without(proven, leases("sc-all", "delete")...), sliceBudgets...),
			permission{"", "", "nodes", "get", ""}, permission{"", "", "nodes", "list", ""}, permission{"", "", "nodes", "watch", ""},
			permission{"", "offloading.liqo.io", "quotas", "list", ""}, permission{"", "offloading.liqo.io", "quotas", "watch", ""},
			permission{"", "offloading.liqo.io", "shadowpods", "list", ""}, permission{"", "offloading.liqo.io", "shadowpods", "watch", ""},
			permission{"", "", "configmaps", "get", ""}, permission{"", "", "configmaps", "list", ""}, permission{"", "", "configmaps", "watch", ""},
			permission{"", "", "configmaps", "create", ""}, permission{"", "", "configmaps", "patch", ""}, permission{"", "", "configmaps", "delete", ""},
			permission{"", "scheduling.k8s.io", "priorityclasses", "get", ""}, permission{"", "scheduling.k8s.io", "priorityclasses", "list", ""},
			permission{"", "scheduling.k8s.io", "priorityclasses", "watch", ""}, permission{"", "scheduling.k8s.io", "priorityclasses", "create", ""},
			permission{"", "scheduling.k8s.io", "priorityclasses", "patch", ""}, permission{"", "scheduling.k8s.io", "priorityclasses", "delete", ""},
			permission{"sc-all-rates", "", "secrets", "get", "discounts"}, permission{"sc-all-rates", "", "secrets", "get", "rates"}),
			leases("sc-all-leases", "get", "create", "update", "delete", "list")...)),
	}, {
		reason: "no class Leases: leader election alone never deletes its Lease",
		values: "classLease: {enabled: false}",
		want:   without(proven, leases("sc-all", "delete")...),
	}, {
		reason: "one replica without leader election, class Leases kept: no core/v1 event",
		values: "replicaCount: 1\nleaderElection: {enabled: false}",
		want:   without(proven, permission{"sc-all", "", "events", "create", ""}),
	}, {
		reason: "neither: no Role at all",
		values: "replicaCount: 1\nleaderElection: {enabled: false}\nclassLease: {enabled: false}",
		want: without(proven, append(leases("sc-all", "get", "create", "update", "delete"),
			permission{"sc-all", "", "events", "create", ""})...),
	}, {
		reason: "a class's node pool: nodes, and the Quota rule its budget needs, with no switch set",
		values: "classes: [{name: gpu, caps: {nvidia.com/gpu: 2}, pool: {selector: {pool: gpu}, resources: [nvidia.com/gpu]}}]",
		want:   sorted(append(slices.Clone(proven), append(nodes, quotas...)...)),
	}, {
		reason: "a shared node pool with localPods in the object form: nodes, pods, Quotas",
		values: "classes: {budgets: [{name: provider, pool: {selector: {}, localPods: true}}], classes: [{name: gold, caps: {cpu: 2}, budgets: [provider]}]}",
		want:   sorted(append(slices.Clone(proven), append(append(nodes, quotas...), pods...)...)),
	}, {
		reason: "a shared fixed budget in the object form: the Quota rule only",
		values: "classes: {budgets: [{name: premium, total: {cpu: 64}}], classes: [{name: gold, caps: {cpu: 2}, budgets: [premium]}]}",
		want:   sorted(append(slices.Clone(proven), quotas...)),
	}, {
		reason: "owned types written in named namespaces only: reads cluster-wide, the other verbs in a Role per namespace",
		values: `rbac:
  ownedTypes:
    - {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch, create, patch, delete]}
    - {apiGroups: [example.com], resources: [records], verbs: ["*"]}
    - {apiGroups: [""], resources: [secrets], verbs: [get]}
  ownedTypesNamespaces: [billing, audit]`,
		want: sorted(append(slices.Clone(proven),
			permission{"", "", "configmaps", "get", ""}, permission{"", "", "configmaps", "list", ""}, permission{"", "", "configmaps", "watch", ""},
			permission{"", "example.com", "records", "get", ""}, permission{"", "example.com", "records", "list", ""}, permission{"", "example.com", "records", "watch", ""},
			permission{"", "", "secrets", "get", ""},
			permission{"billing", "", "configmaps", "create", ""}, permission{"billing", "", "configmaps", "patch", ""}, permission{"billing", "", "configmaps", "delete", ""},
			permission{"billing", "example.com", "records", "*", ""},
			permission{"audit", "", "configmaps", "create", ""}, permission{"audit", "", "configmaps", "patch", ""}, permission{"audit", "", "configmaps", "delete", ""},
			permission{"audit", "example.com", "records", "*", ""})),
	}, {
		reason: "owned types without namespaces: as given, cluster-wide",
		values: "rbac: {ownedTypes: [{apiGroups: [\"\"], resources: [configmaps], verbs: [get, create]}]}",
		want:   sorted(append(slices.Clone(proven), permission{"", "", "configmaps", "get", ""}, permission{"", "", "configmaps", "create", ""})),
	}, {
		reason: "a shared budget with evictionAfterSeconds: the Quota rule and delete on ShadowPods",
		values: "classes: {budgets: [{name: pool, total: {cpu: 10}, preemption: {withinBudget: LowerPriority}, evictionAfterSeconds: 600}], classes: [{name: gold, budgets: [pool]}]}",
		want:   sorted(append(slices.Clone(proven), append(slices.Clone(quotas), permission{"", "offloading.liqo.io", "shadowpods", "delete", ""})...)),
	}, {
		reason: "a class's own budget with evictionAfterSeconds: 0, eviction at once: set is what counts, not its value",
		values: "classes: [{name: gold, budget: {cpu: 10}, evictionAfterSeconds: 0}]",
		want:   sorted(append(slices.Clone(proven), append(slices.Clone(quotas), permission{"", "offloading.liqo.io", "shadowpods", "delete", ""})...)),
	}, {
		reason: "a budget with preemption and no eviction: the Quota rule, no delete",
		values: "classes: [{name: gold, budget: {cpu: 10}, preemption: {withinBudget: LowerPriority}}]",
		want:   sorted(append(slices.Clone(proven), quotas...)),
	}, {
		reason: "rbac.nodePools alone (a SliceBudget given a nodePool after install): nodes only",
		values: "rbac: {nodePools: true}",
		want:   sorted(append(slices.Clone(proven), nodes...)),
	}, {
		reason: "rbac.localPods alone: pods, and the nodes its pool reads",
		values: "rbac: {localPods: true}",
		want:   sorted(append(slices.Clone(proven), append(slices.Clone(nodes), pods...)...)),
	}, {
		reason: "rbac.shadowPodEviction alone: delete on ShadowPods only",
		values: "rbac: {shadowPodEviction: true}",
		want:   sorted(append(slices.Clone(proven), permission{"", "offloading.liqo.io", "shadowpods", "delete", ""})),
	}, {
		reason: "the unserved reporter: list on the class Leases, in their namespace only",
		values: "rbac: {unservedReporter: true}",
		want:   sorted(append(slices.Clone(proven), leases("sc-all", "list")...)),
	}, {
		reason: "the unserved reporter beside no class Lease of its own: a Role with list alone, where the Leases live",
		values: "classLease: {enabled: false, namespace: sc-all-leases}\nrbac: {unservedReporter: true}",
		want:   sorted(append(without(proven, leases("sc-all", "delete")...), leases("sc-all-leases", "list")...)),
	}, {
		reason: "namespaced rules: in their namespaces only, a named object's rule for that object only",
		values: `rbac:
  namespaceRules:
    rates:
      - {apiGroups: [""], resources: [secrets], resourceNames: [rates], verbs: [get]}
      - {apiGroups: [""], resources: [configmaps], verbs: [list, watch]}
    audit:
      - {apiGroups: [example.com], resources: [records], resourceNames: [a, b], verbs: [get, update]}
    empty: []`,
		want: sorted(append(slices.Clone(proven),
			permission{"rates", "", "secrets", "get", "rates"},
			permission{"rates", "", "configmaps", "list", ""}, permission{"rates", "", "configmaps", "watch", ""},
			permission{"audit", "example.com", "records", "get", "a"}, permission{"audit", "example.com", "records", "get", "b"},
			permission{"audit", "example.com", "records", "update", "a"}, permission{"audit", "example.com", "records", "update", "b"})),
	}, {
		reason: "a class drawing from a SliceBudget: slicebudgets and their status, and the Quota rule its budget needs",
		values: "classes: [{name: gold, caps: {cpu: 2}, sliceBudget: premium}]",
		want:   sorted(append(slices.Clone(proven), append(slices.Clone(quotas), sliceBudgets...)...)),
	}, {
		reason: "a SliceBudget of the values a class names, a node pool with localPods and evictionAfterSeconds: nodes, pods, ShadowPod deletion too",
		values: `sliceBudgets:
  - {name: premium, spec: {total: {cpu: 64}}}
  - {name: gpu, spec: {nodePool: {selector: {matchLabels: {pool: gpu}}, localPods: true}, evictionAfterSeconds: 600}}
classes:
  budgets: []
  classes:
    - {name: gold, caps: {cpu: 2}, sliceBudget: premium}
    - {name: gpu, caps: {cpu: 2}, sliceBudget: gpu}`,
		want: sorted(append(slices.Clone(proven), append(append(append(append(slices.Clone(quotas), sliceBudgets...), nodes...), pods...), evict)...)),
	}, {
		reason: "a class naming a SliceBudget made outside the chart: the SliceBudget rules; one of the values no class names brings nothing",
		values: `sliceBudgets:
  - {name: gpu, spec: {nodePool: {selector: {}, localPods: true}, evictionAfterSeconds: 600}}
classes: [{name: gold, caps: {cpu: 2}}, {name: silver, caps: {cpu: 2}, sliceBudget: premium}]`,
		want: sorted(append(slices.Clone(proven), append(slices.Clone(quotas), sliceBudgets...)...)),
	}, {
		reason: "no class names a SliceBudget, SliceBudgets in the values: nothing more",
		values: "sliceBudgets: [{name: gpu, spec: {nodePool: {selector: {}, localPods: true}, evictionAfterSeconds: 600}}]",
		want:   proven,
	}, {
		reason: "a SliceBudget a class names with evictionAfterSeconds 0 (evict at once): ShadowPod deletion, though 0 is false to a template",
		values: `sliceBudgets: [{name: premium, spec: {total: {cpu: 64}, evictionAfterSeconds: 0}}]
classes: [{name: gold, caps: {cpu: 2}, sliceBudget: premium}]`,
		want: sorted(append(slices.Clone(proven), append(append(slices.Clone(quotas), sliceBudgets...), evict)...)),
	}, {
		reason: "a SliceBudget a class names with no evictionAfterSeconds: no ShadowPod deletion",
		values: `sliceBudgets: [{name: premium, spec: {total: {cpu: 64}, preemption: {withinBudget: LowerPriority}}}]
classes: [{name: gold, caps: {cpu: 2}, sliceBudget: premium}]`,
		want: sorted(append(slices.Clone(proven), append(slices.Clone(quotas), sliceBudgets...)...)),
	}, {
		reason: "rbac.sliceBudgets alone (a manager of your own calling budget.FromObject): slicebudgets, their status, Quotas",
		values: "rbac: {sliceBudgets: true}",
		want:   sorted(append(slices.Clone(proven), append(slices.Clone(quotas), sliceBudgets...)...)),
	}, {
		reason: "the object form without budgets: nothing more",
		values: "classes: {classes: [{name: gold, caps: {cpu: 2}}]}",
		want:   proven,
	}} {
		t.Run(tc.reason, func(t *testing.T) {
			got := renderedPermissions(t, render(t, "sc-all", tc.values))
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(permission{})); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestNamespacedRulesOnTheAPIServer installs namespaced rules and the
// unserved reporter's rule on a real API server and asks its RBAC
// authorizer (SubjectAccessReview) what the chart's ServiceAccount may do:
// what was granted in a namespace, on the objects named, and nothing
// beyond, in another namespace or cluster-wide.
func TestNamespacedRulesOnTheAPIServer(t *testing.T) {
	cp.Require(t)
	const ns, rates, leases = "sc-sar", "sc-sar-rates", "sc-sar-leases"
	objs := render(t, ns, `
classLease: {namespace: `+leases+`}
rbac:
  unservedReporter: true
  namespaceRules:
    `+rates+`:
      - {apiGroups: [""], resources: [secrets], resourceNames: [rates], verbs: [get]}
`)
	install(t, objs)
	sa := only(t, objs, "ServiceAccount", 1)[0]
	user := "system:serviceaccount:" + sa.GetNamespace() + ":" + sa.GetName()
	ctx, cancel := context.WithTimeout(context.Background(), envkit.WaitTimeout)
	defer cancel()
	for _, tc := range []struct {
		reason string
		attrs  authorizationv1.ResourceAttributes
		want   bool
	}{
		{"the named Secret, in its namespace", authorizationv1.ResourceAttributes{Namespace: rates, Verb: "get", Resource: "secrets", Name: "rates"}, true},
		{"another Secret there", authorizationv1.ResourceAttributes{Namespace: rates, Verb: "get", Resource: "secrets", Name: "keys"}, false},
		{"listing the Secrets there", authorizationv1.ResourceAttributes{Namespace: rates, Verb: "list", Resource: "secrets"}, false},
		{"the same name in the release namespace", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: "rates"}, false},
		{"the same name cluster-wide", authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Name: "rates"}, false},
		{"listing the class Leases", authorizationv1.ResourceAttributes{Namespace: leases, Verb: "list", Group: "coordination.k8s.io", Resource: "leases"}, true},
		{"holding a class Lease", authorizationv1.ResourceAttributes{Namespace: leases, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: "sliceclass-class-gold"}, true},
		{"listing the Leases of the release namespace (leader election's)", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Group: "coordination.k8s.io", Resource: "leases"}, false},
		{"listing Leases cluster-wide", authorizationv1.ResourceAttributes{Verb: "list", Group: "coordination.k8s.io", Resource: "leases"}, false},
		{"watching the class Leases", authorizationv1.ResourceAttributes{Namespace: leases, Verb: "watch", Group: "coordination.k8s.io", Resource: "leases"}, false},
	} {
		attrs := tc.attrs
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &attrs,
		}}
		require.NoError(t, cp.Client.Create(ctx, review), tc.reason)
		assert.Equal(t, tc.want, review.Status.Allowed, "%s (%s)", tc.reason, review.Status.Reason)
	}
}
