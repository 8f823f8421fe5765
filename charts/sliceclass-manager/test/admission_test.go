package charttest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// provenPolicy is the admission policy test/reliability/admission proves.
var provenPolicy = filepath.Join(repoRoot, "examples/manager/deploy/admission-policy.yaml")

// TestAdmissionPolicyIsTheProvenOne checks that the chart's policy is the
// one test/reliability/admission tests, named after the release, and that
// its binding enforces it.
func TestAdmissionPolicyIsTheProvenOne(t *testing.T) {
	raw, err := os.ReadFile(provenPolicy)
	require.NoError(t, err)
	docs := splitDocuments(string(raw))
	require.Len(t, docs, 2, "%s: a policy and its binding", provenPolicy)
	var want admissionregistrationv1.ValidatingAdmissionPolicy
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), &want))
	var wantBinding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &wantBinding))

	objs := render(t, "sc-all", everyOptionIn("sc-all"))
	got := typed[admissionregistrationv1.ValidatingAdmissionPolicy](t, only(t, objs, "ValidatingAdmissionPolicy", 1)[0])
	if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
		t.Errorf("the chart's policy differs from %s (-proven +chart):\n%s", provenPolicy, diff)
	}
	binding := typed[admissionregistrationv1.ValidatingAdmissionPolicyBinding](t, only(t, objs, "ValidatingAdmissionPolicyBinding", 1)[0])
	require.Equal(t, got.Name, binding.Spec.PolicyName, "the binding binds the chart's policy")
	binding.Spec.PolicyName = wantBinding.Spec.PolicyName
	if diff := cmp.Diff(wantBinding.Spec, binding.Spec); diff != "" {
		t.Errorf("the chart's binding differs from %s (-proven +chart):\n%s", provenPolicy, diff)
	}
}
