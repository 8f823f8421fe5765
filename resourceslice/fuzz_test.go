package resourceslice

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sliceclass/sliceclass/internal/fuzzing"
)

// The fuzz targets of this file decode their []byte inputs with fuzzBytes:
// each byte is one choice (an index into the tables below, a count, a
// mode), and an input that runs out reads as zeros, so every input is a
// valid slice. The seed corpora under testdata/fuzz/ are named after what
// they build; the layout each target reads is written on its decoder.

// fuzzBytes hands out a fuzz input one choice at a time.
type fuzzBytes []byte

func (b *fuzzBytes) next() byte {
	if len(*b) == 0 {
		return 0
	}
	c := (*b)[0]
	*b = (*b)[1:]
	return c
}

// pick returns a choice in [0, n).
func (b *fuzzBytes) pick(n int) int { return int(b.next()) % n }

// Tables the decoders pick from: names a handler or Liqo would write, and
// the awkward ones (empty, non-ASCII, JSON-looking, with a space).
var (
	fuzzWords         = []string{"", "a", "gold", "zone-a", "ü", "null", "x.y/z", "with space"}
	fuzzResourceNames = []corev1.ResourceName{"cpu", "memory", "pods", "nvidia.com/gpu", "ephemeral-storage"}
	// Equal values in different forms (1/1000m, 1Gi/1024Mi, 1e3) and a
	// negative one, which a status may hold even if validate refuses it.
	fuzzQuantities = []string{"0", "1", "1000m", "2", "500m", "1Gi", "1024Mi", "4G", "1e3", "-1", "0.5", "110"}
)

func (b *fuzzBytes) word() string { return fuzzWords[b.pick(len(fuzzWords))] }

// count reads a collection's shape: -1 for nil, 0 for empty, else 1 to 3
// entries.
func (b *fuzzBytes) count() int {
	switch m := b.pick(3); m {
	case 0:
		return -1
	case 1:
		return 0
	default:
		return 1 + b.pick(3)
	}
}

// fuzzStatus decodes a whole status, Liqo's fields included. Layout:
//
//	conditions    n = pick(4), then per condition: type (0 Resources,
//	              1 Authentication), status (0 Accepted, 1 Denied), reason
//	              word, message word, lastTransitionTime (0 zero, else an
//	              hour count in whole seconds)
//	resources     count, then per entry: resource name, quantity
//	storage, ingress, loadBalancer classes
//	              count each, then per entry: name word, default (odd)
//	nodeLabels, nodeSelector
//	              count each, then per entry: key word, value word
//	authParams    0 nil, else CA word, signedCRT word, apiServer word
func fuzzStatus(b *fuzzBytes) authv1beta1.ResourceSliceStatus {
	var s authv1beta1.ResourceSliceStatus
	for range b.pick(4) {
		c := authv1beta1.ResourceSliceCondition{
			Type:    []authv1beta1.ResourceSliceConditionType{authv1beta1.ResourceSliceConditionTypeResources, authv1beta1.ResourceSliceConditionTypeAuthentication}[b.pick(2)],
			Status:  []authv1beta1.ResourceSliceConditionStatus{authv1beta1.ResourceSliceConditionAccepted, authv1beta1.ResourceSliceConditionDenied}[b.pick(2)],
			Reason:  b.word(),
			Message: b.word(),
		}
		if h := b.next(); h != 0 {
			c.LastTransitionTime = metav1.NewTime(time.Unix(1_700_000_000+int64(h)*3600, 0))
		}
		s.Conditions = append(s.Conditions, c)
	}
	if n := b.count(); n >= 0 {
		s.Resources = corev1.ResourceList{}
		for range n {
			s.Resources[fuzzResourceNames[b.pick(len(fuzzResourceNames))]] = resource.MustParse(fuzzQuantities[b.pick(len(fuzzQuantities))])
		}
	}
	if n := b.count(); n >= 0 {
		s.StorageClasses = []liqov1beta1.StorageType{}
		for range n {
			s.StorageClasses = append(s.StorageClasses, liqov1beta1.StorageType{StorageClassName: b.word(), Default: b.next()%2 == 1})
		}
	}
	if n := b.count(); n >= 0 {
		s.IngressClasses = []liqov1beta1.IngressType{}
		for range n {
			s.IngressClasses = append(s.IngressClasses, liqov1beta1.IngressType{IngressClassName: b.word(), Default: b.next()%2 == 1})
		}
	}
	if n := b.count(); n >= 0 {
		s.LoadBalancerClasses = []liqov1beta1.LoadBalancerType{}
		for range n {
			s.LoadBalancerClasses = append(s.LoadBalancerClasses, liqov1beta1.LoadBalancerType{LoadBalancerClassName: b.word(), Default: b.next()%2 == 1})
		}
	}
	s.NodeLabels = fuzzMap(b)
	s.NodeSelector = fuzzMap(b)
	if b.pick(2) == 1 {
		s.AuthParams = &authv1beta1.AuthParams{CA: []byte(b.word()), SignedCRT: []byte(b.word()), APIServer: b.word()}
	}
	return s
}

func fuzzMap(b *fuzzBytes) map[string]string {
	n := b.count()
	if n < 0 {
		return nil
	}
	m := map[string]string{}
	for range n {
		m[b.word()] = b.word()
	}
	return m
}

// statusOptions compare statuses as the API server stores them: quantities
// by value, times to the second, nil and empty alike.
var statusOptions = []cmp.Option{
	cmpopts.EquateEmpty(),
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
	cmp.Comparer(func(a, b metav1.Time) bool { return a.Equal(&b) }),
}

// FuzzStatusPatch: for any slice (old, with Liqo's fields) and any handler
// output (the owned fields of a second random status, copied onto old with
// copyOwned as the reconciler does), the owned patch applied to old's JSON
// as a JSON merge patch (what the API server does) yields exactly the new
// status, leaves Liqo's fields (authParams, the Authentication condition),
// metadata and spec as they were, and carries only the resourceVersion and
// status.
func FuzzStatusPatch(f *testing.F) {
	f.Fuzz(func(t *testing.T, oldIn, handlerIn []byte) {
		ob, hb := fuzzBytes(oldIn), fuzzBytes(handlerIn)
		old := &authv1beta1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "tenant", ResourceVersion: "42", Labels: map[string]string{"liqo.io/originID": "c1"}},
			Spec:       authv1beta1.ResourceSliceSpec{Class: "gold", CSR: []byte("csr")},
			Status:     fuzzStatus(&ob),
		}
		handlerOut := &authv1beta1.ResourceSlice{Status: fuzzStatus(&hb)}
		next := old.DeepCopy()
		copyOwned(next, handlerOut)

		patch, err := ownedPatch{from: old}.Data(next)
		require.NoError(t, err)
		var keys map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(patch, &keys))
		assert.ElementsMatch(t, []string{"metadata", "status"}, slices.Collect(maps.Keys(keys)), "patch %s", patch)
		assert.JSONEq(t, `{"resourceVersion":"42"}`, string(keys["metadata"]), "patch %s", patch)

		oldJSON, err := json.Marshal(old)
		require.NoError(t, err)
		patched, err := jsonpatch.MergePatch(oldJSON, patch)
		require.NoError(t, err, "patch %s", patch)
		var got authv1beta1.ResourceSlice
		require.NoError(t, json.Unmarshal(patched, &got))

		assert.Empty(t, cmp.Diff(next.Status, got.Status, statusOptions...), "-want +got\npatch %s", patch)
		assert.True(t, authParamsEqual(old.Status.AuthParams, got.Status.AuthParams), "authParams changed by patch %s", patch)
		assert.True(t, equality.Semantic.DeepEqual(otherConditions(&old.Status), otherConditions(&got.Status)),
			"Liqo's conditions changed by patch %s", patch)
		assert.True(t, equality.Semantic.DeepEqual(old.ObjectMeta, got.ObjectMeta), "metadata changed by patch %s", patch)
		assert.True(t, equality.Semantic.DeepEqual(old.Spec, got.Spec), "spec changed by patch %s", patch)
		assert.Empty(t, foreignChanges(old, next), "copyOwned touched Liqo's fields")
	})
}

// FuzzValidate: for any handler output (any number of conditions of any
// type and status, any quantities, negative ones included) validate does
// not panic, and accepts the output if and only if it holds exactly one
// Resources condition, Accepted or Denied, and no negative quantity.
//
// shape layout: n = pick(5) conditions, each a type (0 Resources,
// 1 Authentication, 2 an unknown type) and a status (0 Accepted, 1 Denied,
// 2 empty, 3 Unknown); then m = pick(4) resources, each a name, a signed
// byte value and a suffix (none, m, Gi, k). quantity, when it parses, is
// one more resource.
func FuzzValidate(f *testing.F) {
	types := []authv1beta1.ResourceSliceConditionType{authv1beta1.ResourceSliceConditionTypeResources, authv1beta1.ResourceSliceConditionTypeAuthentication, "Other"}
	statuses := []authv1beta1.ResourceSliceConditionStatus{authv1beta1.ResourceSliceConditionAccepted, authv1beta1.ResourceSliceConditionDenied, "", "Unknown"}
	suffixes := []string{"", "m", "Gi", "k"}
	f.Fuzz(func(t *testing.T, shape []byte, quantity string) {
		b := fuzzBytes(shape)
		rs := &authv1beta1.ResourceSlice{}
		resourcesConditions, decided := 0, false
		for range b.pick(5) {
			c := authv1beta1.ResourceSliceCondition{Type: types[b.pick(len(types))], Status: statuses[b.pick(len(statuses))]}
			if c.Type == authv1beta1.ResourceSliceConditionTypeResources {
				resourcesConditions++
				decided = c.Status == authv1beta1.ResourceSliceConditionAccepted || c.Status == authv1beta1.ResourceSliceConditionDenied
			}
			rs.Status.Conditions = append(rs.Status.Conditions, c)
		}
		negativeByName := map[corev1.ResourceName]bool{}
		for range b.pick(4) {
			if rs.Status.Resources == nil {
				rs.Status.Resources = corev1.ResourceList{}
			}
			name := fuzzResourceNames[b.pick(len(fuzzResourceNames))]
			v := int(int8(b.next()))
			rs.Status.Resources[name] = resource.MustParse(strconv.Itoa(v) + suffixes[b.pick(len(suffixes))])
			negativeByName[name] = v < 0 // a later entry replaces an earlier one
		}
		negative := false
		for _, n := range negativeByName {
			negative = negative || n
		}
		tooLarge := false
		if fuzzing.LongExponent(quantity) {
			t.Skip("apimachinery's ParseQuantity is slow on long exponents; not validate's input")
		}
		if q, err := resource.ParseQuantity(quantity); err == nil {
			if rs.Status.Resources == nil {
				rs.Status.Resources = corev1.ResourceList{}
			}
			rs.Status.Resources["example.com/fuzzed"] = q
			// Oracles apart from Sign and Cmp, which validate uses.
			if q.AsApproximateFloat64() < 0 {
				negative = true
			}
			f := q.AsApproximateFloat64()
			if f > 9.2e18 && f < 9.3e18 {
				t.Skip("too near the int64 limit for a float oracle")
			}
			tooLarge = f >= 9.3e18
		}

		out, err := json.Marshal(rs.Status)
		require.NoError(t, err)
		err = validate(rs)
		switch {
		case resourcesConditions == 1 && decided && !negative && !tooLarge:
			assert.NoError(t, err, "status %s", out)
		case resourcesConditions == 1 && decided && negative:
			// The reconciler tells a bad quantity apart with errors.Is.
			assert.ErrorIs(t, err, errNegative, "status %s", out)
		case resourcesConditions == 1 && decided:
			assert.ErrorIs(t, err, errTooLarge, "status %s", out)
		default:
			assert.Error(t, err, "status %s", out)
		}
	})
}
