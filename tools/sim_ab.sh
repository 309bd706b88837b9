#!/usr/bin/env bash
# A/B of two simulator settings over the benchmark's points: the paper
# profile's four quarters (POINTS=paper), the toy point and the regime map's
# patience-off points (POINTS=map), or all (the default); patience off, one
# line per point and seed:
#   ROG/SSP and ROG/BSP (A -> B), each policy's it/s, ROG's change, ROG's
#   overshoot p99.
# A and B are each one string of extra tools/sim arguments (word-split).
# SEEDS: the seeds (default 1). B_SYNC=rog: only ROG runs under B, for a
# change that acts on ROG alone; B's ratios then take A's BSP and SSP.
# Usage, from the repository root:
#   tools/sim_ab.sh SIM "A ARGS" "B ARGS"
#   SEEDS="1 2 3" POINTS=paper B_SYNC=rog tools/sim_ab.sh bazel-bin/tools/sim "" "--push_ahead"
# SIM is the built //tools:sim. The points' settings are those of
# tools/bench.sh --profile=paper and --study=regime (the map's points from
# results/2026-11-24-regime-1b7e48a/regime.tsv).
set -euo pipefail
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
if [ $# -ne 3 ]; then
  echo "usage: tools/sim_ab.sh SIM \"A ARGS\" \"B ARGS\"  (env SEEDS, POINTS, B_SYNC)" >&2
  exit 2
fi
sim=$1
read -r -a a_args <<<"$2" || true
read -r -a b_args <<<"$3" || true
seeds=${SEEDS:-1}
b_sync=${B_SYNC:-bsp,ssp,rog}
case "$b_sync" in bsp,ssp,rog|rog) ;; *) echo "sim_ab: B_SYNC is bsp,ssp,rog or rog" >&2; exit 2 ;; esac
points=${POINTS:-all}
case "$points" in all|paper|map) ;; *) echo "sim_ab: POINTS is all, paper or map" >&2; exit 2 ;; esac
regime=results/2026-11-24-regime-1b7e48a/regime.tsv
[ -x "$sim" ] || { echo "sim_ab: $sim is not an executable (build //tools:sim)" >&2; exit 2; }
[ -f "$regime" ] || { echo "sim_ab: run from the repository root ($regime not found)" >&2; exit 2; }

# One run: "bsp_it/s ssp_it/s rog_it/s rog_overshoot_p99_ms"
run() {
  "$@" 2>&1 | awk '
    ($1 == "bsp" || $1 == "ssp" || $1 == "rog") && !($1 in v) { v[$1] = $2; if ($1 == "rog") p = $12 }
    END { printf "%s %s %s %s", v["bsp"], v["ssp"], v["rog"], p }'
}
row() {  # name, then the sim's arguments
  local name=$1; shift
  for s in $seeds; do
    a=$(run "$sim" "$@" "${a_args[@]+"${a_args[@]}"}" --seed="$s")
    b=$(run "$sim" "$@" "${b_args[@]+"${b_args[@]}"}" --sync="$b_sync" --seed="$s")
    echo "$name $s $a $b" | awk 'NF == 8 { $10 = $8; $9 = $7; $7 = $3; $8 = $4 } {
      printf "%-28s %2s | ROG/SSP %5.2f -> %5.2f | ROG/BSP %5.2f -> %5.2f | it/s bsp %.3f->%.3f ssp %.3f->%.3f rog %.3f->%.3f (%+.1f%%) | rog overshoot p99 ms %s->%s\n",
        $1, $2, $5/$4, $9/$8, $5/$3, $9/$7, $3, $7, $4, $8, $5, $9, 100 * ($9 / $5 - 1), $6, $10 }'
  done
}
echo "A: ${2:-(defaults)}"
echo "B: ${3:-(defaults)}"
[ "$points" = map ] || for q in "sign fast 0.106549 0.5484" "fp32 fast 3.20749 0.5489" \
         "fp32 replayed 3.20749 0.5492" "sign replayed 0.106549 0.5484"; do
  read -r c t sc comp <<<"$q"
  row "paper_$c/$t" --model=convmlp --codec="$c" --compute_seconds="$comp" --seconds=180 \
    --compute_jitter=0 --patience=0 --staleness=4 --traces=tools/traces \
    --trace_filter="outdoors-$t" --trace_scale="$sc" --trace_time_scale=0.25
done
[ "$points" = paper ] && exit 0
row "toy_C=0.0055" --model=fmnist --codec=fp32 --compute_seconds=0.0055 --seconds=300 \
  --patience=0 --staleness=4 --traces=tools/traces --trace_filter=outdoors-fast
tail -n +2 "$regime" | while IFS=$'\t' read -r C R sc pat _; do
  [ "$pat" = 0 ] || continue
  row "regime_C=${C}_R=${R}" --model=fmnist --codec=fp32 --compute_seconds="$C" \
    --compute_jitter=0 --seconds=120 --patience=0 --staleness=4 --traces=tools/traces \
    --trace_filter=outdoors-fast --trace_scale="$sc"
done
