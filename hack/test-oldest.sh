#!/usr/bin/env bash
# Runs the tests that load the SliceBudget CRD into a real API server on the
# oldest kube-apiserver we support (OLDEST_KUBE_VERSION, default v1.33.13:
# Liqo v1.2.0 supports the last three minor releases, 1.33 to 1.35, and this
# is the newest 1.33 patch the Go module proxy serves), so that the CRD's
# schema and CEL rules are proven there, not only on the default v1.35.3:
#   - api/v1alpha1: the CRD's schema, validation messages, printer columns
#     and status subresource;
#   - test/integration: every test in slicebudget*_test.go, the files that
#     drive SliceBudget objects through a manager.
# The binaries are built by hack/envtest.sh into the same cache as the
# default ones (ENVTEST_ROOT, default bin/envtest), in a directory of their
# own (k8s-<version>-etcd-<etcd>); a KUBEBUILDER_ASSETS in the environment is
# ignored, since it names the default version. Prints the build's and the
# tests' wall time apart.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export KUBE_VERSION="${OLDEST_KUBE_VERSION:-v1.33.13}"

start=$SECONDS
assets="$(env -u KUBEBUILDER_ASSETS hack/envtest.sh)"
built=$((SECONDS - start))
version="$("$assets/kube-apiserver" --version)"
echo "test-oldest: $version in $assets (build or check: ${built}s)" >&2
case "$version" in
  "Kubernetes $KUBE_VERSION") ;;
  *) echo "test-oldest: want Kubernetes $KUBE_VERSION" >&2; exit 1 ;;
esac

# The integration tests of SliceBudget: every Test function of those files.
mapfile -t tests < <(sed -n 's/^func \(Test[A-Za-z0-9_]*\)(t \*testing\.T).*/\1/p' test/integration/slicebudget*_test.go)
if ((${#tests[@]} == 0)); then
  echo "test-oldest: no tests found in test/integration/slicebudget*_test.go" >&2
  exit 1
fi
run="^($(IFS='|'; echo "${tests[*]}"))\$"

start=$SECONDS
KUBEBUILDER_ASSETS="$assets" SLICECLASS_REQUIRE_ENVTEST=1 \
  go test -race -count=1 -timeout "${TEST_TIMEOUT:-20m}" ./api/v1alpha1/
KUBEBUILDER_ASSETS="$assets" SLICECLASS_REQUIRE_ENVTEST=1 \
  go test -race -count=1 -timeout "${TEST_TIMEOUT:-20m}" -run "$run" ./test/integration/
echo "test-oldest: ${#tests[@]} integration tests and api/v1alpha1 passed on $KUBE_VERSION in $((SECONDS - start))s (build or check: ${built}s)" >&2
