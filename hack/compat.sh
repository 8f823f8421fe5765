#!/usr/bin/env bash
# Proves the module against every controller-runtime line we support: for
# each line (COMPAT_LINES, default "v0.23 v0.24 v0.25") it resolves the
# newest patch release the module proxy serves, and in a fresh temporary
# copy of the module (the files git tracks, as they are in the work tree)
# runs
#   go get sigs.k8s.io/controller-runtime@<version>   (and the k8s.io modules it requires)
#   go mod tidy
#   go build ./... ; go vet ./...
#   go test -short -count=1 -vet=off <the packages that touch controller-runtime>
# then prints one table row per version and exits non-zero if any step
# failed. The repository's go.mod is never touched: it keeps the lowest
# version we support.
#
# The packages tested are those whose code or tests import
# sigs.k8s.io/controller-runtime directly, found in each copy by go list
# (a new package is picked up by itself), less the suites under test/: they
# need a control plane and skip under -short, so on this matrix they would
# only cost a link each. build and vet still cover every package; the
# suites run at the version go.mod pins in make test. -vet=off: go vet has
# just run over everything.
#
# COMPAT_VERSIONS="v0.24.1 v0.25.2" tests exact versions instead of lines;
# COMPAT_KEEP=1 keeps the temporary directory (logs per step) for a look.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODULE=sigs.k8s.io/controller-runtime
LINES="${COMPAT_LINES:-v0.23 v0.24 v0.25}"

# The copy's go.mod must change, whatever the caller's GOFLAGS say (CI sets
# -mod=readonly); and no workspace may redirect the module.
GOFLAGS="$(sed -E 's/(^| )-mod=[a-z]+//g' <<<"${GOFLAGS:-}")"
export GOFLAGS GOWORK=off
# Unit tests only: envtest-backed tests skip under -short, and must not be
# forced on.
unset SLICECLASS_REQUIRE_ENVTEST

work="$(mktemp -d "${TMPDIR:-/tmp}/sliceclass-compat.XXXXXX")"
if [[ "${COMPAT_KEEP:-}" == 1 ]]; then
  echo "compat: keeping $work" >&2
else
  trap 'rm -rf "$work"' EXIT
fi

# resolve prints the newest release (no pre-release) of each line.
resolve() {
  local all
  all="$(cd "$ROOT" && go list -m -versions "$MODULE")"
  for line in $LINES; do
    local v
    v="$(tr ' ' '\n' <<<"$all" | grep -E "^${line//./\\.}\.[0-9]+$" | tail -n 1 || true)"
    if [[ -z "$v" ]]; then
      echo "compat: no release of $MODULE on line $line" >&2
      return 1
    fi
    echo "$v"
  done
}

if [[ -n "${COMPAT_VERSIONS:-}" ]]; then
  versions="$COMPAT_VERSIONS"
else
  versions="$(resolve | tr '\n' ' ')"
fi
echo "compat: $MODULE $versions" >&2

# The module as git tracks it, from the work tree.
mkdir -p "$work/src"
(cd "$ROOT" && git ls-files -z | tar --null --files-from=- --ignore-failed-read -cf - | tar -xf - -C "$work/src")

# crpackages prints, in the current directory's module, the packages with
# tests whose code or tests import controller-runtime, less the control-plane
# suites under test/.
crpackages() {
  local mod
  mod="$(go list -m)"
  go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}{{end}}' ./... |
    awk -v suites="$mod/test/" '
      index($1, suites) == 1 { next }
      { for (i = 2; i <= NF; i++) if ($i ~ /^sigs\.k8s\.io\/controller-runtime(\/|$)/) { print $1; next } }'
}

# step NAME DIR LOG CMD...: runs CMD in DIR with its output in LOG; prints ok
# (and its time on stderr) or FAIL (and the log's tail on stderr).
step() {
  local name="$1" dir="$2" log="$3" start=$SECONDS
  shift 3
  if (cd "$dir" && "$@") >"$log" 2>&1; then
    echo "compat: $name: ok in $((SECONDS - start))s" >&2
    echo ok
  else
    {
      echo "---- $name failed: $*"
      tail -n 40 "$log"
      echo "----"
    } >&2
    echo FAIL
  fi
}

rows=()
failed=0
for v in $versions; do
  dir="$work/$v"
  cp -a "$work/src" "$dir"
  start=$SECONDS
  echo "compat: $v: go get, tidy, build, vet, unit tests" >&2
  get="$(step "go get $MODULE@$v" "$dir" "$dir/get.log" go get "$MODULE@$v")"
  if [[ "$get" == ok ]]; then
    get="$(step "go mod tidy" "$dir" "$dir/tidy.log" go mod tidy)"
  fi
  build=skipped vet=skipped tst=skipped clientgo=-
  if [[ "$get" == ok ]]; then
    clientgo="$(cd "$dir" && go list -m -f '{{.Version}}' k8s.io/client-go)"
    build="$(step "build ($v)" "$dir" "$dir/build.log" go build ./...)"
    vet="$(step "vet ($v)" "$dir" "$dir/vet.log" go vet ./...)"
    pkgs="$(cd "$dir" && crpackages | tr '\n' ' ')"
    if [[ -z "$pkgs" ]]; then
      echo "compat: $v: no package imports $MODULE" >&2
      tst=FAIL
    else
      # shellcheck disable=SC2086 # one word per package
      tst="$(step "test ($v)" "$dir" "$dir/test.log" go test -short -count=1 -vet=off $pkgs)"
    fi
  fi
  for r in "$get" "$build" "$vet" "$tst"; do
    if [[ "$r" != ok ]]; then failed=1; fi
  done
  rows+=("$(printf '%-18s %-12s %-8s %-6s %-6s %-6s %5d' "$v" "$clientgo" "$get" "$build" "$vet" "$tst" $((SECONDS - start)))")
done

printf '%-18s %-12s %-8s %-6s %-6s %-6s %5s\n' controller-runtime client-go get+tidy build vet test seconds
printf '%s\n' "${rows[@]}"
if ((failed)); then
  echo "compat: FAILED (see the logs above)" >&2
  exit 1
fi
echo "compat: all versions passed" >&2
