#!/usr/bin/env bash
# The ROG benchmark: the main job's training task (four robots adapting a
# Fashion-MNIST CNN to degraded images, each behind a link replaying one of
# the robot WiFi traces) under BSP, SSP(S) and ROG(S), one after the other,
# with identical traces, seeds, data and compute, then the simulator on the
# same settings. Writes a results folder with summary.md, CSV series and
# PNG plots.
#
# Usage: tools/bench.sh [--profile=quick|full|tiny] [--out=DIR] [--traces=DIR]
#                       [--scale=X] [--staleness=S] [--seed=N] [--target=ACC]
#   --profile   quick: 120 s of training per policy, within 10 minutes (default)
#               full:  300 s per policy, about 17 minutes (the README figures)
#               tiny:  15 s per policy, for tools/test.sh
#   --out       results folder (default bench-results/PROFILE-YYYYmmdd-HHMMSS)
#   --traces    folder with outdoors-fast-w1..4.tsv (default ../shared/traces,
#               or the copy in tools/traces when that is absent)
#   --scale     multiply every trace's bandwidth (default 1)
#   --staleness S of SSP and ROG (default 4)
#   --seed      seed of data, shards and batches (default 1)
#   --target    accuracy for "time to target" (default: BSP's final accuracy)
# Ctrl-C stops everything; no process is left behind.
set -uo pipefail
cd "$(dirname "$0")/.."

profile=quick out="" scale=1 staleness=4 seed=1 target=-1
traces=../shared/traces; [ -d "$traces" ] || traces=tools/traces
for a in "$@"; do
  case "$a" in
    --profile=*) profile="${a#*=}" ;;
    --out=*) out="${a#*=}" ;;
    --traces=*) traces="${a#*=}" ;;
    --scale=*) scale="${a#*=}" ;;
    --staleness=*) staleness="${a#*=}" ;;
    --seed=*) seed="${a#*=}" ;;
    --target=*) target="${a#*=}" ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench: unknown argument '$a' (see tools/bench.sh --help)" >&2; exit 2 ;;
  esac
done
case "$profile" in
  quick) minutes=2 ;;
  full) minutes=5 ;;
  tiny) minutes=0.25 ;;
  *) echo "bench: --profile must be quick, full or tiny" >&2; exit 2 ;;
esac
seconds=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 }')
[ -n "$out" ] || out="bench-results/$profile-$(date +%Y%m%d-%H%M%S)"
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  echo "bench: $out exists and is not empty; pick another --out" >&2
  exit 2
fi
mkdir -p "$out" || { echo "bench: cannot create $out" >&2; exit 2; }
out="$(cd "$out" && pwd)"
command="tools/bench.sh $*"

child=""
stop() {
  # run.sh stops its rogd, relays and robots on TERM (Ctrl-C reaches it too).
  [ -n "$child" ] && kill -TERM "$child" 2>/dev/null && wait "$child" 2>/dev/null
  echo; echo "bench: stopped; partial results in $out"; exit 130
}
trap stop INT TERM

echo "bench: profile $profile: BSP, SSP($staleness), ROG($staleness), $seconds s each; results in $out"
for policy in bsp ssp rog; do
  echo
  echo "bench: === $policy ==="
  tools/run.sh --sync="$policy" --staleness="$staleness" --minutes="$minutes" \
    --traces="$traces" --scale="$scale" --seed="$seed" --logs="$out/$policy" \
    > "$out/$policy.out" 2>&1 &
  child=$!
  tail -n +1 --pid="$child" -f "$out/$policy.out" &
  wait "$child"
  rc=$?
  child=""
  wait
  if [ "$rc" -ne 0 ]; then
    echo "bench: the $policy run failed (exit $rc); its logs are in $out/$policy" >&2
    exit 1
  fi
done

echo
echo "bench: building the simulator and the report"
if ! bazel build --color=no --curses=no -c opt //tools:sim //tools:bench_report \
    > "$out/build.log" 2>&1; then
  tail -20 "$out/build.log" >&2
  echo "bench: build failed (log: $out/build.log)" >&2
  exit 1
fi
bin="$(bazel info -c opt bazel-bin 2>/dev/null)"

# The simulator on the same settings, with the compute time measured above.
compute=$(cat "$out"/*/robot*.iters.csv | awk -F, '$1 != "unix_s" { s += $5; n++ }
  END { if (n) printf "%.4f", s / n; else print 0 }')
echo "bench: simulator: fmnist layout, compute $compute s per iteration, $seconds s"
"$bin/tools/sim" --model=fmnist --compute_seconds="$compute" --seconds="$seconds" \
  --staleness="$staleness" --traces="$traces" --trace_filter=outdoors-fast \
  --trace_scale="$scale" --seed="$seed" > "$out/simulator.txt" 2>&1 ||
  echo "bench: the simulator failed; see $out/simulator.txt" >&2

"$bin/tools/bench_report" --results="$out" --traces="$traces" --scale="$scale" \
  --staleness="$staleness" --adapt_seconds="$seconds" --profile="$profile" \
  --command="$command" --target="$target" --simulator="$out/simulator.txt" \
  --cpu="$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), 1 torch thread per robot" ||
  exit 1
if command -v gnuplot > /dev/null; then
  (cd "$out" && gnuplot plots.gp) || echo "bench: gnuplot failed; the CSV files are there" >&2
else
  echo "bench: gnuplot not installed (tools/setup.sh installs it); no PNG plots" >&2
fi
echo
cat "$out/summary.md"
echo
echo "bench: results in $out: summary.md, accuracy.csv, team_*.dat, breakdown.dat, *.png"
