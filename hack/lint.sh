#!/usr/bin/env bash
# Runs golangci-lint with the repo's .golangci.yml, building the pinned
# version from source through the Go module proxy on first use.
# --build-only builds it (once per TOOLS_ROOT) and stops: CI starts that in the
# background at its beginning, so the build overlaps the module downloads and
# the envtest build instead of holding up make test. Callers that overlap take
# a lock on the tools directory: the second waits for the first's build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="${GOLANGCI_LINT_VERSION:-v2.15.0}"
TOOLS="${TOOLS_ROOT:-$ROOT/bin/tools}"
BIN="$TOOLS/golangci-lint-$VERSION"
mkdir -p "$TOOLS"
if command -v flock >/dev/null; then
  exec 8>"$TOOLS/.lock-golangci-lint-$VERSION"
  flock 8
fi
if [[ ! -x "$BIN" ]]; then
  echo "lint: building golangci-lint $VERSION from source (once, about 2 minutes)..." >&2
  GOBIN="$TOOLS/gobin-$VERSION" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$VERSION"
  mv "$TOOLS/gobin-$VERSION/golangci-lint" "$BIN"
  rmdir "$TOOLS/gobin-$VERSION" 2>/dev/null || true
fi
if command -v flock >/dev/null; then flock -u 8; fi
if [[ "${1:-}" == "--build-only" ]]; then exit 0; fi
cd "$ROOT"
"$BIN" run ./...
