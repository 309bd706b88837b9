"""What rog's staging (python/rog/_staging.py) costs per step on each
device this torch has: the team's model into the parameters (Staging.load)
and their change out (Staging.take_delta), with no compute and no rogd, for
a few model sizes and dtypes. Each step also waits for the last load's
host-to-device copy (host_ready) and writes the begin buffer, as the native
module's BeginIteration does, so an asynchronous copy is paid for within
the step. Needs only torch: on a CUDA machine it runs without rog's native
module.

    python3 python/bench/staging_bench.py [--steps=N] [--sizes_mb=3.2,100,400]

Output: one line per case, "device dtype MB median_ms p90_ms GB/s", the
rate being the model's float32 bytes moved in and out (2 x 4 bytes per
element) over the median step."""

import argparse
import importlib.util
import os
import statistics
import time

import torch


def load_staging():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rog", "_staging.py")
    spec = importlib.util.spec_from_file_location("rog_staging_alone", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_case(staging, device, dtype, numel, steps):
    # Two tensors, the second a quarter of the first (a layer and its bias).
    big = numel * 4 // 5
    params = [("w", torch.nn.Parameter(torch.zeros(big, dtype=dtype, device=device))),
              ("b", torch.nn.Parameter(torch.zeros(numel - big, dtype=dtype, device=device)))]
    s = staging.Staging(params)
    team = torch.randn(numel).numpy()
    times = []
    for step in range(steps + 3):
        t0 = time.perf_counter()
        s.host_ready()
        s.begin_buffer[:] = team
        s.load()
        with torch.no_grad():
            params[0][1].add_(1)  # the "step": every element of one tensor changes
        s.take_delta()
        if device == "cuda":
            torch.cuda.synchronize()
        if step >= 3:
            times.append(time.perf_counter() - t0)
    assert s.delta_buffer[0] != 0.0 and s.delta_buffer[-1] == 0.0  # w changed, b did not
    times.sort()
    median = statistics.median(times)
    p90 = times[int(0.9 * (len(times) - 1))]
    return median, p90


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per case (after 3)")
    parser.add_argument("--sizes_mb", default="3.2,100,400",
                        help="model sizes in MB of float32, comma-separated")
    args = parser.parse_args()
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    try:
        sizes = [float(x) for x in args.sizes_mb.split(",")]
    except ValueError:
        parser.error(f"--sizes_mb must be numbers separated by commas, not '{args.sizes_mb}'")
    staging = load_staging()
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(f"torch {torch.__version__}; devices: " +
          ", ".join(devices if len(devices) == 1 else
                    devices[:1] + [f"cuda ({torch.cuda.get_device_name()})"]))
    print("device dtype MB median_ms p90_ms GB/s")
    for device in devices:
        for dtype in (torch.float32, torch.bfloat16):
            for mb in sizes:
                numel = int(mb * 1e6 / 4)
                median, p90 = one_case(staging, device, dtype, numel, args.steps)
                rate = 2 * 4 * numel / median / 1e9
                name = str(dtype).replace("torch.", "")
                print(f"{device} {name} {mb:g} {1e3 * median:.2f} {1e3 * p90:.2f} {rate:.1f}",
                      flush=True)


if __name__ == "__main__":
    main()
