#!/usr/bin/env bash
# Runs every test of ROG on this machine: installs what is missing
# (tools/setup.sh), then `bazel test //...`, then prints a closing line
# `N passed, M failed` that counts Catch2 test cases across all test
# binaries and the Python SDK's pytest cases (//python:sdk_test prints the
# same closing line), plus one case for the documentation (tools/dev/check_docs.sh), one
# for the layers (tools/dev/check_layers.sh), one for the C++ formatting
# (tools/dev/check_format.sh), one for function lengths
# (tools/dev/check_function_length.py), one for the deployment (test/deploy/install_test.sh,
# skipped with ROG_SKIP_DEPLOY=1), one for the main job
# (`tools/run.sh --quick`) and one for the benchmark
# (`tools/bench.sh --profile=tiny`), these two skipped with ROG_SKIP_RUN=1,
# and one per libFuzzer target (tools/dev/fuzz.sh, ROG_FUZZ_SECONDS each,
# default 20; skipped with ROG_SKIP_FUZZ=1); all of these are skipped when
# target patterns are given. A test binary that
# crashed, timed out or failed to build counts as one failed case. Exits
# non-zero when anything failed.
# Extra arguments go to `bazel test`: flags (e.g. --config=asan) and target
# patterns (default //...).
set -uo pipefail
cd "$(dirname "$0")/.."

tools/setup.sh || { echo "0 passed, 1 failed"; exit 1; }

# Flags pass through; without a target pattern every test runs.
targets=("$@")
flags=()
has_pattern=0
for a in "$@"; do
  case "$a" in -*) flags+=("$a") ;; *) has_pattern=1 ;; esac
done
[ "$has_pattern" -eq 0 ] && targets+=("//...")
# TSan's suppressions file needs an absolute path (Bazel 4 does not expand
# %workspace% in .bazelrc flag values); the options repeat .bazelrc's
# because a --test_env replaces the variable.
for a in "${flags[@]+"${flags[@]}"}"; do
  if [ "$a" = --config=tsan ]; then
    targets+=("--test_env=TSAN_OPTIONS=second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$PWD/tools/dev/tsan.supp")
  fi
done

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
echo "test: bazel test ${targets[*]}"
bazel test --color=no --curses=no "${targets[@]}" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}

# The flags too: a config such as --config=asan has its own output folder.
testlogs="$(bazel info "${flags[@]}" bazel-testlogs 2>/dev/null)"
passed=0
failed=0
skipped=0
# Only targets this run reported: a stale log of an old target cannot count.
while read -r target status; do
  pkg="${target#//}"
  pkg="${pkg%%:*}"
  name="${target##*:}"
  log="$testlogs/$pkg/$name/test.log"
  counted=0
  if [ "$status" = PASSED ] || [ "$status" = FAILED ]; then
    if [ -f "$log" ]; then
      # Cases the binary left out (test/catch_main.cc: cases tagged [.root],
      # run by another user) count as skipped, neither passed nor failed; a
      # binary of such cases alone then ran none ("No tests ran").
      if line=$(grep -E "^skipped: [0-9]+ test cases? " "$log" | tail -1) && [ -n "$line" ]; then
        n=$(sed -E 's/^skipped: ([0-9]+) .*/\1/' <<<"$line")
        skipped=$((skipped + n))
        if [ "$status" = PASSED ] && grep -q "^No tests ran" "$log"; then counted=1; fi
      fi
      # Catch2: "All tests passed (A assertions in N test cases)" or
      # "test cases: T | P passed | F failed".
      if line=$(grep -E "^All tests passed \(.* in [0-9]+ test cases?\)" "$log" | tail -1) &&
          [ -n "$line" ]; then
        n=$(sed -E 's/.* in ([0-9]+) test cases?\)/\1/' <<<"$line")
        passed=$((passed + n)); counted=1
      elif line=$(grep -E "^test cases: +[0-9]+ \|" "$log" | tail -1) && [ -n "$line" ]; then
        p=$(sed -nE 's/.*\| +([0-9]+) passed.*/\1/p' <<<"$line")
        f=$(sed -nE 's/.*\| +([0-9]+) failed.*/\1/p' <<<"$line")
        passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); counted=1
        # A binary that failed yet reports no failed case crashed mid-run.
        if [ "$status" = FAILED ] && [ "${f:-0}" -eq 0 ]; then failed=$((failed + 1)); fi
      elif line=$(grep -E "^[0-9]+ passed, [0-9]+ failed$" "$log" | tail -1) && [ -n "$line" ]; then
        # Script tests print the same closing line as this script.
        p=${line%% passed*}; f=${line#*, }; f=${f%% failed*}
        passed=$((passed + p)); failed=$((failed + f)); counted=1
      fi
    fi
  fi
  if [ "$counted" -eq 0 ]; then
    echo "test: $target: $status with no test case count; counted as 1 failed" >&2
    failed=$((failed + 1))
  fi
done < <(sed -nE 's#^(//[^ ]+) +(\(cached\) +)?(PASSED|FAILED|TIMEOUT|NO STATUS|FLAKY|FAILED TO BUILD|INCOMPLETE).*#\1 \3#p' "$out" |
         sed -E 's/ NO STATUS$/ NO_STATUS/; s/ FAILED TO BUILD$/ FAILED_TO_BUILD/')

# Whether the docs' output block NAME in DOC still has the shape of the
# output in LOG (tools/dev/check_doc_output.py; SELECT: the lines that count).
# Usage: doc_output_matches DOC NAME LOG [SELECT]
doc_output_matches() {
  python3 tools/dev/check_doc_output.py "$@" >&2
}

# A script that is one test case: it passes when it exits 0 (its last line
# is printed) and, with --doc=DOC,NAME,SELECT, the docs' output block NAME
# in DOC still has the shape of the script's lines SELECT matches; when it
# fails, its output without the lines matching OK_PATTERN (its passed
# checks), last TAIL lines.
# Usage: script_case [--doc=DOC,NAME,SELECT] TIMEOUT_SECONDS OK_PATTERN TAIL COMMAND...
script_case() {
  local doc=()
  case $1 in --doc=*) IFS=, read -r -a doc <<<"${1#--doc=}"; shift ;; esac
  local limit=$1 ok_pattern=$2 keep=$3 log
  shift 3
  echo "test: $*"
  log="$(mktemp)"
  if timeout "$limit" "$@" >"$log" 2>&1 &&
      { [ "${#doc[@]}" -eq 0 ] || doc_output_matches "${doc[0]}" "${doc[1]}" "$log" "${doc[2]}"; }; then
    passed=$((passed + 1))
    tail -1 "$log"
  else
    failed=$((failed + 1))
    echo "test: $* failed; its output:" >&2
    grep -vE "$ok_pattern" "$log" | tail -"$keep" >&2
  fi
  rm -f "$log"
}

# What worker_kill_test printed against the run docs/testing.md shows, one
# more case when the test ran and passed in this run.
if grep -qE '^//test/fault:worker_kill_test +(\(cached\) +)?PASSED' "$out"; then
  echo "test: docs/testing.md's kill -9 output against //test/fault:worker_kill_test's"
  if doc_output_matches docs/testing.md worker-kill "$testlogs/test/fault/worker_kill_test/test.log"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
fi

# The documentation against the code, counted as one test case
# (tools/dev/check_docs.sh: links, paths outside the repository, the generated
# flags page, the README's commands against a real rogd on loopback).
if [ "$has_pattern" -eq 0 ]; then
  script_case 600 '^check_docs: ok ' 30 tools/dev/check_docs.sh
fi

# The layers (tools/dev/check_layers.sh: common/ is pure logic and reads no
# files; the product does not use the simulator or the bench harness).
if [ "$has_pattern" -eq 0 ]; then
  script_case 60 '^check_layers: ok ' 10 tools/dev/check_layers.sh
fi

# The C++ formatting (tools/dev/check_format.sh: clang-format --dry-run).
if [ "$has_pattern" -eq 0 ]; then
  script_case 120 '^check_format: ok ' 25 tools/dev/check_format.sh
fi

# No function of the product over 80 lines (tools/dev/check_function_length.py).
if [ "$has_pattern" -eq 0 ]; then
  script_case 60 '^check_function_length: ok ' 30 python3 tools/dev/check_function_length.py
fi

# Every libFuzzer target for a bounded time, one test case each (the
# corpus replays already ran above as plain tests).
if [ "$has_pattern" -eq 0 ] && [ "${ROG_SKIP_FUZZ:-0}" != 1 ]; then
  echo "test: tools/dev/fuzz.sh --seconds=${ROG_FUZZ_SECONDS:-20}"
  fuzzlog="$(mktemp)"
  tools/dev/fuzz.sh --seconds="${ROG_FUZZ_SECONDS:-20}" 2>&1 | tee "$fuzzlog"
  if line=$(grep -E "^[0-9]+ passed, [0-9]+ failed$" "$fuzzlog" | tail -1) && [ -n "$line" ]; then
    p=${line%% passed*}; f=${line#*, }; f=${f%% failed*}
    passed=$((passed + p)); failed=$((failed + f))
  else
    echo "test: tools/dev/fuzz.sh printed no count; counted as 1 failed" >&2
    failed=$((failed + 1))
  fi
  rm -f "$fuzzlog"
fi

# The deployment end to end, counted as one test case: install.sh into a
# temporary prefix, the installed unit through systemd-analyze, consumers
# built outside Bazel against the installed SDK and a live installed rogd.
if [ "$has_pattern" -eq 0 ] && [ "${ROG_SKIP_DEPLOY:-0}" != 1 ]; then
  script_case --doc='docs/testing.md,install-test,^install_test: ' \
    3600 '^install_test: ok ' 40 test/deploy/install_test.sh
fi

# The main job end to end, counted as one test case: its summary table must
# be there and every robot must have finished. Skipped when only some
# targets were asked for.
if [ "$has_pattern" -eq 0 ] && [ "${ROG_SKIP_RUN:-0}" != 1 ]; then
  echo "test: tools/run.sh --quick"
  runlog="$(mktemp)"
  if tools/run.sh --quick >"$runlog" 2>&1 && grep -q '^Summary:' "$runlog" &&
      [ "$(grep -cE '^robot[1-4] +[0-9]+ ' "$runlog")" -eq 4 ] &&
      doc_output_matches docs/benchmarking.md run-quick "$runlog"; then
    passed=$((passed + 1))
    sed -n '/^Summary:/,$p' "$runlog"
  else
    failed=$((failed + 1))
    echo "test: tools/run.sh --quick failed; its output:" >&2
    tail -30 "$runlog" >&2
  fi
  rm -f "$runlog"

  # The benchmark end to end on its tiny profile, one more case: summary.md
  # with a row per policy, the ratios and the simulator, and the three plots.
  echo "test: tools/bench.sh --profile=tiny"
  benchdir="$(mktemp -d)"
  benchlog="$benchdir.log"
  if tools/bench.sh --profile=tiny --out="$benchdir/results" >"$benchlog" 2>&1 &&
      grep -q 'ROG/BSP [0-9.]*×' "$benchdir/results/summary.md" &&
      [ "$(grep -cE '^\| (BSP|SSP\(4\)|ROG\(4\)) \| [0-9.]+ ' "$benchdir/results/summary.md")" -eq 3 ] &&
      grep -q 'invariants .*: hold' "$benchdir/results/summary.md" &&
      [ -s "$benchdir/results/accuracy_time.png" ] &&
      [ -s "$benchdir/results/accuracy_iterations.png" ] &&
      [ -s "$benchdir/results/time_breakdown.png" ]; then
    passed=$((passed + 1))
    grep -E '^(Training throughput|\| )' "$benchdir/results/summary.md"
  else
    failed=$((failed + 1))
    echo "test: tools/bench.sh --profile=tiny failed; its output:" >&2
    tail -30 "$benchlog" >&2
  fi
  rm -rf "$benchdir" "$benchlog"
fi

if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "test: bazel test exited with $rc" >&2
  failed=1
fi
if [ "$skipped" -gt 0 ]; then
  echo "test: $skipped test cases skipped, counted as neither passed nor failed (cases tagged" \
    "[.root] need root; see docs/testing.md)"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$rc" -eq 0 ]
