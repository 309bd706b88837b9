#!/usr/bin/env bash
# The Python SDK's tests under `bazel test //python:sdk_test`: pytest (Debian's
# python3-pytest, with Debian's python3-torch: /usr/bin/python3, never pip)
# on the package as it sits in the runfiles, against the rogd, rogctl and
# fault_worker binaries there. Ends with "N passed, M failed", the line
# tools/test.sh counts.
set -uo pipefail
runfiles="${TEST_SRCDIR:-$PWD/..}/${TEST_WORKSPACE:-rog}"
export ROG_RUNFILES="$runfiles"
export PYTHONPATH="$runfiles/python:$runfiles/python/tests"
export PYTHONDONTWRITEBYTECODE=1
log="${TEST_TMPDIR:-/tmp}/pytest.log"
/usr/bin/python3 -m pytest -p no:cacheprovider -q -rfEs "$runfiles/python/tests" "$@" 2>&1 |
  tee "$log"
rc=${PIPESTATUS[0]}
summary=$(grep -E '^=*.* in [0-9.]+s' "$log" | tail -1)
passed=$(grep -oE '[0-9]+ passed' <<<"$summary" | grep -oE '[0-9]+' || echo 0)
failed=$(grep -oE '[0-9]+ (failed|error|errors)' <<<"$summary" | awk '{ n += $1 } END { print n + 0 }')
[ -n "$passed" ] || passed=0
[ -n "$failed" ] || failed=0
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "$passed passed, $failed failed"
exit "$rc"
