#!/usr/bin/env bash
# Generates the API's deep-copy functions (api/v1alpha1/zz_generated.deepcopy.go)
# and its CRD (config/crd/sliceclass.io_slicebudgets.yaml) from the Go types
# in api/, with controller-gen built from source through the Go module proxy
# (the version pinned here matches the k8s.io libraries of go.mod), then
# bounds the length of the spec's quantities (hack/crdbounds: no marker
# reaches a map's values, and without a bound the API server refuses the CRD's
# quantity rules as too costly), and copies the CRD into the Helm chart's crds/
# (charts/sliceclass-manager/crds/, which helm installs before the templates).
#
#   hack/crdgen.sh          regenerate in place (make crds)
#   hack/crdgen.sh --check  generate into a temporary tree and fail, with the
#                           diff, when the committed files differ, the chart's
#                           copy included (make crds-check)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="${CONTROLLER_GEN_VERSION:-v0.20.1}"
GEN=(go run "sigs.k8s.io/controller-tools/cmd/controller-gen@$VERSION")
CRD=config/crd/sliceclass.io_slicebudgets.yaml
CHART_CRD=charts/sliceclass-manager/crds/sliceclass.io_slicebudgets.yaml

generate() { # into the tree rooted at $1 (a copy of the module for --check)
  (cd "$1" && "${GEN[@]}" object paths=./api/... crd paths=./api/... output:crd:artifacts:config=config/crd &&
    go run ./hack/crdbounds config/crd/*.yaml)
}

case "${1:-}" in
"")
  generate "$ROOT"
  cp "$ROOT/$CRD" "$ROOT/$CHART_CRD"
  ;;
--check)
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  # What controller-gen and crdbounds read: the module's API types, go.mod/go.sum.
  (cd "$ROOT" && tar cf - go.mod go.sum api config/crd hack/crdbounds) | (cd "$tmp" && tar xf -)
  generate "$tmp"
  status=0
  for f in api/v1alpha1/zz_generated.deepcopy.go "$CRD"; do
    if ! diff -u "$ROOT/$f" "$tmp/$f"; then
      echo "crdgen: $f differs from what the Go types in api/ generate: run make crds and commit" >&2
      status=1
    fi
  done
  if ! diff -u "$ROOT/$CHART_CRD" "$tmp/$CRD"; then
    echo "crdgen: $CHART_CRD (the chart's copy) differs from what the Go types in api/ generate: run make crds and commit" >&2
    status=1
  fi
  exit "$status"
  ;;
*)
  echo "usage: $0 [--check]" >&2
  exit 2
  ;;
esac
