"""rog_consumer.cc in Python, against the installed rog package (a new
user's five lines: rog.connect, rog.Optimizer, team.sync):

    python3 rog_consumer.py SERVER ID STEP ITERATIONS EXPECT BARRIER_DIR TEAM

Every step adds STEP to every parameter of the same model as the C++
consumers ("w" [8, 256], "b" [4], all 1 at first). After its iterations the
robot flushes, marks BARRIER_DIR/ID, waits for the TEAM's marks, syncs, and
checks that every parameter equals EXPECT. Exit 0 when it does."""

import os
import sys
import time

import torch

import rog


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(8, 256))
        self.b = torch.nn.Parameter(torch.ones(4))


class AddStep(torch.optim.Optimizer):
    """A step that adds STEP to every parameter, whatever the gradients."""

    def __init__(self, params, step):
        super().__init__(params, {"step": step})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                p.add_(group["step"])


def main():
    if len(sys.argv) != 8:
        print(f"usage: {sys.argv[0]} SERVER ID STEP ITERATIONS EXPECT BARRIER_DIR TEAM",
              file=sys.stderr)
        return 2
    server, worker_id, step, iterations, expect, barrier, team_size = sys.argv[1:]
    model = Model()
    with rog.connect(server, model, worker_id=worker_id, timeout=30) as team:
        opt = rog.Optimizer(AddStep(model.parameters(), float(step)), team)
        for _ in range(int(iterations)):
            opt.step(timeout=30)
        team.flush(timeout=30)
        open(os.path.join(barrier, worker_id), "w").close()
        deadline = time.monotonic() + 60
        while len([f for f in os.listdir(barrier) if not f.startswith(".")]) < int(team_size):
            if time.monotonic() > deadline:
                print(f"{worker_id}: the team never flushed", file=sys.stderr)
                return 1
            time.sleep(0.1)
        team.sync(timeout=30)
        values = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        wrong = int((values != float(expect)).sum())
        if wrong:
            print(f"{worker_id}: {wrong} of {values.numel()} parameters differ from {expect} "
                  f"(first: {values[0].item()})", file=sys.stderr)
            return 1
    print(f"{worker_id}: {iterations} iterations, every one of {values.numel()} parameters is "
          f"{float(expect):g} as expected (rog {rog.__version__} from "
          f"{os.path.dirname(rog.__file__)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
