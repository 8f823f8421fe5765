package owned_test

import (
	"context"
	"slices"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/internal/owned"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// ownedVerbs are the verbs the engine needs on each owned type when it
// reads through the API server (through a cache, watch too).
var ownedVerbs = []string{"get", "list", "create", "patch", "delete"}

// testLeastPrivilege runs a slice's life (apply new objects, shrink the set,
// remove, sweep) as a user holding exactly ownedVerbs on ConfigMaps and
// PriorityClasses, cluster-wide: it works. Without any one verb it is
// refused by the API server: each verb is needed.
func testLeastPrivilege(t *testing.T, cp *controlplane.ControlPlane) {
	for _, drop := range append([]string{""}, ownedVerbs...) {
		name := "all verbs"
		if drop != "" {
			name = "without " + drop
		}
		t.Run(name, func(t *testing.T) {
			e := newAPIEnv(t, cp, "rbac"+drop)
			ctx := context.Background()
			verbs := slices.DeleteFunc(slices.Clone(ownedVerbs), func(v string) bool { return v == drop })
			c := userWith(t, cp, "owned-"+e.class, verbs)
			a := e.applier(t, c)

			err := lifecycle(ctx, e, a, e.slice(t, "rbac-"+e.class))
			switch {
			case drop == "" && err != nil:
				t.Fatalf("with %v: %v", verbs, err)
			case drop != "" && !apierrors.IsForbidden(err):
				t.Fatalf("without %s: error %v, want Forbidden", drop, err)
			}
		})
	}
}

// lifecycle is what the reconciler does with a slice's objects.
func lifecycle(ctx context.Context, e *apiEnv, a *owned.Applier, rs *authv1beta1.ResourceSlice) error {
	set := e.set(rs)
	if _, err := a.Apply(ctx, rs, set); err != nil {
		return err
	}
	if _, err := a.Apply(ctx, rs, set[:1]); err != nil {
		return err
	}
	if _, err := a.Remove(ctx, client.ObjectKeyFromObject(rs), rs.UID); err != nil {
		return err
	}
	return nil
}

// userWith returns a client of a new user bound to a ClusterRole with verbs
// on ConfigMaps and PriorityClasses, once RBAC allows them.
func userWith(t *testing.T, cp *controlplane.ControlPlane, user string, verbs []string) client.Client {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs},
			{APIGroups: []string{"scheduling.k8s.io"}, Resources: []string{"priorityclasses"}, Verbs: verbs},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := cp.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	// RBAC's authorizer follows roles through a watch: wait until it allows.
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, testwait.Timeout, true, func(ctx context.Context) (bool, error) {
		for _, v := range verbs {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: v, Group: "scheduling.k8s.io", Resource: "priorityclasses"},
			}}
			if err := cp.Client.Create(ctx, sar); err != nil || !sar.Status.Allowed {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for RBAC to allow %s %v: %v", user, verbs, err)
	}
	cfg, err := cp.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
