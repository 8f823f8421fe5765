#!/usr/bin/env bash
# Builds the envtest control-plane binaries (etcd, kube-apiserver) from source
# through the Go module proxy, into an ignored directory, only when they are
# missing or of the wrong version. Prints the directory to use as
# KUBEBUILDER_ASSETS on its last line of stdout; progress goes to stderr.
#
# An existing KUBEBUILDER_ASSETS that holds both binaries is honoured as is.
set -euo pipefail

ETCD_VERSION="${ETCD_VERSION:-v3.6.8}"
KUBE_VERSION="${KUBE_VERSION:-v1.35.3}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# ENVTEST_ROOT moves the cache (CI points it under $HOME so clean clones reuse it).
ENVTEST_ROOT="${ENVTEST_ROOT:-$ROOT/bin/envtest}"
BIN_DIR="$ENVTEST_ROOT/k8s-${KUBE_VERSION}-etcd-${ETCD_VERSION}"
WORK_DIR="$ENVTEST_ROOT/src"

log() { echo "envtest: $*" >&2; }

if [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "$KUBEBUILDER_ASSETS/kube-apiserver" && -x "$KUBEBUILDER_ASSETS/etcd" ]]; then
  log "using existing KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
  echo "$KUBEBUILDER_ASSETS"
  exit 0
fi

mkdir -p "$BIN_DIR" "$WORK_DIR"

have_etcd() { [[ -x "$BIN_DIR/etcd" ]] && "$BIN_DIR/etcd" --version 2>/dev/null | grep -q "etcd Version: ${ETCD_VERSION#v}"; }
have_apiserver() { [[ -x "$BIN_DIR/kube-apiserver" ]] && "$BIN_DIR/kube-apiserver" --version 2>/dev/null | grep -q "Kubernetes ${KUBE_VERSION}\$"; }

build_etcd() {
  local d="$WORK_DIR/etcd-$ETCD_VERSION"
  log "building etcd $ETCD_VERSION from source (about 1 minute cold)..."
  mkdir -p "$d"
  (
    cd "$d"
    [[ -f go.mod ]] || go mod init envtest.local/etcd >/dev/null 2>&1
    go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2
    go build -trimpath -o "$BIN_DIR/etcd" go.etcd.io/etcd/server/v3 >&2
  )
  log "etcd ready"
}

build_apiserver() {
  local d="$WORK_DIR/kube-apiserver-$KUBE_VERSION"
  local staging="${KUBE_VERSION/v1./v0.}"
  local minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  log "building kube-apiserver $KUBE_VERSION from source (about 4 minutes cold on 2 cores, seconds when cached)..."
  mkdir -p "$d"
  (
    cd "$d"
    if [[ ! -f go.mod ]]; then
      go mod init envtest.local/kubeapiserver >/dev/null 2>&1
    fi
    go mod edit -require="k8s.io/kubernetes@$KUBE_VERSION"
    # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces
    # them with local paths in its own repo; point each at its published
    # version instead.
    local kdir
    go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" >/dev/null
    kdir="$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBE_VERSION"
    local mods
    mods=$(awk '/^require/,/^\)/ { if ($2 == "v0.0.0" && $1 ~ /^k8s.io\//) print $1 }' "$kdir/go.mod" | sort -u)
    for m in $mods; do
      go mod edit -replace="$m=$m@$staging"
    done
    cat > main.go <<'GO'
package main

import _ "k8s.io/kubernetes/cmd/kube-apiserver/app"
GO
    go mod tidy >&2
    go build -trimpath \
      -ldflags "-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
      -o "$BIN_DIR/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2
  )
  log "kube-apiserver ready"
}

have_etcd || build_etcd
have_apiserver || build_apiserver

have_etcd || { log "etcd at $BIN_DIR does not report $ETCD_VERSION"; exit 1; }
have_apiserver || { log "kube-apiserver at $BIN_DIR does not report $KUBE_VERSION"; exit 1; }
log "assets in $BIN_DIR"
echo "$BIN_DIR"
