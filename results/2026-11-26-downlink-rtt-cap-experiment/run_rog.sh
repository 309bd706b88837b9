#!/usr/bin/env bash
# One ROG leg of the paper fp32/fast quarter, with rogctl workers --json polled every 0.5 s.
# Usage: [ROOT=WORK_TREE] run_rog.sh DIR [extra run.sh args] (ROOT: this repository by default)
set -u
dir=$1; shift
cd "${ROOT:-$(dirname "$0")/../..}"
mkdir -p "$dir"
tools/run.sh --sync=rog --staleness=4 --minutes=3 --traces=tools/traces --scale=3.20749 --seed=1 \
  --delay=5ms --links=relay --logs="$dir/rog" --model=convmlp --compute_time=0.545s --time_scale=0.25 \
  --codec=fp32 --patience=0 --timeline=fast "$@" > "$dir/rog.out" 2>&1 &
child=$!
while [ ! -s "$dir/rog/rogd.port" ] && kill -0 $child 2>/dev/null; do sleep 0.5; done
port=$(cat "$dir/rog/rogd.port")
while kill -0 $child 2>/dev/null; do
  t=$(date +%s.%N)
  j=$(bazel-bin/tools/rogctl --server=127.0.0.1:$port --json --timeout=1s workers 2>/dev/null)
  [ -n "$j" ] && echo "$t $j" >> "$dir/workers.jsonl"
  sleep 0.5
done
wait $child
echo "rc=$?"
