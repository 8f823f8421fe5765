package admission

import (
	"slices"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// refusal is the part of the policy's messages that says why.
const refusal = "a quantity with an exponent of 4 or more digits or longer than 64 characters is refused"

// pollInterval is how often the wait for the policy tries again.
const pollInterval = 200 * time.Millisecond

func TestRefusesSlowQuantitiesInSpec(t *testing.T) {
	cp.Require(t)
	setUp(t)
	ctx := t.Context()
	ns := testkit.Namespace(t, cp, "refuse-spec")
	long := "0." + strings.Repeat("0", 62) + "1"
	cases := map[string]struct {
		reason    string
		resources map[string]any
		// refused are the resources the message must name.
		refused []string
	}{
		"Finding": {
			reason:    "the measured finding: tens of seconds and hundreds of MB in ParseQuantity",
			resources: map[string]any{"cpu": "1e-100000000"},
			refused:   []string{"cpu"},
		},
		"UppercaseSignedPositive": {
			reason:    "E and an explicit + are the same exponent; a positive one decodes fast but makes each Cmp slow",
			resources: map[string]any{"cpu": "1E+99999"},
			refused:   []string{"cpu"},
		},
		"UnsignedExponent": {
			reason:    "an exponent without a sign",
			resources: map[string]any{"memory": "5e12345"},
			refused:   []string{"memory"},
		},
		"FourDigits": {
			reason:    "four digits is the first length refused",
			resources: map[string]any{"cpu": "1e-1000"},
			refused:   []string{"cpu"},
		},
		"LeadingZeros": {
			reason:    "digits are counted, not their value: no writer pads an exponent",
			resources: map[string]any{"cpu": "1e0003"},
			refused:   []string{"cpu"},
		},
		"DecimalExponent": {
			reason:    "the CRD's pattern admits a fractional exponent; its integer part is counted",
			resources: map[string]any{"cpu": "1e1000.5"},
			refused:   []string{"cpu"},
		},
		"LongMantissa": {
			reason:    "65 characters without an exponent: a long mantissa is slow to decode too",
			resources: map[string]any{"cpu": long},
			refused:   []string{"cpu"},
		},
		"AmongGoodOnes": {
			reason:    "one bad quantity refuses the slice, and only it is named",
			resources: map[string]any{"cpu": "4", "memory": "8Gi", "pods": "1e-99999"},
			refused:   []string{"pods"},
		},
		"Several": {
			reason:    "every bad quantity is named",
			resources: map[string]any{"cpu": "1e-99999", "memory": "1E99999"},
			refused:   []string{"cpu", "memory"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rs := sliceWithRequests(strings.ToLower(name), ns, tc.resources)
			err := cp.Client.Create(ctx, rs)
			assert.True(t, isRefusal(err, "spec", tc.refused...), "%s: got %v", tc.reason, err)
			err = cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), rs.DeepCopy())
			assert.True(t, apierrors.IsNotFound(err), "%s: the refused slice is not stored: got %v", tc.reason, err)
		})
	}
}

func TestAdmitsUsualQuantities(t *testing.T) {
	cp.Require(t)
	setUp(t)
	ctx := t.Context()
	ns := testkit.Namespace(t, cp, "admit")
	cases := map[string]struct {
		reason   string
		quantity any
	}{
		"Integer":         {reason: "a plain integer string", quantity: "4"},
		"JSONInteger":     {reason: "int-or-string: a JSON integer is seen as an int by CEL", quantity: int64(4)},
		"Milli":           {reason: "a decimal SI suffix", quantity: "500m"},
		"Gibi":            {reason: "a binary SI suffix", quantity: "8Gi"},
		"Mebi":            {reason: "a binary SI suffix", quantity: "100Mi"},
		"Exponent":        {reason: "a short exponent, as apimachinery writes 1000 in DecimalExponent format", quantity: "1e3"},
		"Nano":            {reason: "the smallest quantity apimachinery keeps", quantity: "1e-9"},
		"ThreeDigits":     {reason: "three digits is the longest exponent admitted: it decodes in microseconds", quantity: "1e-999"},
		"MaxInt64":        {reason: "the largest quantity apimachinery counts", quantity: "9223372036854775807"},
		"SixtyFourChars":  {reason: "64 characters is the longest quantity admitted", quantity: "0." + strings.Repeat("0", 61) + "1"},
		"FractionDecimal": {reason: "a fraction", quantity: "0.5"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rs := sliceWithRequests(strings.ToLower(name), ns, map[string]any{"cpu": tc.quantity})
			require.NoError(t, cp.Client.Create(ctx, rs), tc.reason)

			// The typed client decodes what was admitted.
			var typed authv1beta1.ResourceSlice
			require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), &typed), tc.reason)
			want := resource.MustParse(toText(tc.quantity))
			got := typed.Spec.Resources[corev1.ResourceCPU]
			assert.Zero(t, want.Cmp(got), "%s: stored %s, want %s", tc.reason, got.String(), want.String())
		})
	}
}

func TestRefusesSlowQuantityOnUpdate(t *testing.T) {
	cp.Require(t)
	setUp(t)
	ctx := t.Context()
	ns := testkit.Namespace(t, cp, "refuse-update")
	rs := sliceWithRequests("updated", ns, map[string]any{"cpu": "4"})
	require.NoError(t, cp.Client.Create(ctx, rs))

	require.NoError(t, unstructured.SetNestedField(rs.Object, "1e-100000000", "spec", "resources", "cpu"))
	err := cp.Client.Update(ctx, rs)
	assert.True(t, isRefusal(err, "spec", "cpu"), "changing a quantity to a slow one is refused: got %v", err)

	require.NoError(t, unstructured.SetNestedField(rs.Object, "5", "spec", "resources", "cpu"))
	assert.NoError(t, cp.Client.Update(ctx, rs), "changing it to a usual one is admitted")
}

func TestRefusesSlowQuantitiesInStatus(t *testing.T) {
	cp.Require(t)
	setUp(t)
	ctx := t.Context()
	ns := testkit.Namespace(t, cp, "refuse-status")
	rs := sliceWithRequests("status", ns, map[string]any{"cpu": "4"})
	require.NoError(t, cp.Client.Create(ctx, rs))

	for _, q := range []string{"1e-100000000", "1E+99999", "5e12345"} {
		require.NoError(t, unstructured.SetNestedField(rs.Object, q, "status", "resources", "cpu"))
		err := cp.Client.Status().Update(ctx, rs)
		assert.True(t, isRefusal(err, "status", "cpu"), "status.resources.cpu %s is refused: got %v", q, err)
	}

	require.NoError(t, unstructured.SetNestedField(rs.Object, "4", "status", "resources", "cpu"))
	require.NoError(t, cp.Client.Status().Update(ctx, rs), "a usual status quantity is admitted")
	var typed authv1beta1.ResourceSlice
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), &typed))
	got := typed.Status.Resources[corev1.ResourceCPU]
	assert.Equal(t, "4", got.String())
}

// TestStoredQuantityLeftUnchangedIsAdmitted: a slice stored before the
// policy, with a quantity the policy refuses, can still be labelled, have
// its status written, lose its finalizer and be deleted; changing its bad
// quantity to another bad one, or adding one, is refused.
func TestStoredQuantityLeftUnchangedIsAdmitted(t *testing.T) {
	cp.Require(t)
	setUp(t)
	ctx := t.Context()
	key := types.NamespacedName{Namespace: legacyNamespace, Name: legacySlice}

	// update reads the slice, applies change, and updates it (its status
	// when status is set), retrying on conflicts.
	update := func(status bool, change func(u *unstructured.Unstructured)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind))
			if err := cp.Client.Get(ctx, key, u); err != nil {
				return err
			}
			change(u)
			if status {
				return cp.Client.Status().Update(ctx, u)
			}
			return cp.Client.Update(ctx, u)
		})
	}

	err := update(false, func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"touched": "true"}) })
	assert.NoError(t, err, "a metadata change leaves the stored quantity as it is")

	err = update(true, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "4", "status", "resources", "cpu")
	})
	assert.NoError(t, err, "a status write leaves the stored spec as it is")

	err = update(false, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "1e-99999", "spec", "resources", "cpu")
	})
	assert.True(t, isRefusal(err, "spec", "cpu"), "changing the stored bad quantity to another bad one is refused: got %v", err)

	err = update(false, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "1e-99999", "spec", "resources", "memory")
	})
	assert.True(t, isRefusal(err, "spec", "memory"), "adding a bad quantity next to the stored one is refused: got %v", err)

	err = update(false, func(u *unstructured.Unstructured) { u.SetFinalizers(nil) })
	require.NoError(t, err, "removing the finalizer leaves the stored quantity as it is")
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind))
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	require.NoError(t, cp.Client.Delete(ctx, u), "the slice can be deleted")
	err = cp.Client.Get(ctx, key, u)
	assert.True(t, apierrors.IsNotFound(err), "the slice is gone: got %v", err)
}

// sliceWithRequests returns, as an unstructured object, the slice Liqo
// replicates on the provider (slicetest.NewSlice) named name in namespace
// ns with spec.resources set to resources as they are: strings are sent as
// written, never parsed, and int64s as JSON integers.
func sliceWithRequests(name, ns string, resources map[string]any) *unstructured.Unstructured {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(slicetest.NewSlice(name, slicetest.WithNamespace(ns)))
	if err != nil {
		panic(err) // a typed slice always converts
	}
	u := &unstructured.Unstructured{Object: obj}
	if err := unstructured.SetNestedMap(u.Object, resources, "spec", "resources"); err != nil {
		panic(err) // resources holds JSON values only
	}
	return u
}

// isRefusal reports whether err is the policy refusing the quantities of
// part ("spec" or "status") named by resources, and no others.
func isRefusal(err error, part string, resources ...string) bool {
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), refusal) {
		return false
	}
	msg := err.Error()
	prefix := part + ".resources["
	start := strings.Index(msg, prefix)
	if start < 0 {
		return false
	}
	rest := msg[start+len(prefix):]
	end := strings.Index(rest, "]")
	if end < 0 {
		return false
	}
	named := strings.Split(rest[:end], ", ")
	slices.Sort(named)
	want := slices.Clone(resources)
	slices.Sort(want)
	return slices.Equal(named, want)
}

// toText is a quantity as ParseQuantity reads it.
func toText(q any) string {
	switch v := q.(type) {
	case string:
		return v
	case int64:
		return resource.NewQuantity(v, resource.DecimalSI).String()
	}
	panic("quantity of unexpected type")
}
