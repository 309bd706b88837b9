#!/usr/bin/env bash
# Run from the repository's root at commit 5977068.
set -euo pipefail
d=results/2026-11-29-transport-constant-links-5977068
common=(--traces=$d/traces --model=convmlp --codec=fp32 --compute_time=0.545s --staleness=4
        --patience=0 --delay=5ms --seed=1 --minutes=1)
tools/bench.sh "${common[@]}" --scale=3.20749 --out=$d/high | tee $d/high.log
tools/bench.sh "${common[@]}" --scale=0.320749 --out=$d/low | tee $d/low.log
bazel build -c opt //tools:sim
for s in 3.20749 0.320749; do
  bazel-bin/tools/sim --model=convmlp --codec=fp32 --compute_seconds=0.545 --seconds=60 \
    --compute_jitter=0 --staleness=4 --traces=$d/traces --trace_filter=outdoors-fast \
    --trace_scale=$s --seed=1 > $d/sim-scale$s.txt
done
