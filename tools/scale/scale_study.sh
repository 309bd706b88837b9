#!/bin/bash
# The scale study (tools/scale/README.md): how far one rogd goes with the
# team and the model. For each point (team N, model) it starts one rogd on
# loopback (--sync=ssp --staleness=4 --patience=0, a checkpoint folder),
# runs //tools/scale:scale_study against it (N synthetic workers speaking
# the wire protocol, no training, no replica), kills that rogd, and keeps
# the point's JSON. This machine's memcpy, summation and loopback TCP
# figures are measured first, in the same run. Then it writes scale.md,
# the table of every point, and plots (gnuplot, if installed).
#
# The joining worker gives up after 30 s (the point says so).
#
# Usage: tools/scale/scale_study.sh [--out=DIR] [--points="convmlp:4 vit25m:8 ..."]
#        [--seconds=S] [--compute_seconds=C] [--max_state_gib=G]
set -euo pipefail
cd "$(dirname "$0")/../.."

out="" points="" seconds=10 max_state_gib=20 point_timeout=420 compute=0
default_points="convmlp:4 convmlp:8 convmlp:16 convmlp:32 convmlp:64
vit25m:4 vit25m:8 vit25m:16 vit25m:32 vit25m:64
vit100m:4 vit100m:8 vit100m:16 vit100m:32 vit100m:64"
for arg in "$@"; do
  case "$arg" in
    --out=*) out="${arg#*=}" ;;
    --points=*) points="${arg#*=}" ;;
    --seconds=*) seconds="${arg#*=}" ;;
    --max_state_gib=*) max_state_gib="${arg#*=}" ;;
    --compute_seconds=*) compute="${arg#*=}" ;;
    -h|--help)
      sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
      cat <<'HELP'

Flags:
  --out=DIR            folder for points.jsonl, scale.md, the logs and plots
                       (default: results/DATE-scale-COMMIT)
  --points="M:N ..."   the points, model:team (default: convmlp, vit25m and
                       vit100m, each at 4, 8, 16, 32 and 64 workers)
  --seconds=S          the steady phase of each point (default 10)
  --compute_seconds=C  each worker sleeps C s per iteration, standing for its
                       compute (default 0: the team runs as fast as rogd lets it)
  --max_state_gib=G    rogd's --max_state_bytes in GiB (default 20, on a 24 GiB
                       machine): a point that needs more is refused by rogd at
                       the hello that would pass it, and the table says so
A point's checkpoint is asked for only when twice rogd's state, (N+1) x the
model, stays under 8 GB: building the checkpoint copies the state (before
2026-12-04 a checkpoint was one protobuf message, and one over 2 GiB could
not be written).
HELP
      exit 0 ;;
    *) echo "scale_study.sh: unknown flag '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
points="${points:-$default_points}"
commit=$(git rev-parse --short HEAD)
out="${out:-results/$(date -u +%Y-%m-%d)-scale-$commit}"
mkdir -p "$out/logs"

bazel build -c opt //server:rogd //tools/scale:scale_study >&2
rogd=bazel-bin/server/rogd
study=bazel-bin/tools/scale/scale_study

echo "scale_study.sh: baselines (3 repeats, best of each)" >&2
"$study" --baseline --repeats=3 > "$out/baselines.json"
cat "$out/baselines.json" >&2

tmp=$(mktemp -d /tmp/rog-scale.XXXXXX)
rogd_pid=""
cleanup() {
  if [ -n "$rogd_pid" ]; then kill -9 "$rogd_pid" 2>/dev/null || true; wait "$rogd_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

: > "$out/points.jsonl"
for point in $points; do
  model="${point%%:*}" n="${point##*:}"
  bytes=$(case "$model" in convmlp) echo 3186092 ;; vit25m) echo 97259232 ;; vit100m) echo 402973600 ;; esac)
  checkpoint=true
  if [ $(( 2 * (n + 1) * bytes )) -ge 8000000000 ]; then checkpoint=false; fi
  rm -rf "$tmp/ckpt" "$tmp/port"
  "$rogd" --listen=127.0.0.1:0 --port_file="$tmp/port" --workers="$n" --sync=ssp --staleness=4 \
    --patience=0 --checkpoint_dir="$tmp/ckpt" --checkpoint_interval=0 \
    --max_state_bytes=$(( max_state_gib << 30 )) --log_level=warn \
    > "$out/logs/rogd-$model-$n.log" 2>&1 &
  rogd_pid=$!
  for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
  echo "scale_study.sh: $model, $n workers (checkpoint: $checkpoint)" >&2
  line=$(timeout "$point_timeout" "$study" --server="127.0.0.1:$(cat "$tmp/port")" \
    --rogd_pid="$rogd_pid" --workers="$n" --model="$model" --seconds="$seconds" \
    --checkpoint="$checkpoint" --join_timeout=30 --compute_seconds="$compute" 2> "$out/logs/study-$model-$n.log") || true
  if [ -z "$line" ]; then
    line="{\"model\":\"$model\",\"workers\":$n,\"error\":\"no result within ${point_timeout} s\"}"
  fi
  echo "$line" >> "$out/points.jsonl"
  echo "$line" >&2
  kill -9 "$rogd_pid" 2>/dev/null || true
  wait "$rogd_pid" 2>/dev/null || true
  rogd_pid=""
done

python3 tools/scale/scale_report.py "$out" > "$out/scale.md"
echo "scale_study.sh: wrote $out/scale.md" >&2
