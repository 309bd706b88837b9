#!/usr/bin/env bash
# The soak (docs/testing.md "The soak"): rogd and 8 worker processes, each behind its own
# relay, for 30 minutes, with random kill -9s of workers and link drops;
# rogd's memory sampled over time; ends with the conservation check and
# what the kills lost. Not part of tools/test.sh.
#
#   tools/dev/soak.sh [--minutes=30] [--workers=8] [--out=DIR] [--seed=N]
#                 [--event_seconds=15] [--link_bytes_per_sec=1e6] [--patience=0.5s]
#
# Writes DIR/rss.csv (rogd's RSS every 5 s), DIR/summary.txt, rogd's and
# every worker process's log; DIR defaults to soak-results/<time>. Exit
# status: 0 when conservation held and every worker finished, 1 if not,
# 2 for bad flags.
set -euo pipefail
cd "$(dirname "$0")/../.."

out="soak-results/$(date +%Y%m%d-%H%M%S)"
args=()
for a in "$@"; do
  case "$a" in
    --out=*) out="${a#--out=}" ;;
    --minutes=*|--workers=*|--seed=*|--event_seconds=*|--link_bytes_per_sec=*|--sample_seconds=*|--lease_seconds=*|--patience=*)
      args+=("$a") ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak.sh: unknown argument $a (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
tools/setup.sh || { echo "soak.sh: tools/setup.sh failed" >&2; exit 1; }
out="$(cd "$out" && pwd)"

bazel build -c opt //server:rogd //test/fault:fault_worker //test/fault:soak
bin="$(bazel info -c opt bazel-bin)"
# The harness finds rogd at $TEST_SRCDIR/$TEST_WORKSPACE/server/rogd and
# writes rogd's log under $TEST_TMPDIR.
export TEST_SRCDIR="$bin" TEST_WORKSPACE=. TEST_TMPDIR="$out"
exec "$bin/test/fault/soak" --worker_binary="$bin/test/fault/fault_worker" --out="$out" \
  "${args[@]+"${args[@]}"}"
