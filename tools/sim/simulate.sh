#!/usr/bin/env bash
# The simulator comparison of ROG (tools/run.sh is the main job).
#
# It runs the deterministic simulator (//tools/sim) on the real robot
# bandwidth traces in tools/traces and compares BSP, SSP and ROG on the
# same workload, in about a minute.
#
# Usage: tools/sim/simulate.sh [--quick] [any //tools/sim flag, e.g. --staleness=3]
set -euo pipefail
cd "$(dirname "$0")/../.."

args=()
seconds=300
for a in "$@"; do
  case "$a" in
    --quick) seconds=60 ;;
    -h|--help)
      sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
      echo
      echo "Simulator flags (bazel run //tools/sim -- --help for all):"
      echo "  --sync=bsp,ssp,rog --staleness=4 --workers=4 --seconds=300 --seed=1"
      echo "  --traces=tools/traces --trace_filter=fast --trace_scale=1 --codec=fp32"
      exit 0 ;;
    *) args+=("$a") ;;
  esac
done

traces=tools/traces
if [ ! -d "$traces" ]; then
  echo "run: $traces not found; run from a complete clone of the repository" >&2
  echo "run: or pass --traces=DIR with *.tsv bandwidth traces" >&2
fi

tools/setup.sh
echo "run: building //tools/sim"
bazel build --color=no --curses=no -c opt //tools/sim 2>&1 | grep -E "^(ERROR|FAIL)" || true
bin="$(bazel info -c opt bazel-bin 2>/dev/null)/tools/sim/sim"
[ -x "$bin" ] || { echo "run: build failed; run 'bazel build //tools/sim' to see why" >&2; exit 1; }
echo "run: simulating ${seconds} s of training under BSP, SSP and ROG"
exec "$bin" --seconds="$seconds" --traces="$traces" ${args[@]+"${args[@]}"}
