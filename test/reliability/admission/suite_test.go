package admission

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// cp is the control plane of the suite, with the policy applied by the
// first test that needs it (see applyPolicy).
var cp *controlplane.ControlPlane

// TestMain starts one control plane for the suite (controlplane.RunSuite):
// every test begins with cp.Require(t), which skips it under -short or
// without envtest binaries, unless SLICECLASS_REQUIRE_ENVTEST is set (as in
// CI), when missing binaries fail the suite.
func TestMain(m *testing.M) {
	os.Exit(controlplane.RunSuite(m, &cp))
}

// policyFile is the shipped policy, relative to this package.
const policyFile = "../../../examples/manager/deploy/admission-policy.yaml"

// legacyNamespace holds legacySlice, a slice stored before the policy was
// applied, with a quantity the policy refuses (legacyQuantity) and a
// finalizer (legacyFinalizer), as a provider upgraded to the policy may hold.
const (
	legacyNamespace = "legacy"
	legacySlice     = "stored-before-the-policy"
	legacyQuantity  = "1e-100000000"
	legacyFinalizer = "test.sliceclass.io/keep"
)

var (
	setUpOnce sync.Once
	setUpErr  error
)

// setUp makes the suite's cluster a provider upgraded to the policy: it
// stores legacySlice, then applies the policy and waits until the API
// server enforces it. It runs once, for the first test that calls it; the
// other tests get its result.
func setUp(t *testing.T) {
	t.Helper()
	setUpOnce.Do(func() {
		ctx := context.Background()
		setUpErr = cp.CreateNamespace(ctx, legacyNamespace)
		if setUpErr == nil {
			legacy := sliceWithRequests(legacySlice, legacyNamespace, map[string]any{"cpu": legacyQuantity})
			legacy.SetFinalizers([]string{legacyFinalizer})
			setUpErr = cp.Client.Create(ctx, legacy)
		}
		if setUpErr == nil {
			setUpErr = applyPolicy(ctx)
		}
		if setUpErr == nil {
			setUpErr = waitUntilEnforced(ctx)
		}
	})
	if setUpErr != nil {
		t.Fatalf("setting up the suite: %v", setUpErr)
	}
}

// applyPolicy creates every object of policyFile with the administrator's
// client.
func applyPolicy(ctx context.Context) error {
	raw, err := os.ReadFile(policyFile)
	if err != nil {
		return err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	created := 0
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", policyFile, err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return fmt.Errorf("decoding a document of %s: %w", policyFile, err)
		}
		if len(obj.Object) == 0 {
			continue // only comments
		}
		if err := cp.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s of %s: %w", obj.GetKind(), obj.GetName(), policyFile, err)
		}
		created++
	}
	if created != 2 {
		return fmt.Errorf("%s: %d objects, want the policy and its binding", policyFile, created)
	}
	return nil
}

// waitUntilEnforced tries, as a dry run, to create a slice the policy
// refuses until the API server refuses it with the policy's message:
// policies and bindings reach the admission plugin through an informer, a
// second or so later, so it waits up to testwait.Timeout.
func waitUntilEnforced(ctx context.Context) error {
	probe := sliceWithRequests("probe", legacyNamespace, map[string]any{"cpu": "1e-100000000"})
	var last error
	err := wait.PollUntilContextTimeout(ctx, pollInterval, testwait.Timeout, true, func(ctx context.Context) (bool, error) {
		last = cp.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return isRefusal(last, "spec", "cpu"), nil
	})
	if err != nil {
		if last == nil {
			return fmt.Errorf("timed out after %s waiting for the policy to refuse a slice: it is still admitted", testwait.Timeout)
		}
		return fmt.Errorf("timed out after %s waiting for the policy to refuse a slice (last answer: %w)", testwait.Timeout, last)
	}
	return nil
}
