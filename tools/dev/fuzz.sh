#!/usr/bin/env bash
# Builds the libFuzzer targets of //test/fuzz with clang (bazel build
# --config=fuzz: libFuzzer + ASan) and runs each for a bounded time on its
# checked-in seed corpus (test/fuzz/corpus/<target>/). New inputs go to a
# temporary folder, never into the checked-in corpus; a crash leaves its
# input in the artifacts folder named at the end, to be fixed in the
# decoder and replayed as a regression test.
#
#   tools/dev/fuzz.sh                      every target, 20 s each
#   tools/dev/fuzz.sh --seconds=300 codec  one target, longer
#
# Prints one line per target (executions, corpus, crash or not) and the
# closing line "N passed, M failed" of tools/test.sh, one case per target.
set -uo pipefail
cd "$(dirname "$0")/../.."

seconds=20
targets=()
for a in "$@"; do
  case "$a" in
    --seconds=*) seconds="${a#--seconds=}" ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz: unknown flag $a" >&2; exit 2 ;;
    *) targets+=("$a") ;;
  esac
done
[ "${#targets[@]}" -eq 0 ] && targets=(codec row_index row_batch checkpoint engine)

buildlog="$(mktemp)"
work="$(mktemp -d "${TMPDIR:-/tmp}/rog-fuzz.XXXXXX")"
trap 'rm -f "$buildlog"' EXIT
labels=()
for t in "${targets[@]}"; do labels+=("//test/fuzz:${t}_fuzzer"); done
echo "fuzz: bazel build --config=fuzz ${labels[*]} (clang, libFuzzer, ASan)"
if ! bazel build --config=fuzz --color=no --curses=no "${labels[@]}" >"$buildlog" 2>&1; then
  grep -vE '^/usr/bin/ld.gold: warning' "$buildlog" | tail -30 >&2
  echo "fuzz: the build failed"
  echo "0 passed, ${#targets[@]} failed"
  exit 1
fi
bin="$(bazel info --config=fuzz bazel-bin 2>/dev/null)/test/fuzz"

passed=0
failed=0
for t in "${targets[@]}"; do
  mkdir -p "$work/$t/new" "$work/$t/artifacts"
  log="$work/$t/fuzz.log"
  # New inputs land in the first folder; the seeds are only read.
  timeout $((seconds + 60)) "$bin/${t}_fuzzer" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/$t/artifacts/" \
    "$work/$t/new" "test/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -1)
  corpus=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | sed -nE 's/.* corp: ([0-9]+\/[0-9]+[a-zA-Z]*).*/\1/p' | tail -1)
  if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
    passed=$((passed + 1))
    echo "fuzz: ok    $t: ${runs} executions in ${seconds} s, corpus ${corpus:-?}, no crash"
  else
    failed=$((failed + 1))
    echo "fuzz: FAIL  $t: exit $rc after ${runs:-?} executions; inputs in $work/$t/artifacts/"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|    #[0-9] )' "$log" | head -20
    echo "fuzz: whole log: $log"
  fi
done
[ "$failed" -eq 0 ] && rm -rf "$work"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
