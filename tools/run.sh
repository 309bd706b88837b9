#!/usr/bin/env bash
# The main job of ROG: a team of four robots adapts a Fashion-MNIST model to
# degraded images over real WiFi. It starts rogd and four LibTorch workers on
# loopback, each behind a link that replays one of
# tools/traces/outdoors-fast-wN.tsv (a user-space relay), shows progress
# while it runs and ends with a summary table.
#
# Usage: tools/run.sh [--sync=bsp|ssp|rog] [--staleness=S] [--minutes=N]
#                     [--quick] [--scale=X] [--traces=DIR] [--non_iid] [--seed=N]
#                     [--lr=X] [--logs=DIR] [--timeline=fast|replayed]
#                     [--patience=D] [--local_steps=N]
#                     [--detach_speedup=X] [--delay=D] [--links=relay|tc]
#                     [--model=cnn|convmlp] [--compute_time=D] [--codec=C]
#                     [--time_scale=K] [--sdk=cpp|python|mixed] [--rogd_every=SECONDS]
#   --sync      synchronisation policy (default rog)
#   --staleness the bound S for ssp and rog (default 4)
#   --timeline  fast: the traces' recorded cadence (default); replayed: the
#               paper's replayed timeline, where a link holds a value for
#               10-90 s (outdoors-replayed-wN.tsv)
#   --patience  rogd's --patience (default: rogd's default; 0 = off)
#   --local_steps rogd's --detached_local_steps (default 0)
#   --detach_speedup rogd's --detach_speedup (default: rogd's default; 0 = off)
#   --delay     one-way propagation delay each link adds in each direction
#               (default 5ms; 0 for none; relay links only)
#   --links     relay: user-space relays on loopback (default, no root);
#               tc: kernel tbf qdiscs on veth pairs in network namespaces
#               this script creates and removes (root, iproute2; no delay)
#   --minutes   how long the team adapts (default 4.5, about 5 with startup)
#   --quick     adapt for 60 s (the whole run within 2 minutes once built)
#   --scale     multiply every trace's bandwidth (default 1)
#   --traces    folder with outdoors-fast-w1..4.tsv (default tools/traces, the
#               robots' traces kept in the repository)
#   --non_iid   label-skewed shards instead of IID ones
#   --seed      seed of the data degradation, shards and batches (default 1)
#   --lr        SGD learning rate of every robot (default 0.02)
#   --model     cnn: the 82 KB CNN (default); convmlp: its convolutions under
#               a wide MLP head, 3.2 MB in 1,568 rows
#   --compute_time pad every iteration's compute to this time, e.g. 2.18s
#               for a Jetson-class robot (default 0: no padding); the real
#               compute is still measured and reported apart
#   --codec     rogd's --codec for every update: fp32 (default), bf16, int8
#               or sign (with error feedback)
#   --time_scale multiply the traces' time axis (default 1; 0.2 plays each
#               sample for a fifth of its time, for compute scaled alike)
#   --sdk       the robots' SDK: cpp, LibTorch robots (default,
#               client/examples/fmnist_worker); python, PyTorch robots with
#               `import rog` (python/examples/fmnist_robot.py, same flags and
#               output); mixed, robots 1 and 3 in C++, 2 and 4 in Python
#   --logs      keep logs and the robots' CSV records in DIR (default: a new
#               folder under /tmp)
#   --rogd_every also export rogd's model every SECONDS while the team adapts
#               and score each export after the run, on the robots' test
#               images: rogd.acc.csv (unix_s,accuracy), beside the robots'
#               ID.acc.csv (default 0: off; each export costs rogctl's
#               LibTorch helper about a second of CPU)
# Ctrl-C stops everything; no process is left behind. Logs stay in the
# folder printed at the start.
set -uo pipefail
cd "$(dirname "$0")/.."

sync=rog staleness=4 seconds=270 scale=1 non_iid=() seed=1 lr=0.02 logs= timeline=fast
patience=() local_steps=0 delay=5ms speedup=() links=relay model=cnn compute_time=0 codec=fp32
time_scale=1 sdk=cpp rogd_every=0
traces=tools/traces
for a in "$@"; do
  case "$a" in
    --sync=*) sync="${a#*=}" ;;
    --staleness=*) staleness="${a#*=}" ;;
    --minutes=*) seconds=$(awk -v m="${a#*=}" 'BEGIN { printf "%d", m * 60 }') ;;
    --quick) seconds=60 ;;
    --scale=*) scale="${a#*=}" ;;
    --traces=*) traces="${a#*=}" ;;
    --non_iid) non_iid=(--non_iid) ;;
    --seed=*) seed="${a#*=}" ;;
    --lr=*) lr="${a#*=}" ;;
    --logs=*) logs="${a#*=}" ;;
    --timeline=*) timeline="${a#*=}" ;;
    --patience=*) patience=(--patience="${a#*=}") ;;
    --local_steps=*) local_steps="${a#*=}" ;;
    --detach_speedup=*) speedup=(--detach_speedup="${a#*=}") ;;
    --links=*) links="${a#*=}" ;;
    --delay=*) delay="${a#*=}" ;;
    --model=*) model="${a#*=}" ;;
    --compute_time=*) compute_time="${a#*=}" ;;
    --codec=*) codec="${a#*=}" ;;
    --time_scale=*) time_scale="${a#*=}" ;;
    --sdk=*) sdk="${a#*=}" ;;
    --rogd_every=*) rogd_every="${a#*=}" ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "run: unknown argument '$a' (see tools/run.sh --help)" >&2; exit 2 ;;
  esac
done
case "$sync" in bsp|ssp|rog) ;; *) echo "run: --sync must be bsp, ssp or rog" >&2; exit 2 ;; esac
case "$timeline" in fast|replayed) ;; *) echo "run: --timeline must be fast or replayed" >&2; exit 2 ;; esac
case "$links" in relay|tc) ;; *) echo "run: --links must be relay or tc" >&2; exit 2 ;; esac
case "$model" in cnn|convmlp) ;; *) echo "run: --model must be cnn or convmlp" >&2; exit 2 ;; esac
case "$codec" in fp32|bf16|int8|sign) ;; *) echo "run: --codec must be fp32, bf16, int8 or sign" >&2; exit 2 ;; esac
case "$sdk" in cpp|python|mixed) ;; *) echo "run: --sdk must be cpp, python or mixed" >&2; exit 2 ;; esac
[[ "$compute_time" =~ ^(0|[0-9]+(\.[0-9]+)?(ms|s))$ ]] ||
  { echo "run: --compute_time takes a duration such as 2.18s or 50ms, or 0 (got '$compute_time')" >&2; exit 2; }
awk -v k="$time_scale" 'BEGIN { exit !(k ~ /^[0-9]+(\.[0-9]+)?$/ && k > 0 && k <= 100) }' ||
  { echo "run: --time_scale takes a factor > 0 and <= 100, e.g. 0.2 (got '$time_scale')" >&2; exit 2; }
if [ "$links" = tc ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "run: --links=tc creates network namespaces and kernel qdiscs: run as root, or use the" >&2
    echo "run: default --links=relay (user-space, no root needed)" >&2
    exit 2
  fi
  if ! command -v ip > /dev/null || ! command -v tc > /dev/null; then
    echo "run: --links=tc needs ip and tc (Debian's iproute2)" >&2
    exit 2
  fi
fi
[[ "$local_steps" =~ ^[0-9]+$ ]] || { echo "run: --local_steps must be a whole number" >&2; exit 2; }
awk -v e="$rogd_every" 'BEGIN { exit !(e ~ /^[0-9]+(\.[0-9]+)?$/ && (e == 0 || e >= 1)) }' ||
  { echo "run: --rogd_every takes seconds, at least 1, or 0 for off (got '$rogd_every')" >&2; exit 2; }
[[ "$delay" =~ ^(0|[0-9]+(\.[0-9]+)?(us|ms|s))$ ]] ||
  { echo "run: --delay takes a duration such as 5ms, 20ms or 0 (got '$delay')" >&2; exit 2; }
[ "$seconds" -ge 10 ] 2>/dev/null || { echo "run: --minutes must be at least 0.2" >&2; exit 2; }
for w in 1 2 3 4; do
  if [ ! -f "$traces/outdoors-$timeline-w$w.tsv" ]; then
    echo "run: $traces/outdoors-$timeline-w$w.tsv not found; run from a complete clone of the" >&2
    echo "run: repository, or pass --traces=DIR holding outdoors-$timeline-w1..4.tsv" >&2
    exit 2
  fi
done

tools/setup.sh || exit 1
echo "run: building rogd, trace_relay and fmnist_worker (first time: a few minutes)"
targets=(//server:rogd //tools/links:trace_relay //tools/links:tc_link //tools/rogctl:rogctl //client/examples:fmnist_worker)
[ "$sdk" = cpp ] || targets+=(//python:rogpy)
# In the background, so that a TERM or Ctrl-C during the build stops it at
# once (bash runs traps only between foreground commands).
bazel build --color=no --curses=no -c opt "${targets[@]}" >/tmp/rog-run-build.log 2>&1 &
build=$!
trap 'kill -INT "$build" 2>/dev/null; wait "$build"; echo; echo "run: stopped"; exit 130' INT TERM
if ! wait "$build"; then
  tail -20 /tmp/rog-run-build.log >&2
  echo "run: build failed (full log: /tmp/rog-run-build.log)" >&2
  exit 1
fi
trap - INT TERM
bin="$(bazel info -c opt bazel-bin 2>/dev/null)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rog"
if [ -n "$logs" ]; then
  mkdir -p "$logs" || { echo "run: cannot create --logs=$logs" >&2; exit 2; }
  work="$(cd "$logs" && pwd)"
else
  work="$(mktemp -d /tmp/rog-run.XXXXXX)"
fi
echo "run: logs in $work"

pids=()
# --links=tc: a namespace for rogd and one per robot, named after this
# script's PID so that runs side by side do not meet.
ns="rog$$"
namespaces=()
cleanup() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  sleep 0.5
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  # Deleting a namespace deletes its end of each veth pair, and the pair.
  for n in "${namespaces[@]}"; do ip netns delete "$n" 2>/dev/null; done
}
trap 'echo; echo "run: stopping"; cleanup; exit 130' INT TERM
trap cleanup EXIT

# Wait for a port file, or fail naming the process's log.
port_of() {
  local file=$1 log=$2
  for _ in $(seq 1 200); do
    [ -s "$file" ] && { cat "$file"; return 0; }
    sleep 0.05
  done
  echo "run: no port in $file; see $log" >&2
  tail -5 "$log" >&2
  return 1
}

"$bin/client/examples/fmnist_worker" --pretrain_only --cache_dir="$cache" --seed="$seed" --model="$model" \
  > "$work/pretrain.log" 2>&1 || { cat "$work/pretrain.log" >&2; exit 1; }
sed 's/^/run: /' "$work/pretrain.log"

# in_ns NAMESPACE COMMAND...: runs COMMAND there ("" = here). Started with
# `&`, it execs, so that $! is the command's own PID (cleanup kills it).
in_ns() {
  local n=$1
  shift
  if [ -n "$n" ]; then ip netns exec "$n" "$@"; else "$@"; fi
}
in_ns_exec() {
  local n=$1
  shift
  if [ -n "$n" ]; then exec ip netns exec "$n" "$@"; else exec "$@"; fi
}
srv_ns="" listen=127.0.0.1:0 insecure=()
if [ "$links" = tc ]; then
  # rogd in rogPIDs, robot w in rogPIDrw, linked by a veth pair rogPIDsw
  # (10.77.w.1/30) -- rogPIDrw (10.77.w.2/30), whose packets are single
  # segments (tbf cuts larger GSO packets and drops past its queue, and TCP
  # then sat out timeouts). rogd listens on every address of its own
  # namespace, which holds nothing else: --insecure.
  srv_ns="${ns}s"
  setup_ns() {
    ip netns add "$srv_ns" && namespaces+=("$srv_ns") && ip -n "$srv_ns" link set lo up || return 1
    for w in 1 2 3 4; do
      ip netns add "${ns}r$w" && namespaces+=("${ns}r$w") && ip -n "${ns}r$w" link set lo up &&
        ip link add "${ns}s$w" netns "$srv_ns" type veth peer name "${ns}r$w" netns "${ns}r$w" &&
        ip -n "$srv_ns" addr add "10.77.$w.1/30" dev "${ns}s$w" &&
        ip -n "${ns}r$w" addr add "10.77.$w.2/30" dev "${ns}r$w" &&
        ip -n "$srv_ns" link set "${ns}s$w" up gso_max_segs 1 &&
        ip -n "${ns}r$w" link set "${ns}r$w" up gso_max_segs 1 || return 1
    done
  }
  if ! setup_ns 2> "$work/netns.log"; then
    echo "run: cannot create the network namespaces and veth pairs of --links=tc:" >&2
    cat "$work/netns.log" >&2
    exit 1
  fi
  listen=0.0.0.0:0
  insecure=(--insecure)
  [ "$delay" = 5ms ] || echo "run: --links=tc adds no delay (tbf has none); --delay=$delay is ignored" >&2
  echo "run: links: kernel tbf qdiscs on veth pairs in network namespaces $srv_ns (rogd), ${ns}r1..4 (robots)"
fi

in_ns_exec "$srv_ns" "$bin/server/rogd" --listen="$listen" "${insecure[@]}" --port_file="$work/rogd.port" --sync="$sync" \
  --staleness="$staleness" --workers=4 --lease=60s --checkpoint_dir="$work" --codec="$codec" \
  "${patience[@]}" "${speedup[@]}" --detached_local_steps="$local_steps" \
  > "$work/rogd.log" 2>&1 &
pids+=($!)
rogd_port=$(port_of "$work/rogd.port" "$work/rogd.log") || exit 1
echo "run: rogd on 127.0.0.1:$rogd_port${srv_ns:+ in network namespace $srv_ns}; look inside from another shell with"
if [ -n "$srv_ns" ]; then
  echo "run:   ip netns exec $srv_ns $bin/tools/rogctl/rogctl --server=127.0.0.1:$rogd_port status|workers|staleness"
else
  echo "run:   bazel run //tools/rogctl -- --server=127.0.0.1:$rogd_port status|workers|staleness"
fi

for w in 1 2 3 4; do
  if [ "$links" = tc ]; then
    # Both ends of robot w's veth pair follow its trace: rogd's end is its
    # downlink, the robot's end its uplink.
    "$bin/tools/links/tc_link" --trace="$traces/outdoors-$timeline-w$w.tsv" --scale="$scale" \
      --time_scale="$time_scale" --target="$srv_ns:${ns}s$w" --target="${ns}r$w:${ns}r$w" \
      > "$work/relay$w.log" 2>&1 &
  else
    "$bin/tools/links/trace_relay" --upstream="127.0.0.1:$rogd_port" --listen_port_file="$work/relay$w.port" \
      --trace="$traces/outdoors-$timeline-w$w.tsv" --scale="$scale" --time_scale="$time_scale" \
      --delay="$delay" > "$work/relay$w.log" 2>&1 &
  fi
  pids+=($!)
done
# Which robot brings the model to rogd: the one whose link is fastest at
# the trace's start, launched first (the others wait for its upload and
# join with row digests, downloading nothing). Left to a race, a robot on a
# slow replayed link could spend minutes uploading 3 MB while the team waits.
first=$(for w in 1 2 3 4; do
  awk -v w="$w" '!/^#/ && NF >= 2 { print $2, w; exit }' "$traces/outdoors-$timeline-w$w.tsv"
done | sort -g -r | head -1 | cut -d' ' -f2)
order=("$first")
for w in 1 2 3 4; do [ "$w" = "$first" ] || order+=("$w"); done
workers=()
for w in "${order[@]}"; do
  robot_ns="" server=""
  if [ "$links" = tc ]; then
    robot_ns="${ns}r$w"
    server="10.77.$w.1:$rogd_port"
    for _ in $(seq 1 100); do grep -q "trace time 0" "$work/relay$w.log" && break; sleep 0.05; done
    grep -q "trace time 0" "$work/relay$w.log" ||
      { echo "run: tc_link for robot$w did not start; see $work/relay$w.log" >&2; tail -3 "$work/relay$w.log" >&2; exit 1; }
  else
    port=$(port_of "$work/relay$w.port" "$work/relay$w.log") || exit 1
    server="127.0.0.1:$port"
  fi
  # The robot: the LibTorch one, or the PyTorch one (same flags and output).
  robot=("$bin/client/examples/fmnist_worker")
  if [ "$sdk" = python ] || { [ "$sdk" = mixed ] && [ $((w % 2)) -eq 0 ]; }; then
    robot=("$bin/python/rogpy" python/examples/fmnist_robot.py)
  fi
  in_ns_exec "$robot_ns" "${robot[@]}" --server="$server" --id="robot$w" \
    --shard=$((w - 1)) --shards=4 --seconds="$seconds" --eval_every=10 --seed="$seed" --lr="$lr" \
    --cache_dir="$cache" --csv_dir="$work" --model="$model" --compute_time="$compute_time" \
    "${non_iid[@]}" > "$work/robot$w.log" 2>&1 &
  pids+=($!)
  workers[w]=$!  # by robot number
  if [ "$w" = "$first" ]; then
    for _ in $(seq 1 1200); do
      grep -q "worker robot$w connected from .*it brings the model" "$work/rogd.log" && break
      sleep 0.05
    done
    grep -q "worker robot$w connected from .*it brings the model" "$work/rogd.log" &&
      echo "run: robot$w (the fastest link at the trace's start) brings the model to rogd" ||
      echo "run: robot$w did not say hello within 60 s; starting the others anyway" >&2
  fi
done

shards=IID; [ ${#non_iid[@]} -gt 0 ] && shards=label-skewed
patience_used=$(sed -nE 's/.* patience=([^ ]+) .*/\1/p' "$work/rogd.log" | head -1)
echo "run: sync=$sync S=$staleness patience=${patience_used:-?} lr=$lr seed=$seed, $shards shards, 4 robots on outdoors-$timeline-w1..4 (scale $scale, time x $time_scale), adapting for $seconds s"
echo "run: model $model, codec $codec, compute per iteration padded to $compute_time (0: none), robots: $sdk"
echo "run: every 5 s: elapsed | per robot rN: iterations, degraded-test accuracy (every 10 s), stall share"
# rogd's model over the run (--rogd_every): exported now and then, scored
# after the run (scoring would take CPU from the robots).
exporter=""
if [ "$rogd_every" != 0 ]; then
  mkdir -p "$work/rogd-models"
  (
    trap 'kill $! 2>/dev/null; exit 0' TERM
    while :; do
      sleep "$rogd_every" & wait $!
      t=$(date +%s.%N)
      in_ns "$srv_ns" "$bin/tools/rogctl/rogctl" --server="127.0.0.1:$rogd_port" --timeout=30s \
        export --out="$work/rogd-models/$t.pt" >> "$work/export.log" 2>&1
    done
  ) &
  exporter=$!
  pids+=("$exporter")
fi
start=$(date +%s)
running=4
while [ "$running" -gt 0 ]; do
  sleep 5
  running=0
  for p in "${workers[@]}"; do kill -0 "$p" 2>/dev/null && running=$((running + 1)); done
  line="$(printf '%4ds' $(( $(date +%s) - start )))"
  for w in 1 2 3 4; do
    last=$(grep -E '^progress' "$work/robot$w.log" | tail -1)
    it=$(sed -nE 's/.* steps=([0-9]+).*/\1/p' <<<"$last")
    acc=$(sed -nE 's/.* acc=([0-9.]+).*/\1/p' <<<"$last")
    st=$(sed -nE 's/.* stall=([0-9.]+).*/\1/p' <<<"$last")
    st=$(awk -v s="${st:-}" 'BEGIN { if (s == "") print "-"; else printf "%d%%", s * 100 }')
    line+="$(printf ' | r%d %5s it  acc %6s  stall %4s' "$w" "${it:--}" "${acc:--}" "$st")"
  done
  echo "$line"
done

if [ -n "$exporter" ]; then
  kill -TERM "$exporter" 2>/dev/null
  wait "$exporter" 2>/dev/null
fi
failed=0
for w in 1 2 3 4; do
  wait "${workers[w]}" || { failed=1; echo "run: robot$w failed; see $work/robot$w.log" >&2; tail -3 "$work/robot$w.log" >&2; }
done
# What rogd knew of every robot (detachments, late rows), for the benchmark.
in_ns "$srv_ns" "$bin/tools/rogctl/rogctl" --server="127.0.0.1:$rogd_port" workers --json > "$work/workers.json" 2>/dev/null ||
  rm -f "$work/workers.json"
# The model the team ends with: rogd's once every robot has finished (the
# robots each score their own after their final sync, some before others'
# last updates), exported and scored on the same degraded test images.
team_acc=""
if in_ns "$srv_ns" "$bin/tools/rogctl/rogctl" --server="127.0.0.1:$rogd_port" --timeout=60s \
  export --out="$work/team.pt" > "$work/export.log" 2>&1; then
  team_acc=$("$bin/client/examples/fmnist_worker" --evaluate="$work/team.pt" --model="$model" \
    --seed="$seed" --cache_dir="$cache" 2>>"$work/export.log" | sed -nE 's/^evaluated .* acc=([0-9.]+)$/\1/p')
fi
rm -f "$work/team.pt"
if [ -n "$exporter" ]; then
  models=$(ls "$work/rogd-models"/*.pt 2>/dev/null | paste -sd, -)
  {
    echo "unix_s,accuracy"
    [ -z "$models" ] || "$bin/client/examples/fmnist_worker" --evaluate="$models" --model="$model" \
      --seed="$seed" --cache_dir="$cache" 2>>"$work/export.log" |
      sed -nE 's|^evaluated .*/([0-9.]+)\.pt acc=([0-9.]+)$|\1,\2|p'
  } > "$work/rogd.acc.csv"
  rm -rf "$work/rogd-models"
  echo "run: rogd's model scored at $(($(wc -l < "$work/rogd.acc.csv") - 1)) times during the run: $work/rogd.acc.csv"
fi
if [ -n "$team_acc" ]; then
  echo "$team_acc" > "$work/team.acc"
else
  echo "run: could not export or score rogd's final model; see $work/export.log" >&2
fi
detaches=$(grep -c "detached worker" "$work/rogd.log")
echo
echo "Summary: sync=$sync S=$staleness patience=${patience_used:-?} lr=$lr seed=$seed, $shards shards, $seconds s of adaptation, traces outdoors-$timeline-w1..4 × $scale (time × $time_scale), model $model, codec $codec, compute padded to $compute_time; rogd detached robots $detaches times"
printf '%-8s %10s %7s %10s %11s %9s %7s %8s %8s %10s %11s %9s %8s\n' robot iterations it/s "accuracy" "stall share" detached stalls "MB up" "MB down" "compute ms" "before sync" "finish at" "finish s"
first_finish=$(for w in 1 2 3 4; do grep -E '^final' "$work/robot$w.log" | tail -1 | sed -nE 's/.* finish_unix=([0-9.]+).*/\1/p'; done | sort -n | head -1)
for w in 1 2 3 4; do
  f=$(grep -E '^final' "$work/robot$w.log" | tail -1)
  [ -n "$f" ] || { printf '%-8s %s\n' "robot$w" "(died: see $work/robot$w.log)"; failed=1; continue; }
  val() { sed -nE "s/.* $1=([0-9.]+).*/\\1/p" <<<"$f"; }
  printf '%-8s %10s %7.2f %10s %11s %9s %7s %8s %8s %10s %11s %9s %8s\n' "robot$w" "$(val steps)" \
    "$(awk -v i="$(val steps)" -v t="$(val t)" 'BEGIN { printf "%.2f", i / t }')" \
    "$(val acc)" "$(val stall)" "$(val detached)" "$(val stalls)" "$(val up_mb)" "$(val down_mb)" \
    "$(val real_compute_ms)" "$(val pre_acc)" \
    "$(awk -v f="$(val finish_unix)" -v z="$first_finish" 'BEGIN { if (f == "" || z == "") print "-"; else printf "+%.1f s", f - z }')" \
    "$(val finish_s)"
done
echo "(iterations: computed by the robot; rogd moves a robot's clock past the iterations it skipped while detached)"
echo "(compute ms: real compute per iteration, before any --compute_time padding)"
echo "(accuracy: on degraded test images, each robot after its own final sync; clean model before adapting: $(sed -nE 's/.*clean model: ([0-9.]+)/\1/p' "$work/pretrain.log"))"
echo "(before sync: the robot's replica just before its final sync; finish at: when it called Finish, after the first robot did; finish s: Finish and Close)"
echo "team model: rogd's after every robot finished: ${team_acc:-not scored} (rogctl export, scored on the same degraded test images)"
exit "$failed"
