#!/usr/bin/env bash
# Runs golangci-lint with the repo's .golangci.yml, building the pinned
# version from source through the Go module proxy on first use.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="${GOLANGCI_LINT_VERSION:-v2.15.0}"
TOOLS="${TOOLS_ROOT:-$ROOT/bin/tools}"
BIN="$TOOLS/golangci-lint-$VERSION"
if [[ ! -x "$BIN" ]]; then
  echo "lint: building golangci-lint $VERSION from source (once, about 2 minutes)..." >&2
  mkdir -p "$TOOLS"
  GOBIN="$TOOLS/gobin-$VERSION" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$VERSION"
  mv "$TOOLS/gobin-$VERSION/golangci-lint" "$BIN"
  rmdir "$TOOLS/gobin-$VERSION" 2>/dev/null || true
fi
cd "$ROOT"
"$BIN" run ./...
