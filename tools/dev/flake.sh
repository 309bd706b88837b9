#!/usr/bin/env bash
# Runs the integration and fault tests (or the targets given) N times in a
# row, uncached, one run after another, and prints every failure: the
# target, its run and the first failed assertions. For finding tests whose
# outcome depends on timing; correctness tests must pass every time.
#
#   tools/dev/flake.sh            20 runs of //test/integration/... //test/fault/...
#   tools/dev/flake.sh 5 //test/integration:patience_test
#
# Ends with "N runs, F with a failure" and exits non-zero when any failed.
set -uo pipefail
cd "$(dirname "$0")/../.."

runs=20
targets=()
for a in "$@"; do
  case "$a" in
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    [0-9]*) runs="$a" ;;
    //*) targets+=("$a") ;;
    *) echo "flake: unknown argument $a (a number of runs, or //target patterns)" >&2; exit 2 ;;
  esac
done
[ "${#targets[@]}" -eq 0 ] && targets=(//test/integration/... //test/fault/...)
[ "$runs" -ge 1 ] 2>/dev/null || { echo "flake: the number of runs must be at least 1" >&2; exit 2; }

tools/setup.sh >/dev/null || { echo "flake: tools/setup.sh failed" >&2; exit 1; }
bad_runs=0
testlogs="$(bazel info bazel-testlogs 2>/dev/null)"
for i in $(seq 1 "$runs"); do
  out="$(mktemp)"
  start=$(date +%s)
  bazel test --color=no --curses=no --nocache_test_results "${targets[@]}" >"$out" 2>&1
  rc=$?
  failed=$(sed -nE 's#^(//[^ ]+) +(FAILED|TIMEOUT|FLAKY|NO STATUS|FAILED TO BUILD|INCOMPLETE).*#\1 \2#p' "$out")
  took=$(( $(date +%s) - start ))
  if [ "$rc" -eq 0 ] && [ -z "$failed" ]; then
    echo "flake: run $i/$runs ok (${took} s)"
  else
    bad_runs=$((bad_runs + 1))
    echo "flake: run $i/$runs FAILED (${took} s, bazel exit $rc)"
    [ -z "$failed" ] && tail -20 "$out" | sed 's/^/    /'
    while read -r target status; do
      [ -n "$target" ] || continue
      echo "  $target $status"
      pkg="${target#//}"; pkg="${pkg%%:*}"; name="${target##*:}"
      log="$testlogs/$pkg/$name/test.log"
      if [ -f "$log" ]; then
        # Catch2 prints the case, the failed check and its expansion.
        grep -E -A4 'FAILED:|fatal error condition' "$log" | grep -vE '^\s*\[20' | head -24 |
          sed 's/^/    /'
        keep="$(mktemp -d "${TMPDIR:-/tmp}/rog-flake.XXXXXX")"
        cp "$log" "$keep/$name.run$i.log"
        echo "    whole log: $keep/$name.run$i.log"
      fi
    done <<<"$failed"
  fi
  rm -f "$out"
done
echo "$runs runs, $bad_runs with a failure"
[ "$bad_runs" -eq 0 ]
