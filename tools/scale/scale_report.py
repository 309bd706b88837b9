#!/usr/bin/env python3
"""scale.md from a scale study's folder (tools/scale/scale_study.sh):
baselines.json and points.jsonl in, the table and what each cost grows
as out (stdout); also plot.dat and, with gnuplot, memory.png, cpu.png and
rate.png in the folder.

Usage: tools/scale/scale_report.py DIR
"""
import json
import math
import os
import shutil
import subprocess
import sys

GB = 1e9


def fmt(v, digits=3):
    if v is None:
        return "–"
    if v == 0:
        return "0"
    return f"{v:.{digits}g}"


def slope(xs, ys):
    """Least-squares exponent of y = a x^k over points with x, y > 0."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


def derived(p, base):
    d = {}
    n = p.get("workers", 0)
    up = p.get("steady_bytes_up", 0)
    down = p.get("steady_bytes_down", 0)
    its = p.get("steady_iterations", 0)
    if p.get("resync_bytes_sent"):
        d["cpu_per_gb_sent"] = p["resync_cpu_seconds"] / (p["resync_bytes_sent"] / GB)
    if up > 0:
        d["cpu_per_gb_up"] = p["steady_cpu_seconds"] / (up / GB)
        d["engine_per_gb_up"] = p["steady_engine_cpu_seconds"] / (up / GB)
        if p["steady_engine_cpu_seconds"] > 0:
            # Each element pushed is added to the global row and to the
            # pending copy of each of the N - 1 others: N adds.
            d["fold_share"] = (up * n / p["steady_engine_cpu_seconds"]) / (base["sum_gbps"] * GB)
        d["tcp_share"] = ((up + down) / p["steady_seconds"]) / (base["tcp_loopback_gbps"] * GB)
    if its > 0:
        d["engine_per_iteration"] = p["steady_engine_cpu_seconds"] / (its / n)
    if p.get("peak_rss_before_checkpoint_bytes"):
        d["rss_ratio"] = p["peak_rss_before_checkpoint_bytes"] / p["design_bytes"]
    return d


def row(p, d):
    if p.get("error") and "steady_seconds" not in p:
        return (f"| {p['model']} | {p['workers']} | colspan: {p['error']} |")
    ck = "not asked"
    if "checkpoint_ok" in p:
        ck = (f"{fmt(p['checkpoint_seconds'])} s, {fmt(p['checkpoint_bytes'] / GB)} GB"
              if p["checkpoint_ok"] else "failed: " + p["checkpoint_error"][:60])
    join = fmt(p.get("join_resync_seconds"))
    if p.get("join_timed_out"):
        join = f"> {fmt(p['join_resync_seconds'])} (gave up)"
    return ("| " + " | ".join([
        p["model"], str(p["workers"]),
        fmt(p["peak_rss_before_checkpoint_bytes"] / GB), fmt(p["design_bytes"] / GB),
        fmt(d.get("rss_ratio")),
        fmt(p["resync_median_seconds"]), fmt(d.get("cpu_per_gb_sent")),
        fmt(p["team_iterations_per_second"]), fmt(d.get("cpu_per_gb_up")),
        fmt(d.get("engine_per_gb_up")), fmt(d.get("fold_share"), 2), fmt(d.get("tcp_share"), 2),
        f"{fmt(p['steady_queue_delay_p50'] * 1e3)} / {fmt(p['steady_queue_delay_p99'] * 1e3)}",
        join, f"{fmt(p['join_max_gap_seconds'])} ({fmt(p['steady_max_gap_seconds'])})",
        ck, p.get("error", "")[:80],
    ]) + " |")


def plots(folder, points, ds):
    with open(os.path.join(folder, "plot.dat"), "w") as f:
        for model in ("convmlp", "vit25m", "vit100m"):
            f.write(f"# {model}: N peak_rss_GB design_GB team_it_s engine_s_per_iteration\n")
            for p, d in zip(points, ds):
                if p.get("model") == model and "peak_rss_before_checkpoint_bytes" in p:
                    f.write(f"{p['workers']} {p['peak_rss_before_checkpoint_bytes'] / GB} "
                            f"{p['design_bytes'] / GB} {p['team_iterations_per_second']} "
                            f"{d.get('engine_per_iteration', 'nan')}\n")
            f.write("\n\n")
    if shutil.which("gnuplot") is None:
        return False
    script = """
set terminal png size 800,500
set logscale xy
set xlabel 'team size N'
set key left top
set output 'memory.png'
set ylabel 'rogd peak RSS, GB (lines: (N+1) x model)'
plot 'plot.dat' index 0 u 1:2 w lp t 'convmlp 3.2 MB', '' index 0 u 1:3 w l dt 2 notitle, \
     '' index 1 u 1:2 w lp t 'vit25m 97 MB', '' index 1 u 1:3 w l dt 2 notitle, \
     '' index 2 u 1:2 w lp t 'vit100m 403 MB', '' index 2 u 1:3 w l dt 2 notitle
set output 'cpu.png'
set ylabel 'engine thread CPU s per team iteration'
plot 'plot.dat' index 0 u 1:5 w lp t 'convmlp', '' index 1 u 1:5 w lp t 'vit25m', \
     '' index 2 u 1:5 w lp t 'vit100m'
set output 'rate.png'
set ylabel 'team iterations/s (no compute)'
plot 'plot.dat' index 0 u 1:4 w lp t 'convmlp', '' index 1 u 1:4 w lp t 'vit25m', \
     '' index 2 u 1:4 w lp t 'vit100m'
"""
    subprocess.run(["gnuplot"], input=script, text=True, cwd=folder, check=False,
                   stderr=subprocess.DEVNULL)
    return True


def main():
    folder = sys.argv[1]
    base = json.load(open(os.path.join(folder, "baselines.json")))
    points = [json.loads(l) for l in open(os.path.join(folder, "points.jsonl")) if l.strip()]
    ds = [derived(p, base) if "steady_seconds" in p else {} for p in points]
    print("# Scale study: one rogd, teams of 4 to 64, models of 3.2 MB to 403 MB\n")
    compute = max((p.get("compute_seconds", 0) for p in points), default=0)
    print("One run per point (`tools/scale/scale_study.sh`), SSP S = 4, patience off, "
          "synthetic workers with " +
          (f"{compute} s of compute (a sleep) per iteration" if compute else "no compute") +
          " (each pushes every row every iteration), "
          "loopback, no link emulation. This machine, same run: one core's memcpy "
          f"{fmt(base['memcpy_gbps'])} GB/s and summation {fmt(base['sum_gbps'])} GB/s "
          f"(bytes per CPU second), loopback TCP {fmt(base['tcp_loopback_gbps'])} GB/s "
          "between two processes (best of 3).\n")
    print("| model | N | peak RSS GB | (N+1) x model GB | ratio | resync median s | "
          "CPU s/GB sent (resync) | team it/s | rogd CPU s/GB up | engine CPU s/GB up | "
          "fold / sum | bytes / TCP | queue delay p50 / p99 ms | join s | team max gap s "
          "in join (steady) | checkpoint | error |")
    print("| " + " | ".join(["---"] * 17) + " |")
    for p, d in zip(points, ds):
        if "steady_seconds" not in p:
            rss = p.get("peak_rss_before_checkpoint_bytes", p.get("peak_rss_bytes"))
            cells = ["–"] * 14
            if rss:
                cells[0] = fmt(rss / GB)
            if p.get("design_bytes"):
                cells[1] = fmt(p["design_bytes"] / GB)
            if p.get("resync_median_seconds") is not None:
                cells[3] = fmt(p["resync_median_seconds"])
            print(f"| {p.get('model')} | {p.get('workers')} | " + " | ".join(cells) +
                  f" | {p.get('error', '')[:160]} |")
        else:
            print(row(p, d))
    print("\nHow each cost grows (least-squares exponent over the points with iterations):\n")
    for model in ("convmlp", "vit25m", "vit100m"):
        sel = [(p, d) for p, d in zip(points, ds) if p.get("model") == model and d]
        k_it = slope([p["workers"] for p, d in sel if "engine_per_iteration" in d],
                     [d["engine_per_iteration"] for p, d in sel if "engine_per_iteration" in d])
        k_rss = slope([p["workers"] + 1 for p, d in sel if "rss_ratio" in d],
                      [p["peak_rss_before_checkpoint_bytes"] for p, d in sel if "rss_ratio" in d])
        k_gb = slope([p["workers"] for p, d in sel if "engine_per_gb_up" in d],
                     [d["engine_per_gb_up"] for p, d in sel if "engine_per_gb_up" in d])
        print(f"- {model}: peak RSS ~ (N+1)^{fmt(k_rss, 2)}; engine CPU per team iteration ~ "
              f"N^{fmt(k_it, 2)}; engine CPU per GB pushed ~ N^{fmt(k_gb, 2)}")
    if plots(folder, points, ds):
        print("\nPlots: [memory.png](memory.png), [cpu.png](cpu.png), [rate.png](rate.png) "
              "(data: plot.dat).")


if __name__ == "__main__":
    main()
