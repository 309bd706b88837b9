"""The Python SDK's cost per step with no compute: client/examples/
step_bench.cc's loop through `import rog` (rog.connect, rog.Optimizer whose
wrapped step only adds --update to every parameter), against a rogd on
loopback. python/bench/step_overhead.sh runs both in one run.

Output: one line, "python steps=N median_ms=X mean_ms=Y p90_ms=Z cpu_ms=C
outside_native_ms=O", C the process's CPU time (every thread) per timed
step, O the median time per step spent outside the native module's
begin_iteration and end_iteration: the Python layer's own work (the
interpreter, the staging's torch operations, the stats), which bounds what
it costs beyond the C++ adapter, whose steps make the same native calls."""

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import fmnist_task  # noqa: E402
import rog  # noqa: E402


class Timed:
    """The native worker, with the time spent in its two per-step calls."""

    def __init__(self, worker):
        self._worker = worker
        self.native = 0.0

    def begin_iteration(self, *args):
        t0 = time.perf_counter()
        try:
            return self._worker.begin_iteration(*args)
        finally:
            self.native += time.perf_counter() - t0

    def end_iteration(self, *args):
        t0 = time.perf_counter()
        try:
            return self._worker.end_iteration(*args)
        finally:
            self.native += time.perf_counter() - t0

    def __getattr__(self, name):
        return getattr(self._worker, name)


class Add(torch.optim.Optimizer):
    def __init__(self, params, value):
        super().__init__(params, {"value": value})

    @torch.no_grad()
    def step(self, closure=None):
        if self.defaults["value"] != 0:
            for group in self.param_groups:
                for p in group["params"]:
                    p.add_(group["value"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", default="127.0.0.1:7070")
    p.add_argument("--id", default="bench")
    p.add_argument("--model", default="convmlp", choices=["cnn", "convmlp"])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--update", type=float, default=0.0)
    a = p.parse_args()
    torch.set_num_threads(1)
    net = fmnist_task.Net(a.model == "convmlp")
    ms, outside = [], []
    with rog.connect(a.server, net, worker_id=a.id, timeout=60) as team:
        timed = Timed(team._worker)  # pylint: disable=protected-access
        team._worker = timed  # pylint: disable=protected-access
        opt = rog.Optimizer(Add(net.parameters(), a.update), team)
        for i in range(a.warmup + a.steps):
            if i == a.warmup:
                cpu0 = time.process_time()
            timed.native = 0.0
            t0 = time.perf_counter()
            opt.step(timeout=60)
            t = time.perf_counter() - t0
            if i >= a.warmup:
                ms.append(t * 1e3)
                outside.append((t - timed.native) * 1e3)
        cpu_ms = (time.process_time() - cpu0) * 1e3 / a.steps
    ms_sorted = sorted(ms)
    print(f"python steps={a.steps} median_ms={ms_sorted[len(ms) // 2]:.4f} "
          f"mean_ms={statistics.fmean(ms):.4f} p90_ms={ms_sorted[len(ms) * 9 // 10]:.4f} "
          f"cpu_ms={cpu_ms:.4f} outside_native_ms={statistics.median(outside):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
