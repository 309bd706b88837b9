#!/usr/bin/env bash
# Installs every Debian package ROG needs to build, test and run. Idempotent:
# packages already present are skipped, so a second run only checks.
# Prints one line per step; apt's own output goes to a log file.
set -euo pipefail

PACKAGES=(
  # build
  bazel-bootstrap bazel-bootstrap-source
  protobuf-compiler protobuf-compiler-grpc libgrpc++-dev libprotobuf-dev
  libabsl-dev libspdlog-dev libfmt-dev catch2 libtorch-dev prometheus-cpp-dev
  libssl-dev openssl pkg-config g++
  # the Python SDK (python/, docs/python.md): Debian's CPU torch for Python
  # 3.11, pybind11 and Python's headers for its native module, pytest for
  # its tests. Never pip: Debian's torch says 1.13.0a0, so a pip requirement
  # on torch would fetch a wheel.
  python3 python3-dev python3-torch python3-numpy pybind11-dev python3-pytest
  # fuzzing (tools/dev/fuzz.sh): clang with libFuzzer and its sanitizer runtimes
  clang libclang-rt-14-dev
  # the format check of tools/test.sh (.clang-format)
  clang-format
  # run and test (cmake, strace and systemd's systemd-analyze: the
  # deployment test)
  dataset-fashion-mnist gnuplot-nox curl cmake strace systemd
  # promtool, for the metrics test. On a machine running systemd, Debian's
  # package also enables a Prometheus server on :9090; `systemctl disable
  # --now prometheus` stops it if unwanted.
  prometheus
)

log="${TMPDIR:-/tmp}/rog-setup.log"
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "setup: need root to install: ${missing[*]}" >&2
    echo "setup: run as root or install them with apt-get" >&2
    exit 1
  fi
fi

echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
echo "setup: apt-get update (log: $log)"
if ! $SUDO apt-get update -q >"$log" 2>&1; then
  echo "setup: apt-get update failed; see $log" >&2
  exit 1
fi
echo "setup: apt-get install (log: $log)"
if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
    "${missing[@]}" >>"$log" 2>&1; then
  echo "setup: apt-get install failed; see $log" >&2
  tail -n 20 "$log" >&2
  exit 1
fi
echo "setup: done"
