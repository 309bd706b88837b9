#!/usr/bin/env bash
# A/B of two simulator settings over the benchmark's points: the paper
# profile's four quarters (POINTS=paper), the toy point and the regime map's
# points (POINTS=map), or both (the default); POINTS=slow: two points at 5 s
# iterations (the map's C = 1 s, R = 0.67 and 4 with compute x5, 1200 s),
# where rules in seconds and rules in iterations part. One line per point
# and seed:
#   ROG/SSP and ROG/BSP (A -> B), each policy's it/s, ROG's change, ROG's
#   overshoot p99; with PATIENCE, each policy's detached share (A -> B).
# A and B are each one string of extra sim arguments (word-split).
# PATIENCE: team patience in seconds for every policy (default 0: off, as
# the paper profile; 0.5 is rogd's default floor). SEEDS: the seeds
# (default 1). B_SYNC=rog: only ROG runs under B, for a change that acts on
# ROG alone; B's ratios then take A's BSP and SSP.
# Usage, from the repository root:
#   tools/sim/sim_ab.sh SIM "A ARGS" "B ARGS"
#   SEEDS="1 2 3" POINTS=paper B_SYNC=rog tools/sim/sim_ab.sh bazel-bin/tools/sim/sim "" "--push_ahead"
# SIM is the built //tools/sim. The points' settings are those of
# tools/bench.sh --profile=paper and --study=regime (the map's points from
# results/2026-11-24-regime-1b7e48a/regime.tsv).
set -euo pipefail
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
if [ $# -ne 3 ]; then
  echo "usage: tools/sim/sim_ab.sh SIM \"A ARGS\" \"B ARGS\"  (env SEEDS, POINTS, B_SYNC, PATIENCE)" >&2
  exit 2
fi
sim=$1
read -r -a a_args <<<"$2" || true
read -r -a b_args <<<"$3" || true
seeds=${SEEDS:-1}
b_sync=${B_SYNC:-bsp,ssp,rog}
case "$b_sync" in bsp,ssp,rog|rog) ;; *) echo "sim_ab: B_SYNC is bsp,ssp,rog or rog" >&2; exit 2 ;; esac
points=${POINTS:-all}
case "$points" in all|paper|map|slow) ;; *) echo "sim_ab: POINTS is all, paper, map or slow" >&2; exit 2 ;; esac
patience=${PATIENCE:-0}
awk -v p="$patience" 'BEGIN { exit !(p ~ /^[0-9]+(\.[0-9]+)?$/) }' ||
  { echo "sim_ab: PATIENCE is seconds, e.g. 0.5 (0: off); got '$patience'" >&2; exit 2; }
on=$(awk -v p="$patience" 'BEGIN { print (p > 0) ? 1 : 0 }')
regime=results/2026-11-24-regime-1b7e48a/regime.tsv
[ -x "$sim" ] || { echo "sim_ab: $sim is not an executable (build //tools/sim)" >&2; exit 2; }
[ -f "$regime" ] || { echo "sim_ab: run from the repository root ($regime not found)" >&2; exit 2; }

# One run: "bsp_it/s ssp_it/s rog_it/s rog_overshoot_p99_ms bsp_det ssp_det
# rog_det" (a policy that did not run: "-").
run() {
  "$@" 2>&1 | awk '
    ($1 == "bsp" || $1 == "ssp" || $1 == "rog") && NF > 14 && !($1 in v) {
      v[$1] = $2; d[$1] = $13; if ($1 == "rog") p = $12 }
    END { printf "%s %s %s %s %s %s %s", (("bsp" in v) ? v["bsp"] : "-"),
          (("ssp" in v) ? v["ssp"] : "-"), v["rog"], p, (("bsp" in d) ? d["bsp"] : "-"),
          (("ssp" in d) ? d["ssp"] : "-"), d["rog"] }'
}
row() {  # name, then the sim's arguments
  local name=$1; shift
  for s in $seeds; do
    a=$(run "$sim" "$@" --patience="$patience" "${a_args[@]+"${a_args[@]}"}" --seed="$s")
    b=$(run "$sim" "$@" --patience="$patience" "${b_args[@]+"${b_args[@]}"}" --sync="$b_sync" --seed="$s")
    echo "$name $s $a $b" | awk -v on="$on" '{
      # B_SYNC=rog: B takes A'\''s BSP and SSP.
      if ($10 == "-") { $10 = $3; $14 = $7 } if ($11 == "-") { $11 = $4; $15 = $8 }
      printf "%-28s %2s | ROG/SSP %5.2f -> %5.2f | ROG/BSP %5.2f -> %5.2f | it/s bsp %.3f->%.3f ssp %.3f->%.3f rog %.3f->%.3f (%+.1f%%) | rog overshoot p99 ms %s->%s",
        $1, $2, $5/$4, $12/$11, $5/$3, $12/$10, $3, $10, $4, $11, $5, $12, 100 * ($12 / $5 - 1), $6, $13
      if (on) printf " | detached bsp %s->%s ssp %s->%s rog %s->%s", $7, $14, $8, $15, $9, $16
      printf "\n" }'
  done
}
echo "A: ${2:-(defaults)}"
echo "B: ${3:-(defaults)}"
echo "patience: $patience s for every policy (0: off)"
if [ "$points" = slow ]; then
  # The map's C = 1 s points' trace scales divided by 5: the same R.
  for p in "0.67 0.0045038" "4 0.000754394"; do
    read -r R sc <<<"$p"
    row "slow_C=5_R=$R" --model=fmnist --codec=fp32 --compute_seconds=5 --compute_jitter=0 \
      --seconds=1200 --staleness=4 --traces=tools/traces --trace_filter=outdoors-fast \
      --trace_scale="$sc"
  done
  exit 0
fi
[ "$points" = map ] || for q in "sign fast 0.106549 0.5484" "fp32 fast 3.20749 0.5489" \
         "fp32 replayed 3.20749 0.5492" "sign replayed 0.106549 0.5484"; do
  read -r c t sc comp <<<"$q"
  row "paper_$c/$t" --model=convmlp --codec="$c" --compute_seconds="$comp" --seconds=180 \
    --compute_jitter=0 --staleness=4 --traces=tools/traces \
    --trace_filter="outdoors-$t" --trace_scale="$sc" --trace_time_scale=0.25
done
[ "$points" = paper ] && exit 0
row "toy_C=0.0055" --model=fmnist --codec=fp32 --compute_seconds=0.0055 --seconds=300 \
  --staleness=4 --traces=tools/traces --trace_filter=outdoors-fast
# The map's points (each is listed once per patience setting in the file).
tail -n +2 "$regime" | while IFS=$'\t' read -r C R sc pat _; do
  [ "$pat" = 0 ] || continue
  row "regime_C=${C}_R=${R}" --model=fmnist --codec=fp32 --compute_seconds="$C" \
    --compute_jitter=0 --seconds=120 --staleness=4 --traces=tools/traces \
    --trace_filter=outdoors-fast --trace_scale="$sc"
done
