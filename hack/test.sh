#!/usr/bin/env bash
# Runs go test -race -count=1 over the packages given (default ./...), as
# make test does, with one change: the integration suite (test/integration),
# whose tests run one after another on one control plane and take far longer
# than any other package, is split into TEST_SHARDS processes (default 3).
# Each shard is the same test binary run with -test.run naming its share of
# the suite's tests: a control plane of its own, its tests one after another
# as before, so no two tests share anything they did not share already. The
# shards run beside the other packages (the other suites under test/ in one
# go test, every other package in another), which keeps both cores busy while
# the suites' tests wait on the API server.
#
# Tests are dealt to shards longest first (hack/integration-weights names
# the slow ones, in seconds of one sharded run; any other test counts
# DEFAULT_WEIGHT), each to the shard with the least so far; a new test needs
# no entry. TEST_SHARDS=1 runs the suite as one process, as go test would.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SHARDS="${TEST_SHARDS:-3}"
TIMEOUT="${TEST_TIMEOUT:-30m}"
DEFAULT_WEIGHT=3

mod="$(go list -m)"
suite="$mod/test/integration"
patterns=("$@")
if ((${#patterns[@]} == 0)); then patterns=(./...); fi
mapfile -t all < <(go list "${patterns[@]}")
# The other suites under test/ (reliability, soak) run long too: they get a
# go test of their own, started with the shards, so that they do not start
# last behind every unit-test package.
others=()
suites=()
sharded=0
for p in "${all[@]}"; do
  if [[ "$p" == "$suite" ]]; then
    sharded=1
  elif [[ "$p" == "$mod/test/"* ]]; then
    suites+=("$p")
  else
    others+=("$p")
  fi
done
if ((!sharded)) || ((SHARDS <= 1)); then
  exec go test -race -count=1 -timeout "$TIMEOUT" "${all[@]}"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/sliceclass-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT
bin="$work/integration.test"
go test -race -c -o "$bin" ./test/integration
# -test.short: list without starting a control plane (RunSuite skips it).
mapfile -t tests < <(cd test/integration && "$bin" -test.short -test.list '^Test' | grep '^Test')

# deal prints one line per shard: the -test.run pattern of its tests.
deal() {
  local t w
  for t in "${tests[@]}"; do
    w="$(awk -v t="$t" '$1 == t { print $2; exit }' hack/integration-weights)"
    echo "${w:-$DEFAULT_WEIGHT} $t"
  done | sort -k1,1nr -k2,2 | awk -v n="$SHARDS" '
    { best = 0; for (i = 1; i < n; i++) if (load[i] < load[best]) best = i
      load[best] += $1; names[best] = names[best] (names[best] == "" ? "" : "|") $2 }
    END { for (i = 0; i < n; i++) print names[i] }'
}
mapfile -t runs < <(deal)

pids=()
if ((${#suites[@]} > 0)); then
  go test -race -count=1 -timeout "$TIMEOUT" "${suites[@]}" &
  pids+=($!)
fi
if ((${#others[@]} > 0)); then
  go test -race -count=1 -timeout "$TIMEOUT" "${others[@]}" &
  pids+=($!)
fi
for i in "${!runs[@]}"; do
  [[ -n "${runs[$i]}" ]] || continue
  n="$(tr '|' '\n' <<<"${runs[$i]}" | wc -l)"
  (
    start=$SECONDS
    # The binary runs in its package's directory, as under go test.
    if (cd test/integration && "$bin" -test.count=1 -test.timeout="$TIMEOUT" -test.run "^(${runs[$i]})\$") >"$work/shard$i.log" 2>&1; then
      printf 'ok  \t%s (shard %d/%d, %d tests)\t%ds\n' "$suite" $((i + 1)) "$SHARDS" "$n" $((SECONDS - start))
    else
      cat "$work/shard$i.log"
      printf 'FAIL\t%s (shard %d/%d, %d tests)\t%ds\n' "$suite" $((i + 1)) "$SHARDS" "$n" $((SECONDS - start))
      exit 1
    fi
  ) &
  pids+=($!)
done
failed=0
for p in "${pids[@]}"; do
  wait "$p" || failed=1
done
exit "$failed"
