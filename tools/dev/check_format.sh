#!/usr/bin/env bash
# Checks that every tracked C++ source is formatted as .clang-format says
# (Google style, 100 columns); tools/test.sh runs it as one test case.
# Fix a failure with: git ls-files '*.h' '*.cc' | xargs clang-format -i
# Usage: tools/dev/check_format.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
case "${1:-}" in
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  "") ;;
  *) echo "check_format: unknown argument '$1' (see tools/dev/check_format.sh --help)" >&2; exit 2 ;;
esac
if ! command -v clang-format > /dev/null; then
  echo "check_format: FAIL  clang-format is missing; tools/setup.sh installs it" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.h' '*.cc')
if out=$(clang-format --dry-run -Werror "${files[@]}" 2>&1); then
  echo "check_format: ok    ${#files[@]} C++ files formatted as .clang-format says"
else
  echo "$out" | grep -E 'error:' | head -20 >&2
  echo "check_format: FAIL  $(echo "$out" | grep -cE 'error:') places differ from .clang-format;" \
    "run: git ls-files '*.h' '*.cc' | xargs clang-format -i" >&2
  exit 1
fi
