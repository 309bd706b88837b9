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
#                       [--minutes=N] [--timeline=fast|replayed] [--patience=SECONDS]
#                       [--detach_speedup=X] [--delay=D] [--links=relay|tc]
#        tools/bench.sh --study=patience [--patience=SECONDS] [--sweep=S1,S2,...]
#                       [--local_steps=N1,...] [--minutes=N] [other options above]
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
#   --minutes   adaptation per run, overriding the profile's
#   --timeline  fast (default) or replayed (links hold a value 10-90 s)
#   --patience  rogd --patience in seconds (default: rogd's default; 0 = off)
#   --detach_speedup rogd --detach_speedup (default: rogd's default; 0 = off)
#   --delay     one-way delay of every link, each direction (default 5ms; 0)
#   --links     relay: user-space relays (default); tc: kernel tbf qdiscs on
#               veth pairs in network namespaces (root; no delay; see run.sh)
#   --study=patience  the team patience study: on both timelines, BSP, SSP
#               and ROG without patience and with --patience (default 0.5),
#               ROG with every --sweep value (default 0.25,1,2) and with
#               every --local_steps value (default 4); writes patience.md
#               and one accuracy plot per timeline
# Ctrl-C stops everything; no process is left behind.
set -uo pipefail
cd "$(dirname "$0")/.."

profile=quick out="" scale=1 staleness=4 seed=1 target=-1 minutes="" timeline=fast
patience="" study="" sweep="0.25,1,2" local_steps="4" delay=5ms speedup="" links=relay
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
    --minutes=*) minutes="${a#*=}" ;;
    --timeline=*) timeline="${a#*=}" ;;
    --patience=*) patience="${a#*=}" ;;
    --study=*) study="${a#*=}" ;;
    --sweep=*) sweep="${a#*=}" ;;
    --local_steps=*) local_steps="${a#*=}" ;;
    --delay=*) delay="${a#*=}" ;;
    --detach_speedup=*) speedup="${a#*=}" ;;
    --links=*) links="${a#*=}" ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench: unknown argument '$a' (see tools/bench.sh --help)" >&2; exit 2 ;;
  esac
done
case "$profile" in
  quick) profile_minutes=2 ;;
  full) profile_minutes=5 ;;
  tiny) profile_minutes=0.25 ;;
  *) echo "bench: --profile must be quick, full or tiny" >&2; exit 2 ;;
esac
[ -n "$minutes" ] || minutes=$profile_minutes
awk -v m="$minutes" 'BEGIN { exit !(m + 0 >= 0.2) }' ||
  { echo "bench: --minutes must be a number, at least 0.2" >&2; exit 2; }
case "$timeline" in fast|replayed) ;; *) echo "bench: --timeline must be fast or replayed" >&2; exit 2 ;; esac
[[ "$delay" =~ ^(0|[0-9]+(\.[0-9]+)?(us|ms|s))$ ]] ||
  { echo "bench: --delay takes a duration such as 5ms, 20ms or 0 (got '$delay')" >&2; exit 2; }
case "$study" in ""|patience) ;; *) echo "bench: --study must be patience" >&2; exit 2 ;; esac
case "$links" in
  relay) links_text="user-space relays, one-way delay $delay each way" ;;
  tc)
    [ "$(id -u)" -eq 0 ] || { echo "bench: --links=tc needs root (network namespaces, qdiscs)" >&2; exit 2; }
    links_text="kernel tbf qdiscs on veth pairs in network namespaces, no added delay"
    ;;
  *) echo "bench: --links must be relay or tc" >&2; exit 2 ;;
esac
is_seconds() { [[ "$1" =~ ^[0-9]+(\.[0-9]+)?$ ]]; }
for p in $patience ${sweep//,/ }; do
  is_seconds "$p" || { echo "bench: patience values are seconds, e.g. 0.5 (got '$p')" >&2; exit 2; }
done
[ -z "$speedup" ] || [[ "$speedup" =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
  { echo "bench: --detach_speedup takes a factor such as 1.5, or 0 for off (got '$speedup')" >&2; exit 2; }
for l in ${local_steps//,/ }; do
  [[ "$l" =~ ^[0-9]+$ ]] || { echo "bench: --local_steps takes whole numbers (got '$l')" >&2; exit 2; }
done
seconds=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 }')
[ -n "$out" ] || out="bench-results/${study:-$profile}-$(date +%Y%m%d-%H%M%S)"
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

# One run of the main job: run_one NAME DIR ARGS... (logs in DIR).
run_one() {
  local name=$1 dir=$2
  shift 2
  echo
  echo "bench: === $name ==="
  mkdir -p "$(dirname "$dir")"
  tools/run.sh --staleness="$staleness" --minutes="$minutes" --traces="$traces" \
    --scale="$scale" --seed="$seed" --delay="$delay" --links="$links" --logs="$dir" "$@" \
    > "$dir.out" 2>&1 &
  child=$!
  tail -n +1 --pid="$child" -f "$dir.out" &
  wait "$child"
  local rc=$?
  child=""
  wait
  if [ "$rc" -ne 0 ]; then
    echo "bench: the $name run failed (exit $rc); its logs are in $dir" >&2
    exit 1
  fi
}

cpu="$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), 1 torch thread per robot"

if [ "$study" = patience ]; then
  p=${patience:-0.5}
  runs=()
  for tl in fast replayed; do
    for policy in bsp ssp rog; do runs+=("$tl $policy 0 0") ; done
    for policy in bsp ssp rog; do runs+=("$tl $policy $p 0"); done
    for sp in ${sweep//,/ }; do [ "$sp" = "$p" ] || runs+=("$tl rog $sp 0"); done
    for l in ${local_steps//,/ }; do [ "$l" = 0 ] || runs+=("$tl rog $p $l"); done
  done
  echo "bench: patience study: ${#runs[@]} runs of $seconds s (patience $p s; sweep $sweep; local steps $local_steps); results in $out"
  for r in "${runs[@]}"; do
    read -r tl policy pat steps <<<"$r"
    dir="$out/$tl/$policy-p$pat"
    [ "$steps" = 0 ] || dir="$dir-l$steps"
    run_one "$tl timeline, $policy, patience $pat s, local steps $steps" "$dir" \
      --sync="$policy" --timeline="$tl" --patience="${pat}s" --local_steps="$steps"
  done
  echo
  echo "bench: building the report"
  if ! bazel build --color=no --curses=no -c opt //tools:bench_report > "$out/build.log" 2>&1; then
    tail -20 "$out/build.log" >&2
    echo "bench: build failed (log: $out/build.log)" >&2
    exit 1
  fi
  bin="$(bazel info -c opt bazel-bin 2>/dev/null)"
  "$bin/tools/bench_report" --study --patience="$p" --results="$out" --traces="$traces" --scale="$scale" \
    --staleness="$staleness" --adapt_seconds="$seconds" --command="$command" --cpu="$cpu" \
    --delay="$delay" --links="$links_text" ||
    exit 1
  if command -v gnuplot > /dev/null; then
    (cd "$out" && gnuplot plots.gp) || echo "bench: gnuplot failed; the data files are there" >&2
  fi
  echo
  cat "$out/patience.md"
  echo
  echo "bench: results in $out: patience.md, team_*.dat, patience_*.png"
  exit 0
fi

patience_args=()
[ -n "$patience" ] && patience_args=(--patience="${patience}s")
[ -n "$speedup" ] && patience_args+=(--detach_speedup="$speedup")
echo "bench: profile $profile: BSP, SSP($staleness), ROG($staleness), $seconds s each, $timeline timeline; results in $out"
for policy in bsp ssp rog; do
  run_one "$policy" "$out/$policy" --sync="$policy" --timeline="$timeline" "${patience_args[@]}"
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
# (Records of kind 2 are waits, not iterations.)
compute=$(awk -F, 'FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  $col["kind"] != 2 { s += $col["compute_s"]; n++ }
  END { if (n) printf "%.4f", s / n; else print 0 }' "$out"/*/robot*.iters.csv)
# The patience rogd ran with ("patience=500ms" in its first line; "off").
sim_patience=$(sed -nE '1,3s/.* patience=([^ ]+) .*/\1/p' "$out/rog/rogd.log" | head -1 |
  awk '/ms$/ { print $0 / 1000; next } /s$/ { print $0 + 0; next } { print 0 }')
# And its team pace ("detach_speedup=1.25"; "off").
sim_speedup=$(sed -nE '1,3s/.* detach_speedup=([0-9.]+).*/\1/p' "$out/rog/rogd.log" | head -1)
echo "bench: simulator: fmnist layout, compute $compute s per iteration, $seconds s, patience ${sim_patience:-0} s, detach speedup ${sim_speedup:-off}"
"$bin/tools/sim" --model=fmnist --compute_seconds="$compute" --seconds="$seconds" \
  --patience="${sim_patience:-0}" --detach_speedup="${sim_speedup:-0}" \
  --staleness="$staleness" --traces="$traces" --trace_filter="outdoors-$timeline" \
  --trace_scale="$scale" --seed="$seed" > "$out/simulator.txt" 2>&1 ||
  echo "bench: the simulator failed; see $out/simulator.txt" >&2

"$bin/tools/bench_report" --results="$out" --traces="$traces" --scale="$scale" \
  --staleness="$staleness" --adapt_seconds="$seconds" --profile="$profile" \
  --command="$command" --target="$target" --simulator="$out/simulator.txt" \
  --trace_prefix="outdoors-$timeline-w" --cpu="$cpu" --delay="$delay" --links="$links_text" \
  --team="$(sed -nE '1,3s/.* (patience=[^ ]+) detached_local_steps=([^ ]+) (detach_speedup=[^ ]+).*/\1 \3 detached_local_steps=\2/p' "$out/rog/rogd.log" | head -1)" ||
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
