#!/usr/bin/env bash
# The Python SDK's cost per step against the C++ LibTorch adapter's, on the
# same model, in one run: each round starts a fresh rogd (one worker, on
# loopback) for the C++ robot (client/examples/step_bench) and another for
# the Python one (python/bench/step_bench.py), in alternating order, and
# times the same loop (begin, every parameter changed by a constant or
# not, end) with no compute. Two cases: ROG with no change (nothing to
# push: the SDK's and the staging's own cost) and BSP with every parameter
# changed (every row pushed each step). Prints each round and, per case,
# the median over rounds of each SDK's median step (wall time) and of its
# CPU time per step (the process, every thread), and of the differences:
# on a shared 2-core machine the CPU time is the steadier figure. And the
# Python robot's median time per step outside the native module's two
# per-step calls: the Python layer's own work, which bounds its cost beyond
# the C++ adapter (whose steps make the same native calls).
#
# Usage: python/bench/step_overhead.sh [--rounds=N] [--steps=N] [--model=convmlp|cnn]
#                                      [--out=DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."

rounds=5 steps=300 model=convmlp out=""
for a in "$@"; do
  case "$a" in
    --rounds=*) rounds="${a#*=}" ;;
    --steps=*) steps="${a#*=}" ;;
    --model=*) model="${a#*=}" ;;
    --out=*) out="${a#*=}" ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "step_overhead: unknown argument '$a' (see --help)" >&2; exit 2 ;;
  esac
done
tools/setup.sh >/dev/null || exit 1
echo "step_overhead: bazel build -c opt (rogd, step_bench, rogpy)"
bazel build -c opt --color=no --curses=no //server:rogd //client/examples:step_bench \
  //python:rogpy >/tmp/rog-step-overhead-build.log 2>&1 ||
  { tail -20 /tmp/rog-step-overhead-build.log >&2; exit 1; }
bin="$(bazel info -c opt bazel-bin 2>/dev/null)"
work="$(mktemp -d)"
rogd_pid=""
trap '[ -n "$rogd_pid" ] && kill -KILL "$rogd_pid" 2>/dev/null; rm -rf "$work"' EXIT

# one SDK POLICY UPDATE: a fresh rogd, one robot of SDK; prints its median ms.
one() {
  local sdk=$1 policy=$2 update=$3 line
  rm -f "$work/port"
  "$bin/server/rogd" --listen=127.0.0.1:0 --port_file="$work/port" --workers=1 \
    --sync="$policy" --patience=0 >"$work/rogd.log" 2>&1 &
  rogd_pid=$!
  for _ in $(seq 200); do [ -s "$work/port" ] && break; sleep 0.05; done
  local server="127.0.0.1:$(cat "$work/port")"
  if [ "$sdk" = cpp ]; then
    line=$("$bin/client/examples/step_bench" --server="$server" --model="$model" \
      --steps="$steps" --update="$update" 2>>"$work/robot.log" | grep '^cpp ')
  else
    line=$("$bin/python/rogpy" python/bench/step_bench.py --server="$server" --model="$model" \
      --steps="$steps" --update="$update" 2>>"$work/robot.log" | grep '^python ')
  fi
  kill -TERM "$rogd_pid" 2>/dev/null; wait "$rogd_pid" 2>/dev/null; rogd_pid=""
  [ -n "$line" ] || { echo "step_overhead: the $sdk robot failed:" >&2; tail -5 "$work/robot.log" >&2; exit 1; }
  sed -nE 's/.* median_ms=([0-9.]+) .* cpu_ms=([0-9.]+)( outside_native_ms=([0-9.]+))?.*/\1 \2 \4/p' <<<"$line"
}

report=""
say() { echo "$*"; report+="$*"$'\n'; }
say "step_overhead: model $model, $steps timed steps per robot, $rounds rounds, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD)"
for case in "rog 0" "bsp 0.001"; do
  read -r policy update <<<"$case"
  cpp=() py=() diff=() ccpu=() pcpu=() dcpu=() outs=()
  say ""
  say "case: --sync=$policy, update $update per parameter per step"
  say "round  cpp_ms  python_ms  python-cpp_ms  cpp_cpu_ms  python_cpu_ms  python-cpp_cpu_ms  python_outside_native_ms"
  for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then c=$(one cpp "$policy" "$update"); p=$(one python "$policy" "$update")
    else p=$(one python "$policy" "$update"); c=$(one cpp "$policy" "$update"); fi
    read -r cw cc <<<"$c"; read -r pw pc po <<<"$p"
    d=$(awk -v p="$pw" -v c="$cw" 'BEGIN { printf "%.4f", p - c }')
    dc=$(awk -v p="$pc" -v c="$cc" 'BEGIN { printf "%.4f", p - c }')
    cpp+=("$cw"); py+=("$pw"); diff+=("$d"); ccpu+=("$cc"); pcpu+=("$pc"); dcpu+=("$dc"); outs+=("$po")
    say "$(printf '%5d  %6.3f  %9.3f  %13.3f  %10.3f  %13.3f  %17.3f  %24.3f' "$r" "$cw" "$pw" "$d" "$cc" "$pc" "$dc" "$po")"
  done
  med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f (%.3f to %.3f)", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
  say "wall, median over rounds (min to max): cpp $(med "${cpp[@]}") ms, python $(med "${py[@]}") ms, python-cpp $(med "${diff[@]}") ms per step"
  say "cpu,  median over rounds (min to max): cpp $(med "${ccpu[@]}") ms, python $(med "${pcpu[@]}") ms, python-cpp $(med "${dcpu[@]}") ms per step"
  say "python outside the native calls, median over rounds (min to max): $(med "${outs[@]}") ms per step"
done
if [ -n "$out" ]; then
  mkdir -p "$out" && printf '%s' "$report" >"$out/step_overhead.txt" && echo "step_overhead: wrote $out/step_overhead.txt"
fi
