#!/usr/bin/env bash
# Run from the repository root at the commit in this folder's name.
set -euo pipefail
d=results/2026-11-29-paper-sign-fast-patience-relay-queue-0103324
tools/bench.sh --profile=paper --codec=sign --timeline=fast --patience=0.5 --out=$d/run | tee $d/run.log
