"""A Python robot for the SDK's tests: trains fault_model's integer updates
(robot `--marker`'s k-th step adds update(marker, k)) with rog.connect and
rog.Optimizer, the five lines of docs/python.md, then syncs and closes.

Prints "connected", "step K" after each step, "finished K" once sync and
close succeeded, and on Ctrl+C "interrupted MONOTONIC_SECONDS" before the
KeyboardInterrupt goes on. With --out_dir it saves its parameters after the
sync there (ID.params.pt)."""

import argparse
import os
import sys
import time

import torch

import rog
from fault_model import FaultModel, FaultStep

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "float64": torch.float64}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--id", required=True)
    p.add_argument("--marker", type=int, required=True)
    p.add_argument("--iterations", type=int, required=True)
    p.add_argument("--compute_ms", type=float, default=5)
    p.add_argument("--dtype", default="float32", choices=sorted(DTYPES))
    p.add_argument("--noncontig", action="store_true")
    p.add_argument("--loader_workers", type=int, default=0,
                   help="take each step's batch from a DataLoader with this many worker processes")
    p.add_argument("--out_dir", default="")
    p.add_argument("--markers_only", action="store_true",
                   help="updates only in the marker elements (small values: exact in bfloat16)")
    p.add_argument("--barrier", action="store_true",
                   help="after the loop: flush, write OUT_DIR/ID.flushed, wait for OUT_DIR/go, "
                        "then sync (so that everyone has flushed: the replica is rogd's model)")
    p.add_argument("--finish", action="store_true",
                   help="end with team.finish() (the drain rule) instead of team.sync()")
    args = p.parse_args()

    model = FaultModel(DTYPES[args.dtype], args.noncontig)
    batches = None
    if args.loader_workers > 0:
        data = torch.utils.data.TensorDataset(torch.arange(64, dtype=torch.float32))
        loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=args.loader_workers)

        def every_batch():
            while True:  # a new iterator per epoch: new worker processes, forked now
                for b in loader:
                    yield b
        batches = every_batch()
    try:
        with rog.connect(args.server, model, worker_id=args.id, timeout=60) as team:
            print("connected", flush=True)
            opt = rog.Optimizer(FaultStep(model, args.marker, not args.markers_only), team)
            k = 0
            while k < args.iterations:
                if batches is not None:
                    (x,) = next(batches)
                    assert x.shape == (8,)
                time.sleep(args.compute_ms / 1000)
                opt.step()
                k += 1
                print(f"step {k}", flush=True)
            if args.barrier:
                team.flush(timeout=60)
                open(os.path.join(args.out_dir, f"{args.id}.flushed"), "w").close()
                deadline = time.monotonic() + 120
                while not os.path.exists(os.path.join(args.out_dir, "go")):
                    if time.monotonic() > deadline:
                        raise SystemExit("no go within 120 s")
                    time.sleep(0.02)
            if args.finish:
                team.finish(timeout=60)
            else:
                team.sync(timeout=60)
            print(f"replayed {team.replayed} dropped {team.replay_dropped}", flush=True)
            if args.out_dir:
                torch.save({n: t.detach().clone() for n, t in model.named_parameters()},
                           os.path.join(args.out_dir, f"{args.id}.params.pt"))
        print(f"finished {k}", flush=True)
    except KeyboardInterrupt:
        print(f"interrupted {time.monotonic():.6f}", flush=True)
        raise
    except rog.Error as e:
        print(f"error {type(e).__name__}: {e.message}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
