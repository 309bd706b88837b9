#!/usr/bin/env bash
# The benchmark's entry point, where the README, the docs and every kept
# result name it: runs tools/bench/runner.sh with the same arguments
# (tools/bench.sh --help lists them). --study=scale runs the scale study
# instead, tools/scale/scale_study.sh, with the other arguments
# (tools/scale/README.md).
for a in "$@"; do
  if [ "$a" = --study=scale ]; then
    args=()
    for b in "$@"; do [ "$b" = --study=scale ] || args+=("$b"); done
    exec "$(dirname "$0")/scale/scale_study.sh" "${args[@]}"
  fi
done
exec "$(dirname "$0")/bench/runner.sh" "$@"
