#!/usr/bin/env bash
# Runs Debian's python3 with the rog package of this build on its path: the
# Python files and the native module from Bazel's runfiles, without
# installing anything. For developers and tools/run.sh:
#   bazel run //python:rogpy -- python/examples/fmnist_robot.py --help
#   bazel-bin/python/rogpy script.py ...
# (deploy/install.sh installs the package for good: docs/python.md.)
set -euo pipefail
self="${BASH_SOURCE[0]}"
if [ -n "${RUNFILES_DIR:-}" ]; then runfiles="$RUNFILES_DIR"
elif [ -d "$self.runfiles" ]; then runfiles="$self.runfiles"
else runfiles="$(cd "$(dirname "$self")" && pwd)/$(basename "$self").runfiles"; fi
package="$runfiles/rog/python"
[ -f "$package/rog/_native.so" ] || { echo "rogpy: no rog package under $package" >&2; exit 1; }
# bazel run starts in the runfiles; go back to where the user was.
[ -n "${BUILD_WORKING_DIRECTORY:-}" ] && cd "$BUILD_WORKING_DIRECTORY"
export PYTHONPATH="$package${PYTHONPATH:+:$PYTHONPATH}"
exec /usr/bin/python3 "$@"
