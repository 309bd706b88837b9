#!/bin/bash
# The runs of this folder, as they were run (2026-11-28, 14:47-14:48 UTC), from the
# repository's root at 1550955 with `bazel build -c opt //tools:fmnist_sim`; CACHE as in
# ../2026-11-28-fmnist-sim-49b0262/run.sh (the same pretrained models).
CACHE=${CACHE:-/tmp/fsim-cache}
out=$(dirname "$0")
for s in $(seq 1 8); do
  bazel-bin/tools/fmnist_sim --cache_dir="$CACHE" --traces=tools/traces --trace_filter=outdoors-fast \
    --trace_scale=0.0188598 --compute_seconds=0.2 --compute_jitter=0 --seconds=120 \
    --sync=bsp,rog --share_in_background=false --seed=$s > "$out/seed$s.txt" 2>&1
done
