#!/usr/bin/env bash
# The accuracy study: the model each policy leaves, judged by the training
# simulator (//tools/sim:fmnist_sim: rogd's engine core and the SDK's
# protocol on replayed links, every update a real SGD step of the main
# job's model) over paired seeds, at the paper profile's four quarters and
# at the regime map's points. Writes OUT/<point>/seed<N>.txt (the
# simulator's outputs), OUT/summary.md (a row per point: ROG against SSP
# and the best baseline, and issue 58's goal) and OUT/accuracy.md
# (tools/sim/accuracy_table.py:
# per point and policy the accuracy half way and at the end, rogd's model
# after the final sync, the final sync's change and the time to BSP's final
# accuracy; ROG against SSP and BSP paired by seed, with the standard error
# and the sign test). A seed already in OUT is not run again, so an
# interrupted study goes on where it stopped.
#
# The settings are the benchmark's, fixed before any run (tools/bench.sh
# --help): the paper profile (convmlp, S = 4, compute 0.545 s, traces at
# k = 0.25 scaled so that pushing takes 0.67 of a compute, 180 s, patience
# off) for codec fp32 and sign on the fast and replayed timelines; the
# regime map (the main job's CNN, fp32, fast timeline, 120 s, patience off)
# at C in {0.05, 0.2, 1} s x R in {0.1, 0.25, 0.67, 1.5, 4}. Links have a
# 5 ms one-way delay, compute no jitter.
#
# Cost: one simulator process per point and seed, single-threaded; from
# about a minute (C = 1 s) to several (C = 0.05 s, many iterations) each.
# All 19 points x 16 seeds take many hours on 2 cores: choose --points.
#
# Usage: tools/sim/accuracy_study.sh [--out=DIR] [--seeds=N] [--points=P1,P2,...]
#                                    [--jobs=J] [--cache_dir=DIR] [--sim_flags='...']
#   --out        results folder (default: bench-results/accuracy-<time>)
#   --seeds      seeds 1..N per point (default 16: resolves about a point
#                of accuracy where a seed's standard deviation is ~4)
#   --points     paper-fp32-fast, paper-fp32-replayed, paper-sign-fast,
#                paper-sign-replayed, regime-C<C>-R<R> (e.g. regime-C1-R4),
#                or the groups paper and regime (default: paper,regime)
#   --jobs       simulator processes at once (default: the number of cores)
#   --cache_dir  the pretrained models' cache (default ~/.cache/rog, the
#                benchmark's)
#   --sim_flags  more fmnist_sim flags for every run, after the point's
#                (an A/B arm, e.g. --sim_flags=--share_in_background=false);
#                recorded in each point's command.txt. Give each arm its
#                own --out: seeds already there are not run again
set -euo pipefail
cd "$(dirname "$0")/../.."

out="bench-results/accuracy-$(date +%Y%m%d-%H%M%S)" seeds=16 points="paper,regime" jobs=$(nproc)
cache="$HOME/.cache/rog" sim_flags=""
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
for a in "$@"; do
  case "$a" in
    --out=*) out="${a#*=}" ;;
    --seeds=*) seeds="${a#*=}" ;;
    --points=*) points="${a#*=}" ;;
    --jobs=*) jobs="${a#*=}" ;;
    --cache_dir=*) cache="${a#*=}" ;;
    --sim_flags=*) sim_flags="${a#*=}" ;;
    -h|--help) usage; exit 0 ;;
    *) echo "accuracy_study: unknown argument $a (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "accuracy_study: --seeds must be a positive count, not '$seeds'" >&2; exit 2; }
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "accuracy_study: --jobs must be a positive count, not '$jobs'" >&2; exit 2; }

# Fixed 2026-12-04 from the benchmark's profiles, before any run: do not tune.
regime_c="0.05 0.2 1" regime_r="0.1 0.25 0.67 1.5 4"
list=()
for p in ${points//,/ }; do
  case "$p" in
    paper) list+=(paper-fp32-fast paper-fp32-replayed paper-sign-fast paper-sign-replayed) ;;
    regime) for c in $regime_c; do for r in $regime_r; do list+=("regime-C$c-R$r"); done; done ;;
    paper-fp32-fast|paper-fp32-replayed|paper-sign-fast|paper-sign-replayed) list+=("$p") ;;
    regime-C*-R*)
      c=${p#regime-C}; c=${c%%-R*}; r=${p##*-R}
      [[ " $regime_c " == *" $c "* && " $regime_r " == *" $r "* ]] ||
        { echo "accuracy_study: $p is not a regime-map point (C in {$regime_c}, R in {$regime_r})" >&2; exit 2; }
      list+=("$p") ;;
    *) echo "accuracy_study: unknown point '$p' (see --help)" >&2; exit 2 ;;
  esac
done

echo "accuracy_study: building the simulators"
bazel build -c opt --color=no --curses=no //tools/sim:sim //tools/sim:fmnist_sim >/dev/null 2>&1 ||
  { echo "accuracy_study: build failed: run bazel build -c opt //tools/sim:fmnist_sim" >&2; exit 1; }
bin="$(bazel info -c opt bazel-bin 2>/dev/null)/tools/sim"
traces=tools/traces
mkdir -p "$out" "$cache"

# The trace scale at which pushing the model takes RATIO of a compute.
scale_for() {  # scale_for MODEL CODEC COMPUTE RATIO
  "$bin/sim" --model="$1" --codec="$2" --traces="$traces" --trace_filter=outdoors-fast \
    --compute_seconds="$3" --solve_trace_scale="$4" | awk '{ sub(/:$/, "", $2); print $2 }'
}
# The simulator's flags at a point.
point_flags() {
  local p=$1
  case "$p" in
    paper-*)
      local codec=${p#paper-}; codec=${codec%-*}; local timeline=${p##*-}
      echo --model=convmlp --codec="$codec" --compute_seconds=0.545 --seconds=180 \
        --trace_filter="outdoors-$timeline" --trace_time_scale=0.25 --detach_speedup=0 \
        --trace_scale="$(scale_for convmlp "$codec" 0.545 0.67)" ;;
    regime-*)
      local c=${p#regime-C}; c=${c%%-R*}; local r=${p##*-R}
      echo --model=fmnist --codec=fp32 --compute_seconds="$c" --seconds=120 \
        --trace_filter=outdoors-fast \
        --trace_scale="$(scale_for fmnist fp32 "$c" "$(awk -v r="$r" 'BEGIN { print 2 * r }')")" ;;
  esac
}

started=$(date +%s)
echo "accuracy_study: ${#list[@]} points x $seeds seeds, $jobs at once; results in $out"
for p in "${list[@]}"; do
  mkdir -p "$out/$p"
  flags="$(point_flags "$p") $sim_flags"
  echo "$bin/fmnist_sim --cache_dir=CACHE --traces=$traces --staleness=4 --patience=0 --compute_jitter=0 --link_delay=0.005 $flags --seed=N" \
    > "$out/$p/command.txt"
  for s in $(seq 1 "$seeds"); do
    f="$out/$p/seed$s.txt"
    # A seed's file exists only once its run succeeded (written to .tmp,
    # then renamed), whatever policies it ran (an arm may run ROG alone).
    [ -f "$f" ] && continue
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    # shellcheck disable=SC2086
    ( "$bin/fmnist_sim" --cache_dir="$cache" --traces="$traces" --staleness=4 --patience=0 \
        --compute_jitter=0 --link_delay=0.005 $flags --seed="$s" > "$f.tmp" 2>&1 &&
        mv "$f.tmp" "$f" || echo "accuracy_study: $p seed $s failed; see $f.tmp" >&2 ) &
  done
done
wait
echo "accuracy_study: simulated in $(( $(date +%s) - started )) s"
missing=0
for p in "${list[@]}"; do
  for s in $(seq 1 "$seeds"); do [ -f "$out/$p/seed$s.txt" ] || missing=$((missing + 1)); done
done
if [ "$missing" -gt 0 ]; then
  echo "accuracy_study: $missing runs did not finish (their seed<N>.txt.tmp says why); run the" \
    "same command again to retry them, the finished ones are kept" >&2
  exit 1
fi
python3 tools/sim/accuracy_table.py "$out" "${list[@]}" > "$out/accuracy.md"
python3 tools/sim/accuracy_table.py --summary "$out" > "$out/summary.md"
cat "$out/accuracy.md" "$out/summary.md"
echo "accuracy_study: results in $out: accuracy.md, summary.md (a row per point)," \
  "<point>/seed<N>.txt, <point>/command.txt"
