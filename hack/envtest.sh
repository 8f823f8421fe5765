#!/usr/bin/env bash
# Prints the directory to use as KUBEBUILDER_ASSETS on its last line of
# stdout, first building the envtest control-plane binaries (etcd,
# kube-apiserver) from source through the Go module proxy when they are
# missing or of the wrong version. Progress goes to stderr, one line per phase;
# the go tool's own output goes to build.log in the work directory.
#
# The build is testing/controlplane/install-envtest, the same command users
# run from their own modules; this script only chooses where it builds:
#   - an existing KUBEBUILDER_ASSETS that holds both binaries is honoured as is;
#   - ENVTEST_ROOT moves the cache (default bin/envtest; CI points it under
#     $HOME so clean clones reuse it); binaries land in
#     $ENVTEST_ROOT/k8s-<kube>-etcd-<etcd>, work directories in $ENVTEST_ROOT/src;
#   - ETCD_VERSION and KUBE_VERSION pick other versions;
#   - kubectl is built beside the default versions (install-envtest -kubectl),
#     for the test of docs/budgets.md's on-call walk on a machine without one:
#     ENVTEST_KUBECTL=0 skips it, ENVTEST_KUBECTL=1 asks for it beside other
#     versions too.
# One build per cache: callers that overlap (CI starts the build in the
# background while it lints, then make test asks for the binaries) take a lock
# on the cache, so the second waits for the first and finds the binaries built.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "$KUBEBUILDER_ASSETS/kube-apiserver" && -x "$KUBEBUILDER_ASSETS/etcd" ]]; then
  echo "envtest: using existing KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS" >&2
  echo "$KUBEBUILDER_ASSETS"
  exit 0
fi

root="${ENVTEST_ROOT:-$ROOT/bin/envtest}"
args=(-dir "$root")
if [[ -n "${ETCD_VERSION:-}" ]]; then args+=(-etcd-version "$ETCD_VERSION"); fi
if [[ -n "${KUBE_VERSION:-}" ]]; then args+=(-kube-version "$KUBE_VERSION"); fi
if [[ -n "${KUBE_VERSION:-}" ]]; then kubectl_default=0; else kubectl_default=1; fi
if [[ "${ENVTEST_KUBECTL:-$kubectl_default}" != 0 ]]; then args+=(-kubectl); fi

cd "$ROOT"
if command -v flock >/dev/null; then
  mkdir -p "$root"
  exec 9>"$root/.lock"
  if ! flock -n 9; then
    echo "envtest: another build into $root is under way; waiting for it" >&2
    flock 9
  fi
fi
exec go run ./testing/controlplane/install-envtest "${args[@]}"
