#!/usr/bin/env bash
# The ROG benchmark: the main job's training task (four robots adapting a
# Fashion-MNIST CNN to degraded images, each behind a link replaying one of
# the robot WiFi traces) under BSP, SSP(S) and ROG(S), one after the other,
# with identical traces, seeds, data and compute, then the simulator on the
# same settings. Writes a results folder with summary.md, CSV series and
# PNG plots.
#
# Usage: tools/bench.sh [--profile=quick|full|tiny|paper] [--out=DIR] [--traces=DIR]
#                       [--scale=X] [--staleness=S] [--seed=N] [--target=ACC]
#                       [--minutes=N] [--timeline=fast|replayed] [--patience=SECONDS]
#                       [--detach_speedup=X] [--delay=D] [--links=relay|tc]
#                       [--model=cnn|convmlp] [--compute_time=D] [--codec=C]
#                       [--time_scale=K] [--repeats=N] [--sdk=cpp|python|mixed]
#                       [--rogd_every=SECONDS]
#        tools/bench.sh --study=patience [--patience=SECONDS] [--sweep=S1,S2,...]
#                       [--local_steps=N1,...] [--minutes=N] [other options above]
#   --profile   quick: 120 s of training per policy, within 10 minutes (default)
#               full:  300 s per policy, about 17 minutes
#               tiny:  15 s per policy, for tools/test.sh
#               paper: the paper's operating point, its settings fixed before
#                      any run (see below); 3 repeats x 3 policies x 2 codecs x
#                      2 timelines of 3 minutes, about 2 h 20 min. --codec and
#                      --timeline run a part of it; --repeats=N changes the
#                      repeats; --patience=SECONDS turns team patience on,
#                      the same for every policy (rogd's default: 0.5);
#                      nothing else may be changed
#   The paper profile (fixed 2026-11-24, before any of its runs): all of time
#   scaled by k = 0.25: compute padded to 2.18 s x k = 0.545 s per iteration
#   (a Jetson's 2.18 s, equal on every robot as the paper equalised its
#   devices) and the traces' time axis x k; model convmlp (3.2 MB, 1,568
#   rows); the trace scale computed per codec so that pushing plus pulling the
#   whole model at the traces' time-weighted median rate takes 0.67 x the
#   compute (the paper: 1.47 s of 2.18 s); codecs sign (error feedback) and
#   fp32, the same for every policy; S=4; four robots; team patience off
#   unless --patience (the paper has none); both timelines; 3 repeats, mean and range; 5 ms
#   link delay.
#   --out       results folder (default bench-results/PROFILE-YYYYmmdd-HHMMSS)
#   --traces    folder with outdoors-fast-w1..4.tsv (default tools/traces, the
#               robots' traces kept in the repository)
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
#   --model     cnn (82 KB, default) or convmlp (3.2 MB, 1,568 rows)
#   --compute_time pad each iteration's compute to this, e.g. 2.18s (default 0)
#   --codec     every policy's update codec: fp32 (default), bf16, int8, sign
#   --time_scale multiply the traces' time axis (default 1)
#   --repeats   run the three policies this many times (default 1; paper: 3)
#   --sdk       the robots: cpp (LibTorch, default), python (PyTorch, `import
#               rog`) or mixed (tools/run.sh --sdk); allowed with every
#               profile, since the protocol and the task stay the same
#   --rogd_every also score rogd's model every SECONDS of each run
#               (tools/run.sh --rogd_every: rogd.acc.csv in each run's folder,
#               beside the robots' ID.acc.csv); default 0, off
#   --study=regime    the regime map, its settings fixed 2026-11-24 before any
#               run: the 82 KB cnn, fp32, S=4, four robots, fast timeline,
#               compute C in {0.05, 0.2, 1} s (padded) x R in {0.1, 0.25,
#               0.67, 1.5, 4}, R = the one-way whole-model time at the
#               traces' time-weighted median rate over C (the trace scale
#               follows); every point simulated, and with --measure=line
#               (default) measured in runs of --minutes (default 2) along
#               C = 0.2 s and at the four corners (--measure=all: every
#               point; none: simulated only); team patience off and at
#               rogd's default, for every policy; writes regime.md and
#               regime.png (ROG/SSP and ROG/BSP against R per C)
#   --study=patience  the team patience study: on both timelines, BSP, SSP
#               and ROG without patience and with --patience (default 0.5),
#               ROG with every --sweep value (default 0.25,1,2) and with
#               every --local_steps value (default 4); writes patience.md
#               and one accuracy plot per timeline
#   --study=scale     the scale study: tools/bench.sh hands it and the other
#               arguments to tools/scale/scale_study.sh (its --help)
# Ctrl-C stops everything; no process is left behind.
set -uo pipefail
cd "$(dirname "$0")/../.."

profile=quick out="" scale=1 staleness=4 seed=1 target=-1 minutes="" timeline=fast
patience="" study="" sweep="0.25,1,2" local_steps="4" delay=5ms speedup="" links=relay
model=cnn compute_time=0 codec="" time_scale=1 repeats="" set_by_user=() measure=line sdk=cpp
rogd_every=0
traces=tools/traces
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
    --model=*) model="${a#*=}" ;;
    --compute_time=*) compute_time="${a#*=}" ;;
    --codec=*) codec="${a#*=}" ;;
    --time_scale=*) time_scale="${a#*=}" ;;
    --repeats=*) repeats="${a#*=}" ;;
    --measure=*) measure="${a#*=}" ;;
    --sdk=*) sdk="${a#*=}" ;;
    --rogd_every=*) rogd_every="${a#*=}" ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench: unknown argument '$a' (see tools/bench.sh --help)" >&2; exit 2 ;;
  esac
  # Options a fixed profile or study refuses (see below).
  case "$a" in --scale=*|--staleness=*|--patience=*|--detach_speedup=*|--model=*|--compute_time=*|--time_scale=*|--delay=*|--study=*|--minutes=*|--links=*|--seed=*|--traces=*|--target=*|--timeline=*|--codec=*|--repeats=*)
    set_by_user+=("${a%%=*}") ;;
  esac
done
case "$sdk" in cpp|python|mixed) ;; *) echo "bench: --sdk must be cpp, python or mixed" >&2; exit 2 ;; esac
case "$profile" in
  quick) profile_minutes=2 ;;
  full) profile_minutes=5 ;;
  tiny) profile_minutes=0.25 ;;
  paper) profile_minutes=3 ;;
  *) echo "bench: --profile must be quick, full, tiny or paper" >&2; exit 2 ;;
esac
codecs="${codec:-fp32}" timelines="$timeline"
if [ "$profile" = paper ]; then
  for f in "${set_by_user[@]}"; do
    # Running a part of it (a codec, a timeline, fewer or more repeats) is
    # allowed; changing a setting is not.
    # --patience runs it with the same team patience for every policy (the
    # issue's "patience on" goals); the profile itself has none.
    case "$f" in --codec|--timeline|--repeats|--patience) continue ;; esac
    echo "bench: the paper profile fixes its settings; $f cannot be changed (see --help)" >&2
    exit 2
  done
  case "${codec:-sign}" in sign|fp32) ;; *) echo "bench: the paper profile's codecs are sign and fp32" >&2; exit 2 ;; esac
  # Fixed from the paper before any run (see --help): do not tune.
  paper_k=0.25
  model=convmlp staleness=4 patience="${patience:-0}" speedup=0 delay=5ms time_scale=$paper_k
  compute_time=$(awk -v k="$paper_k" 'BEGIN { printf "%gs", 2.18 * k }')
  paper_ratio=0.67
  codecs="${codec:-sign fp32}"
  timelines=$(printf '%s\n' "$@" | grep -q '^--timeline=' && echo "$timeline" || echo "fast replayed")
  repeats="${repeats:-3}"
fi
if [ "$study" = patience ] && [ -n "$repeats" ]; then
  echo "bench: --study=patience runs each setting once; --repeats is for the profiles" >&2
  exit 2
fi
repeats="${repeats:-1}"
[[ "$repeats" =~ ^[1-9][0-9]?$ ]] || { echo "bench: --repeats must be 1 to 99" >&2; exit 2; }
case "$model" in cnn|convmlp) ;; *) echo "bench: --model must be cnn or convmlp" >&2; exit 2 ;; esac
for c in $codecs; do
  case "$c" in fp32|bf16|int8|sign) ;; *) echo "bench: --codec must be fp32, bf16, int8 or sign" >&2; exit 2 ;; esac
done
[[ "$compute_time" =~ ^(0|[0-9]+(\.[0-9]+)?(ms|s))$ ]] ||
  { echo "bench: --compute_time takes a duration such as 2.18s or 50ms, or 0 (got '$compute_time')" >&2; exit 2; }
awk -v k="$time_scale" 'BEGIN { exit !(k ~ /^[0-9]+(\.[0-9]+)?$/ && k > 0 && k <= 100) }' ||
  { echo "bench: --time_scale takes a factor > 0 and <= 100 (got '$time_scale')" >&2; exit 2; }
[ -n "$minutes" ] || minutes=$profile_minutes
awk -v m="$minutes" 'BEGIN { exit !(m + 0 >= 0.2) }' ||
  { echo "bench: --minutes must be a number, at least 0.2" >&2; exit 2; }
case "$timeline" in fast|replayed) ;; *) echo "bench: --timeline must be fast or replayed" >&2; exit 2 ;; esac
[[ "$delay" =~ ^(0|[0-9]+(\.[0-9]+)?(us|ms|s))$ ]] ||
  { echo "bench: --delay takes a duration such as 5ms, 20ms or 0 (got '$delay')" >&2; exit 2; }
case "$study" in ""|patience|regime) ;; *) echo "bench: --study must be patience, regime or scale (tools/bench.sh)" >&2; exit 2 ;; esac
case "$measure" in line|all|none) ;; *) echo "bench: --measure must be line, all or none" >&2; exit 2 ;; esac
case "$links" in
  relay) links_text="user-space relays, one-way delay $delay each way" ;;
  tc)
    [ "$(id -u)" -eq 0 ] || { echo "bench: --links=tc needs root (network namespaces, qdiscs)" >&2; exit 2; }
    links_text="kernel tbf qdiscs on veth pairs in network namespaces, no added delay"
    ;;
  *) echo "bench: --links must be relay or tc" >&2; exit 2 ;;
esac
# The simulator's --link_delay, seconds: the relays' one-way delay; tc links
# add none.
sim_delay=$(awk -v d="$delay" 'BEGIN { v = d + 0
  if (d ~ /us$/) v /= 1e6; else if (d ~ /ms$/) v /= 1e3
  print v }')
[ "$links" = tc ] && sim_delay=0
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
# Install what is missing (bazel, the libraries, gnuplot), as tools/run.sh does.
tools/setup.sh || { echo "bench: tools/setup.sh failed" >&2; exit 1; }
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
    --scale="${run_scale:-$scale}" --seed="$seed" --delay="$delay" --links="$links" --logs="$dir" \
    --model="$model" --compute_time="$compute_time" --time_scale="$time_scale" --sdk="$sdk" \
    --rogd_every="$rogd_every" "$@" \
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

if [ "$study" = regime ]; then
  for f in "${set_by_user[@]}"; do
    case "$f" in --study|--minutes) continue ;; esac
    echo "bench: the regime study fixes its settings; $f cannot be changed (see --help)" >&2
    exit 2
  done
  [ "$profile" = quick ] || { echo "bench: the regime study takes no --profile (--minutes sets its runs)" >&2; exit 2; }
  # Fixed 2026-11-24 before any run (see --help): do not tune.
  model=cnn sim_model=fmnist staleness=4 timeline=fast codec_r=fp32 delay=5ms time_scale=1
  regime_c="0.05 0.2 1" regime_r="0.1 0.25 0.67 1.5 4"
  # 2 minutes per run unless --minutes says otherwise.
  printf '%s\n' "$@" | grep -q '^--minutes=' || { minutes=2; seconds=120; }
  echo "bench: building rogd, the simulator and the report"
  if ! bazel build --color=no --curses=no -c opt //server:rogd //tools/sim //tools/bench:bench_report \
      > "$out/build.log" 2>&1; then
    tail -20 "$out/build.log" >&2
    echo "bench: build failed (log: $out/build.log)" >&2
    exit 1
  fi
  bin="$(bazel info -c opt bazel-bin 2>/dev/null)"
  # rogd's default patience, for the simulator's "default" column.
  default_patience=$("$bin/server/rogd" --helpfull 2>&1 | tr '\n' ' ' | sed -E 's/.*    --patience \(//' |
    grep -oE 'default: [0-9.]+(ms|s);' | head -1 |
    awk '{ v = $2; sub(/;$/, "", v); if (v ~ /ms$/) print v / 1000; else print v + 0 }')
  [ -n "$default_patience" ] || { echo "bench: cannot read rogd's default --patience" >&2; exit 1; }
  corner() { { [ "$1" = 0.05 ] || [ "$1" = 1 ]; } && { [ "$2" = 0.1 ] || [ "$2" = 4 ]; }; }
  mkdir -p "$out/sim"
  table="$out/regime.tsv"
  printf 'C\tR\tscale\tpatience\tsim_bsp\tsim_ssp\tsim_rog\tbsp\tssp\trog\n' > "$table"
  echo "bench: regime study: C in {$regime_c} s x R in {$regime_r}, patience off and ${default_patience} s; measure=$measure, $seconds s per run; results in $out"
  for C in $regime_c; do
    for R in $regime_r; do
      two_r=$(awk -v r="$R" 'BEGIN { print 2 * r }')
      line="$("$bin/tools/sim/sim" --model="$sim_model" --codec="$codec_r" --traces="$traces" \
        --trace_filter=outdoors-fast --compute_seconds="$C" --solve_trace_scale="$two_r")" ||
        { echo "bench: cannot compute the trace scale: $line" >&2; exit 1; }
      sc=$(awk '{ sub(/:$/, "", $2); print $2 }' <<<"$line")
      for pat in 0 "$default_patience"; do
        tag="C$C-R$R-p$pat"
        # Padded compute takes the same time every iteration: no jitter.
        "$bin/tools/sim/sim" --model="$sim_model" --codec="$codec_r" --compute_seconds="$C" --compute_jitter=0 \
          --link_delay="$sim_delay" \
          --seconds="$seconds" --patience="$pat" --staleness="$staleness" --traces="$traces" \
          --trace_filter=outdoors-fast --trace_scale="$sc" --seed="$seed" > "$out/sim/$tag.txt" 2>&1 ||
          echo "bench: the simulator failed at $tag; see $out/sim/$tag.txt" >&2
        # The first table's it/s per policy.
        sim_ips=$(awk '$1 ~ /^(bsp|ssp|rog)$/ && !seen[$1]++ { v[$1] = $2 }
          END { printf "%s\t%s\t%s", v["bsp"], v["ssp"], v["rog"] }' "$out/sim/$tag.txt")
        measured="-	-	-"
        if [ "$measure" = all ] || { [ "$measure" = line ] && { [ "$C" = 0.2 ] || corner "$C" "$R"; }; }; then
          dir="$out/$tag"
          pargs=(--patience="${pat}s")
          [ "$pat" = 0 ] || pargs=()  # rogd's default
          for policy in bsp ssp rog; do
            run_scale=$sc run_one "$policy at C=$C s, R=$R (scale $sc), patience $pat s" "$dir/$policy" \
              --sync="$policy" --timeline=fast --codec="$codec_r" --compute_time="${C}s" "${pargs[@]}"
          done
          "$bin/tools/bench/bench_report" --results="$dir" --traces="$traces" --scale="$sc" \
            --staleness="$staleness" --adapt_seconds="$seconds" --profile=regime --codec="$codec_r" \
            --command="$command" --trace_prefix="outdoors-fast-w" --cpu="$cpu" --delay="$delay" \
            --links="$links_text" > /dev/null || exit 1
          measured=$(awk -F'\t' '{ v[$1] = $2 } END { printf "%s\t%s\t%s", v["bsp"], v["ssp"], v["rog"] }' \
            "$dir/figures.tsv")
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$C" "$R" "$sc" "$pat" "$sim_ips" "$measured" >> "$table"
      done
    done
  done
  # regime.md: the ratios per point, simulated beside measured, and how far
  # the simulator's iterations/s are from the measured ones.
  awk -F'\t' -v cmd="$command" -v cpu="$cpu" -v secs="$seconds" -v dp="$default_patience" '
    function ratio(a, b) { return (a != "-" && b != "-" && b > 0) ? sprintf("%.2f×", a / b) : "–" }
    function err(s, m) { return (m != "-" && m > 0) ? sprintf("%+.0f%%", 100 * (s - m) / m) : "–" }
    NR == 1 { next }
    {
      rows[++n] = sprintf("| %s | %s | %.4g | %s | %s | %s | %s | %s | %s / %s / %s |",
        $1, $2, $3, $4 == 0 ? "off" : $4 " s", ratio($7, $6), ratio($10, $9), ratio($7, $5),
        ratio($10, $8), err($5, $8), err($6, $9), err($7, $10))
    }
    END {
      print "# The regime map: where ROG wins\n"
      print "Compute C per iteration (padded) against R, the one-way time to move the whole 82 KB model (fp32) at the traces'\'' time-weighted median rate over C; the trace scale follows from R and C. ROG/SSP and ROG/BSP are ratios of iterations per second per robot; the simulator (`//tools/sim`) beside the measured runs where there are any; the last column is the simulator'\''s iterations/s against the measured ones (BSP / SSP / ROG).\n"
      print "| C (s) | R | trace scale | patience | ROG/SSP simulated | ROG/SSP measured | ROG/BSP simulated | ROG/BSP measured | simulator vs measured |"
      print "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
      for (i = 1; i <= n; i++) print rows[i]
      print "\n## Settings\n"
      print "- fixed 2026-11-24 before any run: model cnn (82 KB fp32), codec fp32, S=4, four robots, fast timeline, 5 ms link delay, user-space relays"
      print "- C in {0.05, 0.2, 1} s, R in {0.1, 0.25, 0.67, 1.5, 4}; patience off and rogd'\''s default (" dp " s) for every policy"
      print "- " secs " s per run and per simulation; CPU: " cpu
      print "- command: `" cmd "`"
    }' "$table" > "$out/regime.md"
  # regime.png: ROG/SSP and ROG/BSP against R, one line per C, simulated
  # (lines) and measured (points), one panel per patience setting.
  for C in $regime_c; do
    for pat in 0 "$default_patience"; do
      awk -F'\t' -v c="$C" -v p="$pat" 'NR > 1 && $1 == c && $4 == p {
        m = ($9 != "-" && $9 > 0) ? $10 / $9 : "NaN"; mb = ($8 != "-" && $8 > 0) ? $10 / $8 : "NaN"
        printf "%s %s %s %s %s\n", $2, ($6 > 0 ? $7 / $6 : "NaN"), m, ($5 > 0 ? $7 / $5 : "NaN"), mb }' \
        "$table" > "$out/regime_C${C}_p${pat}.dat"
    done
  done
  {
    echo "set terminal pngcairo size 1200,900 noenhanced"
    echo "set output 'regime.png'"
    echo "set multiplot layout 2,2"
    echo "set logscale x; set grid; set key top left; set xlabel 'R: one-way whole-model time / compute'"
    for pat in 0 "$default_patience"; do
      for k in ssp bsp; do
        col_s=2 col_m=3; [ "$k" = bsp ] && col_s=4 col_m=5
        label=off; [ "$pat" = 0 ] || label="${pat} s"
        echo "set title 'ROG/${k^^}, patience $label'; set ylabel 'ROG/${k^^} (iterations/s)'"
        plot=""
        i=0
        for C in $regime_c; do
          i=$((i + 1))
          plot+="${plot:+, }'regime_C${C}_p${pat}.dat' using 1:$col_s with lines linecolor $i title 'C=$C s simulated', '' using 1:$col_m with points pointtype 7 linecolor $i title 'C=$C s measured'"
        done
        echo "plot $plot"
      done
    done
    echo "unset multiplot"
  } > "$out/regime.gp"
  if command -v gnuplot > /dev/null; then
    (cd "$out" && gnuplot regime.gp) || echo "bench: gnuplot failed; the data files are there" >&2
  fi
  echo
  cat "$out/regime.md"
  echo
  echo "bench: results in $out: regime.md, regime.png, regime.tsv, sim/, one folder per measured point"
  exit 0
fi

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
      --sync="$policy" --timeline="$tl" --patience="${pat}s" --local_steps="$steps" --codec="${codec:-fp32}"
  done
  echo
  echo "bench: building the report"
  if ! bazel build --color=no --curses=no -c opt //tools/bench:bench_report > "$out/build.log" 2>&1; then
    tail -20 "$out/build.log" >&2
    echo "bench: build failed (log: $out/build.log)" >&2
    exit 1
  fi
  bin="$(bazel info -c opt bazel-bin 2>/dev/null)"
  "$bin/tools/bench/bench_report" --study --patience="$p" --results="$out" --traces="$traces" --scale="$scale" \
    --time_scale="$time_scale" --codec="${codec:-fp32}" \
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

echo "bench: building the simulator and the report"
if ! bazel build --color=no --curses=no -c opt //tools/sim //tools/bench:bench_report \
    > "$out/build.log" 2>&1; then
  tail -20 "$out/build.log" >&2
  echo "bench: build failed (log: $out/build.log)" >&2
  exit 1
fi
bin="$(bazel info -c opt bazel-bin 2>/dev/null)"
sim_model=$model; [ "$model" = cnn ] && sim_model=fmnist

# The paper profile's trace scale for codec $1 (one factor for both
# timelines, from the recorded cadence): see --help.
paper_scale() {
  "$bin/tools/sim/sim" --model="$sim_model" --codec="$1" --traces="$traces" \
    --trace_filter=outdoors-fast --compute_seconds="${compute_time%s}" \
    --solve_trace_scale="$paper_ratio"
}

# report GROUP_DIR TIMELINE CODEC SCALE: the simulator on the group's
# settings and its summary.md (over the repeats when there are several).
report() {
  local dir=$1 tl=$2 c=$3 sc=$4
  local runs=("$dir"/*/robot*.iters.csv)
  [ "$repeats" -gt 1 ] && runs=("$dir"/rep*/*/robot*.iters.csv)
  # The simulator with the compute time measured above (records of kind 2
  # are waits, not iterations), and rogd's patience and team pace.
  local compute first_rog sim_patience sim_speedup
  compute=$(awk -F, 'FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $col["kind"] != 2 { s += $col["compute_s"]; n++ }
    END { if (n) printf "%.4f", s / n; else print 0 }' "${runs[@]}")
  first_rog="$dir/rog/rogd.log"; [ "$repeats" -gt 1 ] && first_rog="$dir/rep1/rog/rogd.log"
  sim_patience=$(sed -nE '1,3s/.* patience=([^ ]+) .*/\1/p' "$first_rog" | head -1 |
    awk '/ms$/ { print $0 / 1000; next } /s$/ { print $0 + 0; next } { print 0 }')
  sim_speedup=$(sed -nE '1,3s/.* detach_speedup=([0-9.]+).*/\1/p' "$first_rog" | head -1)
  echo "bench: simulator: $sim_model layout, codec $c, compute $compute s per iteration, $seconds s, patience ${sim_patience:-0} s, detach speedup ${sim_speedup:-off}"
  # Padded compute (--compute_time) takes the same time every iteration.
  local jitter=0.1
  [ "$compute_time" = 0 ] || jitter=0
  "$bin/tools/sim/sim" --model="$sim_model" --codec="$c" --compute_seconds="$compute" --seconds="$seconds" \
    --link_delay="$sim_delay" \
    --compute_jitter="$jitter" \
    --patience="${sim_patience:-0}" --detach_speedup="${sim_speedup:-0}" \
    --staleness="$staleness" --traces="$traces" --trace_filter="outdoors-$tl" \
    --trace_scale="$sc" --trace_time_scale="$time_scale" --seed="$seed" > "$dir/simulator.txt" 2>&1 ||
    echo "bench: the simulator failed; see $dir/simulator.txt" >&2
  local team
  team="$(sed -nE '1,3s/.* (patience=[^ ]+) detached_local_steps=([^ ]+) (detach_speedup=[^ ]+).*/\1 \3 detached_local_steps=\2/p' "$first_rog" | head -1)"
  local common=(--traces="$traces" --scale="$sc" --time_scale="$time_scale" --staleness="$staleness"
    --adapt_seconds="$seconds" --command="$command" --target="$target" --trace_prefix="outdoors-$tl-w"
    --cpu="$cpu" --delay="$delay" --links="$links_text" --team="$team" --codec="$c")
  if [ "$repeats" -eq 1 ]; then
    "$bin/tools/bench/bench_report" --results="$dir" --profile="$profile" --simulator="$dir/simulator.txt" \
      "${common[@]}" || return 1
    if command -v gnuplot > /dev/null; then
      (cd "$dir" && gnuplot plots.gp) || echo "bench: gnuplot failed; the CSV files are there" >&2
    fi
    return 0
  fi
  local r
  for r in $(seq 1 "$repeats"); do
    "$bin/tools/bench/bench_report" --results="$dir/rep$r" --profile="$profile" "${common[@]}" > /dev/null || return 1
    if command -v gnuplot > /dev/null; then (cd "$dir/rep$r" && gnuplot plots.gp); fi
  done
  {
    echo "profile $profile; model $model; compute per iteration padded to $compute_time (--compute_time); traces' time axis x $time_scale"
    [ -n "$scale_note" ] && echo "$scale_note"
    echo "$repeats repeats; in each, BSP, SSP and ROG back to back on the same settings"
  } > "$dir/settings.txt"
  local goals=()
  [ "$profile" = paper ] && goals=(--paper_goals)
  "$bin/tools/bench/bench_report" --repeats --results="$dir" "${goals[@]}" \
    --title="ROG benchmark, $profile profile: codec $c, $tl timeline" \
    --settings_file="$dir/settings.txt" --simulator="$dir/simulator.txt" "${common[@]}" || return 1
  if command -v gnuplot > /dev/null; then
    (cd "$dir" && gnuplot plots.gp) || echo "bench: gnuplot failed; the data files are there" >&2
  fi
}

groups=()
for c in $codecs; do
  for tl in $timelines; do groups+=("$c $tl"); done
done
echo "bench: profile $profile: BSP, SSP($staleness), ROG($staleness), $seconds s each, $repeats repeat(s), codec(s) $codecs, timeline(s) $timelines, model $model, compute $compute_time; results in $out"
for g in "${groups[@]}"; do
  read -r c tl <<<"$g"
  run_scale=$scale scale_note=""
  if [ "$profile" = paper ]; then
    scale_note="$(paper_scale "$c")" || { echo "bench: cannot compute the trace scale: $scale_note" >&2; exit 1; }
    run_scale=$(awk '{ sub(/:$/, "", $2); print $2 }' <<<"$scale_note")
    awk -v s="$run_scale" 'BEGIN { exit !(s ~ /^[0-9.]+(e[-+]?[0-9]+)?$/ && s > 0) }' ||
      { echo "bench: the computed trace scale '$run_scale' is not a number > 0: $scale_note" >&2; exit 1; }
    scale_note="trace scale computed before the runs: $scale_note"
    echo "bench: $scale_note"
  fi
  dir="$out"
  [ "${#groups[@]}" -gt 1 ] || [ "$repeats" -gt 1 ] && dir="$out/$c-$tl"
  for r in $(seq 1 "$repeats"); do
    rdir="$dir"; [ "$repeats" -gt 1 ] && rdir="$dir/rep$r"
    for policy in bsp ssp rog; do
      run_one "$policy ($c, $tl timeline, repeat $r of $repeats)" "$rdir/$policy" --sync="$policy" \
        --timeline="$tl" --codec="$c" "${patience_args[@]}"
    done
  done
  echo
  report "$dir" "$tl" "$c" "$run_scale" || exit 1
done
run_scale=""

# With several groups, summary.md at the top gathers theirs.
if [ "$out" != "$dir" ]; then
  {
    echo "# ROG benchmark, $profile profile"
    echo
    echo "Command: \`$command\`. One section per codec and timeline; each folder holds its runs."
    for g in "${groups[@]}"; do
      read -r c tl <<<"$g"
      echo
      sed '1s/^# /## /; 2,$s/^## /### /' "$out/$c-$tl/summary.md"
    done
  } > "$out/summary.md"
fi
echo
cat "$out/summary.md"
echo
echo "bench: results in $out: summary.md, accuracy.csv, team_*.dat, breakdown.dat, *.png"
