#!/usr/bin/env bash
# The benchmark's entry point, where the README, the docs and every kept
# result name it: runs tools/bench/runner.sh with the same arguments
# (tools/bench.sh --help lists them).
exec "$(dirname "$0")/bench/runner.sh" "$@"
