"""The Python SDK against real rogd processes on loopback: robot processes
(tests/robot.py; the C++ fault_worker beside them) train fault_model's
integer updates, and rogd's model must be exactly what they pushed."""

import os
import signal
import time

import pytest
import torch

import rog
from fault_model import FaultModel, as_rows, expected


def finished(robot, timeout=120):
    assert robot.wait(timeout) == 0, robot.output()[-3000:]
    line = robot.lines("finished ")
    assert line, robot.output()[-3000:]
    return int(line[-1].split()[1])


def release(workdir, robots, others=()):
    """Once every robot in `robots` (started with --barrier) has flushed and
    every process in `others` has ended, lets them sync: their replicas then
    hold every update, so they must equal rogd's model."""
    deadline = time.monotonic() + 120
    for r in robots:
        path = os.path.join(workdir, f"{r.name}.flushed")
        while not os.path.exists(path):
            assert r.proc.poll() is None, r.output()[-3000:]
            assert time.monotonic() < deadline, f"{r.name} did not flush"
            time.sleep(0.02)
    for o in others:
        assert o.wait(120) == 0, o.output()[-3000:]
    open(os.path.join(workdir, "go"), "w").close()


def check_conserved(rogd, counts, workdir=None, robots=(), with_noise=True):
    """rogd holds exactly what robots {marker: iterations} pushed, and each
    Python robot's parameters after its sync (behind release()) are rogd's
    model, rounded to its dtype."""
    model = rogd.export()
    got = as_rows(model)
    want = expected(counts, with_noise)
    assert torch.equal(got, want), f"first difference at {(got != want).nonzero()[:3].tolist()}"
    for robot in robots:
        params = torch.load(os.path.join(workdir, f"{robot.name}.params.pt"))
        for name in ("w", "b"):
            assert torch.equal(params[name], model[name].to(params[name].dtype)), robot.name


@pytest.mark.parametrize("sync", ["bsp", "ssp", "rog"])
def test_a_mixed_team_of_python_and_cpp_robots_conserves_bit_for_bit(cluster, workdir, sync):
    rogd = cluster.rogd(f"--sync={sync}", "--staleness=2", "--workers=3")
    # Whichever says hello first brings the model (zeros, as everyone's);
    # connect() returns once the team of three has formed.
    py1 = cluster.py_robot(rogd, "py1", 0, 25, "--barrier")
    py2 = cluster.py_robot(rogd, "py2", 1, 25, "--compute_ms=2", "--barrier")
    cpp = cluster.cpp_robot(rogd, "cpp", 2, 25, compute_ms=8)
    release(workdir, [py1, py2], [cpp])
    counts = {0: finished(py1), 1: finished(py2), 2: finished(cpp)}
    assert counts[0] == counts[1] == 25
    assert counts[2] >= 20  # its --iterations counts its clock, which may start above 0
    check_conserved(rogd, counts, workdir, [py1, py2])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_each_dtype_conserves_and_loads_the_team_model(cluster, workdir, dtype):
    rogd = cluster.rogd("--sync=ssp", "--staleness=2", "--workers=2")
    # Integer updates of the markers only: float16 and bfloat16 hold their
    # sums exactly (the noise's would not).
    extra = (f"--dtype={dtype}", "--markers_only", "--barrier")
    a = cluster.py_robot(rogd, "a", 0, 20, *extra)
    b = cluster.py_robot(rogd, "b", 1, 20, *extra)
    release(workdir, [a, b])
    counts = {0: finished(a), 1: finished(b)}
    check_conserved(rogd, counts, workdir, [a, b], with_noise=False)


def test_a_non_contiguous_parameter(cluster, workdir):
    rogd = cluster.rogd("--sync=rog", "--staleness=2", "--workers=2")
    a = cluster.py_robot(rogd, "a", 0, 20, "--noncontig", "--barrier")
    b = cluster.py_robot(rogd, "b", 1, 20, "--barrier")
    release(workdir, [a, b])
    counts = {0: finished(a), 1: finished(b)}
    check_conserved(rogd, counts, workdir, [a, b])


def test_finish_after_a_flush_withholds_nothing_and_loads_rogds_model(cluster, workdir):
    # The barrier flushes everything first: finish() then holds nothing to
    # average, so rogd's model is exactly what was pushed, and finish()
    # leaves it in every robot's parameters, as sync() does.
    rogd = cluster.rogd("--sync=rog", "--staleness=2", "--workers=2")
    a = cluster.py_robot(rogd, "a", 0, 20, "--barrier", "--finish")
    b = cluster.py_robot(rogd, "b", 1, 20, "--barrier", "--finish")
    release(workdir, [a, b])
    counts = {0: finished(a), 1: finished(b)}
    check_conserved(rogd, counts, workdir, [a, b])


def test_a_model_other_than_rogds_is_refused_saying_which_tensor(cluster):
    rogd = cluster.rogd("--workers=1")
    a = cluster.py_robot(rogd, "a", 0, 3)
    assert finished(a) == 3
    other = torch.nn.Linear(128, 64)  # "weight", "bias": not rogd's "w", "b"
    with pytest.raises(rog.FailedPrecondition) as e:
        rog.connect(rogd.address, other, worker_id="other", timeout=30)
    assert "registers a model layout" in e.value.message
    assert "differs from the model rogd holds" in e.value.message
    assert "'weight'" in e.value.message or "weight" in e.value.message
    assert e.value.code == 9


def test_rogd_killed_and_restarted_mid_run_loses_nothing(cluster, workdir):
    ckpt = os.path.join(workdir, "ckpt")
    flags = ("--sync=ssp", "--staleness=2", "--workers=2", f"--checkpoint_dir={ckpt}",
             "--checkpoint_interval=1s", "--lease=60s")
    rogd = cluster.rogd(*flags)
    a = cluster.py_robot(rogd, "a", 0, 80, "--compute_ms=40", "--barrier")
    b = cluster.py_robot(rogd, "b", 1, 80, "--compute_ms=40", "--barrier")
    a.wait_for_line("step 30")
    assert rogd.stop(signal.SIGKILL) == -signal.SIGKILL
    time.sleep(0.5)
    rogd.start()  # same port, from its last checkpoint
    release(workdir, [a, b])
    counts = {0: finished(a), 1: finished(b)}
    assert counts == {0: 80, 1: 80}
    check_conserved(rogd, counts, workdir, [a, b])
    # What rogd acknowledged but had not checkpointed came again from the
    # robots' replay buffers, none dropped.
    replayed = [int(r.lines("replayed ")[-1].split()[1]) for r in (a, b)]
    dropped = [int(r.lines("replayed ")[-1].split()[3]) for r in (a, b)]
    assert sum(replayed) > 0 and dropped == [0, 0]


def test_ctrl_c_while_blocked_at_the_bound(cluster, workdir):
    # b connects and never steps: a, one step ahead at most (SSP, S = 1),
    # blocks at the bound in opt.step().
    rogd = cluster.rogd("--sync=ssp", "--staleness=1", "--workers=2", "--lease=60s")
    a = cluster.py_robot(rogd, "a", 0, 1000)
    b_model = FaultModel()
    with rog.connect(rogd.address, b_model, worker_id="b", timeout=30) as b:
        a.wait_for_line("step 1")
        time.sleep(0.5)  # a waits at the bound now
        assert a.lines("step ")[-1] in ("step 1", "step 2")
        sent = time.monotonic()
        a.proc.send_signal(signal.SIGINT)
        line = a.wait_for_line("interrupted ", timeout=10)
        assert float(line.split()[1]) - sent < 0.2, "KeyboardInterrupt came late"
        assert a.wait(10) != 0
        assert "KeyboardInterrupt" in a.output()
        # rogd keeps a's state for its lease; a robot under a's id resumes.
        r = rogd.rogctl("--json", "workers")
        assert r.returncode == 0 and '"a"' in r.stdout
        steps_before = int(a.lines("step ")[-1].split()[1])
        b.abandon()
    a2 = cluster.py_robot(rogd, "a", 5, 3)  # a new process: a rejoin under the same id
    b2 = cluster.py_robot(rogd, "b", 6, 3)
    assert finished(a2) == 3 and finished(b2) == 3
    # The interrupted process's steps are in rogd's model as far as rogd
    # applied them, row by row, none twice and none out of order: at most
    # the steps it printed and the one whose wait was interrupted (its
    # push went before the wait).
    applied = as_rows(rogd.export())[:, 0].to(torch.int64)
    assert int(applied.max()) <= steps_before + 1
    check_conserved(rogd, {0: applied, 5: 3, 6: 3})


def test_a_dataloader_with_worker_processes_after_connect(cluster, workdir):
    rogd = cluster.rogd("--sync=rog", "--staleness=2", "--workers=2")
    a = cluster.py_robot(rogd, "a", 0, 30, "--loader_workers=2", "--barrier")
    b = cluster.py_robot(rogd, "b", 1, 30, "--loader_workers=2", "--barrier")
    release(workdir, [a, b])
    counts = {0: finished(a, 180), 1: finished(b, 180)}
    check_conserved(rogd, counts, workdir, [a, b])


def test_a_forked_child_cannot_use_the_parents_connection(cluster):
    rogd = cluster.rogd("--workers=1")
    model = FaultModel()
    with rog.connect(rogd.address, model, worker_id="a", timeout=30) as team:
        pid = os.fork()
        if pid == 0:  # the child: every call raises, and leaving leaves the parent's alone
            try:
                team.flush()
                os._exit(3)
            except ValueError as e:
                os._exit(0 if "is a fork of it" in str(e) else 4)
            except BaseException:
                os._exit(5)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0
        assert team.connected
        opt = rog.Optimizer(torch.optim.SGD(model.parameters(), lr=0.1), team)
        opt.step()
        assert team.clock == 1
