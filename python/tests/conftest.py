"""What the Python SDK's tests share: real rogd processes on loopback, robot
processes (Python robots, tests/robot.py, and the C++ fault_worker), and
reading rogd's model back (rogctl export). Every process dies with the test
process (PR_SET_PDEATHSIG) and is killed at the end of its test; every wait
is bounded.

The binaries come from Bazel's runfiles under `bazel test` (ROG_RUNFILES,
set by run_pytest.sh) or from bazel-bin when pytest runs by hand."""

import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("ROG_RUNFILES") or os.path.join(HERE, "..", "..", "bazel-bin")
SOURCE_ROOT = os.environ.get("ROG_RUNFILES") or os.path.join(HERE, "..", "..")
PYTHON = os.environ.get("ROG_PYTHON", "/usr/bin/python3")


def binary(path):
    full = os.path.join(ROOT, path)
    if not os.path.exists(full):
        pytest.fail(f"{full} is missing: build it (bazel build //{os.path.dirname(path)}:"
                    f"{os.path.basename(path)}) or run these tests with bazel test //python:sdk_test")
    return full


def _die_with_parent():
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rogd:
    """One rogd process on loopback."""

    def __init__(self, workdir, flags, port=None):
        self.workdir = workdir
        self.flags = list(flags)
        self.port = port or free_port()
        self.proc = None
        self.log_path = os.path.join(workdir, f"rogd-{self.port}.log")
        self.start()

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        port_file = os.path.join(self.workdir, f"rogd-{self.port}.port")
        if os.path.exists(port_file):
            os.remove(port_file)
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [binary("server/rogd"), f"--listen=127.0.0.1:{self.port}", f"--port_file={port_file}",
             "--patience=0"] + self.flags,
            stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 20
        while not os.path.exists(port_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"rogd did not start: {self.log()[-2000:]}")
            time.sleep(0.02)

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def rogctl(self, *args, timeout=30):
        r = subprocess.run([binary("tools/rogctl/rogctl"), f"--server={self.address}"] + list(args),
                           capture_output=True, text=True, timeout=timeout)
        return r

    def export(self):
        """rogd's model: {tensor name: float32 tensor}."""
        out = os.path.join(self.workdir, f"export-{time.monotonic_ns()}.pt")
        r = self.rogctl("export", f"--out={out}")
        assert r.returncode == 0, r.stderr
        return {n: p.detach().clone() for n, p in torch.jit.load(out).named_parameters()}


class Robot:
    """A robot process; its output lines are kept."""

    def __init__(self, args, workdir, name, env=None):
        self.name = name
        self.out_path = os.path.join(workdir, f"{name}.out")
        self._out = open(self.out_path, "w")
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen(args, stdout=self._out, stderr=subprocess.STDOUT,
                                     preexec_fn=_die_with_parent, env=e)

    def wait(self, timeout=120):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"{self.name} did not finish within {timeout} s: {self.output()[-3000:]}")

    def output(self):
        with open(self.out_path) as f:
            return f.read()

    def lines(self, prefix):
        return [l for l in self.output().splitlines() if l.startswith(prefix)]

    def wait_for_line(self, prefix, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.lines(prefix):
                return self.lines(prefix)[-1]
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        pytest.fail(f"{self.name} printed no '{prefix}' line: {self.output()[-3000:]}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def workdir():
    base = os.environ.get("TEST_TMPDIR")
    with tempfile.TemporaryDirectory(dir=base) as d:
        yield d


@pytest.fixture
def cluster(workdir):
    """Starts rogd processes and robots for one test; stops them all after it."""

    class Cluster:
        def __init__(self):
            self.rogds = []
            self.robots = []

        def rogd(self, *flags, port=None):
            r = Rogd(workdir, flags, port)
            self.rogds.append(r)
            return r

        def py_robot(self, rogd_or_address, worker_id, marker, iterations, *extra, env=None):
            address = getattr(rogd_or_address, "address", rogd_or_address)
            args = [PYTHON, os.path.join(HERE, "robot.py"), f"--server={address}",
                    f"--id={worker_id}", f"--marker={marker}", f"--iterations={iterations}",
                    f"--out_dir={workdir}"] + list(extra)
            robot = Robot(args, workdir, worker_id, env=env)
            self.robots.append(robot)
            return robot

        def cpp_robot(self, rogd, worker_id, marker, iterations, compute_ms=5):
            args = [binary("test/fault/fault_worker"), f"--server={rogd.address}",
                    f"--id={worker_id}", f"--marker={marker}", f"--iterations={iterations}",
                    f"--compute_ms={compute_ms}"]
            robot = Robot(args, workdir, worker_id)
            self.robots.append(robot)
            return robot

    c = Cluster()
    yield c
    for robot in c.robots:
        robot.kill()
    for r in c.rogds:
        r.stop(signal.SIGKILL)


def pytest_configure(config):
    sys.path.insert(0, HERE)
