#!/usr/bin/env bash
# Runs go test -race -count=1 over the packages given (default ./...), as
# make test does, sized to the machine: the test binaries run from one pool
# of TEST_JOBS slots (default: nproc + 1; a test on the API server spends
# much of its time waiting on it, so one slot more than the cores keeps them
# busy without piling work on them), and are built by one go invocation at a
# time (which compiles up to nproc packages at once). The integration
# suite's binary is built first and its shards start at once; every other
# binary is built beside them, in one go invocation, and runs when built.
# Before, the integration shards, the other suites and every other package
# each compiled and ran at once, each sized to the whole machine (load 28 on
# 2 cores).
#
# The integration suite (test/integration), whose tests run one after another
# on one control plane and take far longer than any other package, is split
# into TEST_SHARDS runs of its binary (default: the pool's size). Each shard
# runs with -test.run naming its share of the suite's tests: a control plane
# of its own, its tests one after another as before, so no two tests share
# anything they did not share already. Tests are dealt to shards longest
# first (hack/integration-weights names the slow ones, in seconds of one
# sharded run; any other test counts DEFAULT_WEIGHT), each to the shard with
# the least so far; a new test needs no entry. The pool starts the longest
# runs first: the shards, then the other suites under test/, then every
# other package.
#
# kubectl (for the test of docs/budgets.md's on-call walk, in
# testing/controlplane/dev-controlplane) is not on the way to the first test:
# make test asks hack/envtest.sh for etcd and kube-apiserver only and sets
# TEST_BUILD_KUBECTL=1, and kubectl is built here beside the tests, into the
# same directory (install-envtest -kubectl; under CI its background build
# holds the cache's lock and this waits for it). Only the walk test's
# package waits for it.
#
# Each run prints go test's own closing line (ok or FAIL, the package, the
# seconds) and, when it fails, its whole output first.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CORES="$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
JOBS="${TEST_JOBS:-$((CORES + 1))}"
SHARDS="${TEST_SHARDS:-$JOBS}"
TIMEOUT="${TEST_TIMEOUT:-30m}"
DEFAULT_WEIGHT=3

mod="$(go list -m)"
suite="$mod/test/integration"
patterns=("$@")
if ((${#patterns[@]} == 0)); then patterns=(./...); fi
# Packages with tests, and their directories (a test binary runs in its
# package's directory, as under go test).
declare -A dirs=()
pkgs=()
while read -r p d; do
  pkgs+=("$p")
  dirs[$p]="$d"
done < <(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' "${patterns[@]}")
if ((${#pkgs[@]} == 0)); then
  echo "hack/test.sh: no package with tests in ${patterns[*]}" >&2
  exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/sliceclass-test.XXXXXX")"
pids=()
cleanup() {
  for p in "${pids[@]}"; do pkill -TERM -P "$p" 2>/dev/null || true; kill -- "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# binary names a package's test binary: the package's import path with its
# slashes turned to dots, so no two packages share one.
binary() { echo "$work/bin/$(tr '/' '.' <<<"${1#"$mod"}" | sed 's/^\.//;s/^$/root/').test"; }

start=$SECONDS
mkdir -p "$work/bin" "$work/build" "$work/rc"
# build PKG...: builds the packages' test binaries into $work/bin in one go
# invocation per group of packages sharing a last element (go test -c -o
# DIR/ names each binary after it).
build() {
  local -A byname=()
  local groups=() p n i g
  for p in "$@"; do
    n="${p##*/}"
    i="${byname[$n]:-0}"
    byname[$n]=$((i + 1))
    groups[i]="${groups[i]:-} $p"
  done
  for g in "${groups[@]}"; do
    mkdir -p "$work/build/$$"
    # -vet=off: make test has run go vet ./... already.
    # shellcheck disable=SC2086 # g is a space-separated list of import paths
    go test -race -vet=off -c -o "$work/build/$$/" $g || return 1
    for p in $g; do
      n="${p##*/}"
      if [[ -f "$work/build/$$/$n.test" ]]; then mv "$work/build/$$/$n.test" "$(binary "$p")"; fi
    done
  done
}

# Jobs, longest first: "name|package|extra args" per line.
jobs=()
has_suite=0
for p in "${pkgs[@]}"; do [[ "$p" == "$suite" ]] && has_suite=1; done
rest=()
for p in "${pkgs[@]}"; do [[ "$p" != "$suite" ]] && rest+=("$p"); done
if ((has_suite)); then
  build "$suite"
  echo "hack/test.sh: built the integration suite in $((SECONDS - start))s; its shards start, the other ${#rest[@]} binaries build beside them; runs $JOBS at a time ($CORES cores)" >&2
fi
if ((has_suite)) && ((SHARDS > 1)); then
  bin="$(binary "$suite")"
  # -test.short: list without starting a control plane (RunSuite skips it).
  mapfile -t tests < <(cd "${dirs[$suite]}" && "$bin" -test.short -test.list '^Test' | grep '^Test')
  mapfile -t runs < <(
    for t in "${tests[@]}"; do
      w="$(awk -v t="$t" '$1 == t { print $2; exit }' hack/integration-weights)"
      echo "${w:-$DEFAULT_WEIGHT} $t"
    done | sort -k1,1nr -k2,2 | awk -v n="$SHARDS" '
      { best = 0; for (i = 1; i < n; i++) if (load[i] < load[best]) best = i
        load[best] += $1; names[best] = names[best] (names[best] == "" ? "" : "|") $2 }
      END { for (i = 0; i < n; i++) print names[i] }'
  )
  for i in "${!runs[@]}"; do
    [[ -n "${runs[$i]}" ]] || continue
    n="$(tr '|' '\n' <<<"${runs[$i]}" | wc -l)"
    jobs+=("$suite (shard $((i + 1))/$SHARDS, $n tests)|$suite|-test.run=^(${runs[$i]})\$")
  done
elif ((has_suite)); then
  jobs+=("$suite|$suite|")
fi
for p in "${pkgs[@]}"; do
  [[ "$p" == "$mod/test/"* && "$p" != "$suite" ]] && jobs+=("$p|$p|")
done
for p in "${pkgs[@]}"; do
  [[ "$p" != "$mod/test/"* ]] && jobs+=("$p|$p|")
done

# run N NAME PKG ARG: one test binary, its closing line as go test prints
# it; its exit code goes to $work/rc/N.
run() {
  local rc=0
  run1 "$2" "$3" "$4" || rc=$?
  echo "$rc" >"$work/rc/$1"
}
run1() {
  local name="$1" pkg="$2" arg="$3" log began=$SECONDS bin args=()
  bin="$(binary "$pkg")"
  log="$work/log.$BASHPID"
  if [[ ! -x "$bin" ]]; then
    printf '?   \t%s\t[no test files]\n' "$name"
    return 0
  fi
  args=(-test.count=1 -test.timeout="$TIMEOUT" -test.paniconexit0)
  [[ -n "$arg" ]] && args+=("$arg")
  if (cd "${dirs[$pkg]}" && "$bin" "${args[@]}") >"$log" 2>&1; then
    printf 'ok  \t%s\t%ds\n' "$name" $((SECONDS - began))
  else
    cat "$log"
    printf 'FAIL\t%s\t%ds\n' "$name" $((SECONDS - began))
    return 1
  fi
}

# The pool: a run's slot frees when its exit code is written; wait -n only
# sleeps until some child ends.
busy() {
  local n=0 i
  for i in "${running[@]}"; do [[ -f "$work/rc/$i" ]] || n=$((n + 1)); done
  echo "$n"
}
# The other binaries build in the background (their exit code in
# $work/rc/build); the pool waits for it before it starts the first of them.
if ((${#rest[@]} > 0)); then
  (
    rc=0
    b=$SECONDS
    build "${rest[@]}" || rc=$?
    echo "hack/test.sh: built the other ${#rest[@]} test binaries in $((SECONDS - b))s (${SECONDS}s in all)" >&2
    echo "$rc" >"$work/rc/build"
  ) &
  pids+=($!)
else
  echo 0 >"$work/rc/build"
fi
walk="$mod/testing/controlplane/dev-controlplane"
if [[ "${TEST_BUILD_KUBECTL:-}" == 1 ]]; then
  (
    rc=0
    KUBEBUILDER_ASSETS= hack/envtest.sh >/dev/null 2>"$work/kubectl.log" || rc=$?
    if ((rc != 0)); then cat "$work/kubectl.log" >&2; fi
    echo "$rc" >"$work/rc/kubectl"
  ) &
  pids+=($!)
else
  echo 0 >"$work/rc/kubectl"
fi
running=()
for i in "${!jobs[@]}"; do
  while (($(busy) >= JOBS)); do wait -n 2>/dev/null || true; done
  IFS='|' read -r name pkg arg <<<"${jobs[$i]}"
  if [[ "$pkg" != "$suite" ]]; then
    while [[ ! -f "$work/rc/build" ]]; do wait -n 2>/dev/null || true; done
    if [[ "$(cat "$work/rc/build")" != 0 ]]; then
      echo "hack/test.sh: building the test binaries failed" >&2
      wait
      exit 1
    fi
  fi
  if [[ "$pkg" == "$walk" ]]; then
    while [[ ! -f "$work/rc/kubectl" ]]; do wait -n 2>/dev/null || true; done
  fi
  run "$i" "$name" "$pkg" "$arg" &
  pids+=($!)
  running+=("$i")
done
wait
failed=0
for i in "${!jobs[@]}"; do
  [[ "$(cat "$work/rc/$i" 2>/dev/null || echo 1)" == 0 ]] || failed=1
done
echo "hack/test.sh: ran ${#jobs[@]} test runs in $((SECONDS - start))s" >&2
exit "$failed"
