#!/usr/bin/env bash
# The simulator's output at fixed settings and seeds, for refactors that
# must not change behaviour: run it before and after, then diff the two
# folders (byte for byte). Five points: the paper profile's fp32 fast and
# sign replayed quarters, and three regime-map points (C, R, patience):
# (0.05 s, 0.1, off), (0.2 s, 1.5, 0.5 s), (1 s, 4, off). Every run of
# //tools/sim is deterministic for its seed (simulated time only).
#
# Usage: tools/sim/sim_golden.sh OUTDIR     then: diff -r BEFORE AFTER
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:?usage: tools/sim/sim_golden.sh OUTDIR}"
mkdir -p "$out"
bazel build -c opt --color=no --curses=no //tools/sim >/dev/null 2>&1
sim="$(bazel info -c opt bazel-bin 2>/dev/null)/tools/sim/sim"
t=tools/traces

# The paper profile (tools/bench.sh --profile=paper, fixed 2026-11-24).
for q in "fp32 fast" "sign replayed"; do
  read -r codec timeline <<<"$q"
  scale=$("$sim" --model=convmlp --codec="$codec" --traces="$t" --trace_filter=outdoors-fast \
    --compute_seconds=0.545 --solve_trace_scale=0.67 | awk '{ sub(/:$/, "", $2); print $2 }')
  "$sim" --model=convmlp --codec="$codec" --compute_seconds=0.545 --compute_jitter=0 \
    --seconds=180 --staleness=4 --traces="$t" --trace_filter="outdoors-$timeline" \
    --trace_scale="$scale" --trace_time_scale=0.25 --link_delay=0.005 --patience=0 \
    --detach_speedup=0 --seed=1 >"$out/paper-$codec-$timeline.txt" 2>&1
done
# Regime-map points (tools/bench.sh --study=regime).
for p in "0.05 0.1 0" "0.2 1.5 0.5" "1 4 0"; do
  read -r c r pat <<<"$p"
  scale=$("$sim" --model=fmnist --codec=fp32 --traces="$t" --trace_filter=outdoors-fast \
    --compute_seconds="$c" --solve_trace_scale="$(awk -v r="$r" 'BEGIN { print 2 * r }')" |
    awk '{ sub(/:$/, "", $2); print $2 }')
  "$sim" --model=fmnist --codec=fp32 --compute_seconds="$c" --compute_jitter=0 --link_delay=0.005 \
    --seconds=120 --patience="$pat" --staleness=4 --traces="$t" --trace_filter=outdoors-fast \
    --trace_scale="$scale" --seed=1 >"$out/regime-C$c-R$r-p$pat.txt" 2>&1
done
ls "$out"
