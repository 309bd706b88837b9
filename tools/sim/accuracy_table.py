#!/usr/bin/env python3
"""The accuracy table of tools/sim/accuracy_study.sh, from fmnist_sim's outputs.

Reads POINTS_DIR/<point>/seed<N>.txt (one //tools/sim:fmnist_sim output per
seed, every policy in it) and prints, per point, a markdown table per policy
over the seeds: the team's mean accuracy half way through the run and at
its end (the replicas), rogd's model after the final sync, the final sync's
change, and the time to BSP's final accuracy; then ROG against SSP and BSP
paired by seed: the mean difference of rogd's final model with its standard
error, how many seeds ROG is above and below, and the two-sided sign test's
p-value (ties left out). Accuracy is in points (percent).

Where the outputs have them (fmnist_sim since 1070c2a), the table adds
rogd's model when training stopped, before the drain, and that model plus the
drain's updates averaged over the workers instead of summed.

With --ab, two studies of the same points and seeds are compared as an A/B:
per point and policy, ARM minus BASE paired by seed (rogd's final model,
the replicas, the model when training stopped) with the sign test, and
the ratio of iterations per second. An arm that ran ROG alone (--sync=rog)
is also paired with the base's SSP: ROG (arm) − SSP (base).

With --summary, one row per point over one or more study folders (every
point folder in each): ROG's iterations/s over SSP's; ROG − SSP for rogd's
model after the final sync, paired, with the sign test; ROG less the best
baseline (per seed the higher of BSP and SSP) at the end and half way; the
time to BSP's final accuracy of ROG and SSP; and issue 58's first goal,
ROG's final model at least as good as SSP's within 0.5 points: "met" when
the mean difference is at least -0.5, "not met" when even its mean plus two
standard errors is below -0.5, "unresolved" otherwise. Where the outputs
have it (since 1070c2a), the last column is rogd's model with ROG's drain
averaged over the workers less the model with it summed, paired by seed:
the final model a rule that averaged the drain would leave, since the
drain comes after training and changes nothing before it.

Usage: tools/sim/accuracy_table.py POINTS_DIR [POINT ...]
       tools/sim/accuracy_table.py --ab BASE_DIR ARM_DIR [POINT ...]
       tools/sim/accuracy_table.py --summary POINTS_DIR [POINTS_DIR ...]
  (every point folder in the (first) folder, sorted, when no POINT is given)
"""
import math
import os
import re
import sys

_POLICY = re.compile(r"^(bsp|ssp|rog)\s+([0-9.]+)\s")
_SERIES = re.compile(r"^\s+score, team mean: (.*)$")
_END = re.compile(
    r"^\s+score at the end of training ([0-9.]+) \(mean of the replicas\), "
    r"after the drain ([0-9.]+) \(rogd's model\)")
_STOPPED = re.compile(
    r"^\s+rogd's model when training stopped ([0-9.]+); with the drain's updates averaged "
    r"over the workers instead of summed ([0-9.]+)")
_TIME = re.compile(r"^time to BSP's final score [0-9.]+ .*?: (.*)$")
_POLICIES = ("bsp", "ssp", "rog")


class RunError(Exception):
    pass


def parse_run(text, where):
    """One fmnist_sim output: {policy: {series, replicas, final, to_target}}."""
    runs, policy = {}, None
    for line in text.splitlines():
        m = _POLICY.match(line)
        if m:
            policy = m.group(1)
            runs[policy] = {"to_target": None, "its": float(m.group(2))}
            continue
        m = _SERIES.match(line)
        if m and policy:
            series = {}
            for item in m.group(1).split(", "):
                t, score = item.split(" s ")
                series[float(t)] = float(score)
            runs[policy]["series"] = series
            continue
        m = _END.match(line)
        if m and policy:
            runs[policy]["replicas"] = float(m.group(1))
            runs[policy]["final"] = float(m.group(2))
            continue
        m = _STOPPED.match(line)
        if m and policy:
            runs[policy]["stopped"] = float(m.group(1))
            runs[policy]["averaged"] = float(m.group(2))
            continue
        m = _TIME.match(line)
        if m:
            for p, t in re.findall(r"(bsp|ssp|rog) (not reached|[0-9.]+ s)", m.group(1)):
                if p in runs:
                    runs[p]["to_target"] = None if t == "not reached" else float(t[:-2])
    for p, r in runs.items():
        if "final" not in r or "series" not in r:
            raise RunError(f"{where}: {p} has no score series or final score; is it "
                           "fmnist_sim's whole output (did the run end)?")
    if not runs:
        raise RunError(f"{where}: no policy's row found; not an fmnist_sim output")
    return runs


def half_way(series):
    """The score at the evaluation nearest half the run (the later on a tie)."""
    end = max(series)
    return series[min(series, key=lambda t: (abs(t - end / 2), -t))]


def mean_se(xs):
    n = len(xs)
    if n == 0:
        return float("nan"), float("nan")
    m = sum(xs) / n
    if n < 2:
        return m, float("nan")
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    return m, math.sqrt(var / n)


def sign_test(above, below):
    """Two-sided exact binomial p-value of `above` against `below` (p = 1/2)."""
    n = above + below
    if n == 0:
        return 1.0
    k = min(above, below)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def fmt(m, se):
    if math.isnan(m):
        return "-"
    text = f"{m:.1f}".replace("-0.0", "0.0")  # a mean that rounds to 0 has no sign
    return text if math.isnan(se) else f"{text} ± {se:.1f}"


def load_point(folder):
    seeds = {}
    for name in sorted(os.listdir(folder)):
        m = re.fullmatch(r"seed([0-9]+)\.txt", name)
        if m:
            path = os.path.join(folder, name)
            with open(path) as f:
                seeds[int(m.group(1))] = parse_run(f.read(), path)
    if not seeds:
        raise RunError(f"{folder}: no seed<N>.txt files")
    return seeds


def has_stopped(seeds):
    return all("stopped" in r for s in seeds.values() for r in s.values())


def policy_rows(seeds):
    rows, stopped = [], has_stopped(seeds)
    for p in _POLICIES:
        runs = [s[p] for s in seeds.values() if p in s]
        if not runs:
            continue
        pts = lambda key: [100 * r[key] for r in runs]
        change = [100 * (r["final"] - r["replicas"]) for r in runs]
        reached = [r["to_target"] for r in runs if r["to_target"] is not None]
        to_target = "not reached" if not reached else fmt(*mean_se(reached)) + " s"
        rows.append(f"| {p.upper()} | {len(runs)} | {fmt(*mean_se([100 * half_way(r['series']) for r in runs]))} "
                    f"| {fmt(*mean_se(pts('replicas')))} | {fmt(*mean_se(pts('final')))} "
                    f"| {fmt(*mean_se(change))} (down in {sum(c < 0 for c in change)}) "
                    f"| {to_target} ({len(reached)} reached) |"
                    + (f" {fmt(*mean_se(pts('stopped')))} | {fmt(*mean_se(pts('averaged')))} |"
                       if stopped else ""))
    return rows


def paired_rows(seeds):
    rows = []
    for other in ("ssp", "bsp"):
        for key, what in (("final", "rogd's model"), ("replicas", "replicas")):
            d = [100 * (s["rog"][key] - s[other][key]) for s in seeds.values()
                 if "rog" in s and other in s]
            if not d:
                continue
            above, below = sum(x > 0 for x in d), sum(x < 0 for x in d)
            rows.append(f"| ROG − {other.upper()}, {what} | {len(d)} | {fmt(*mean_se(d))} "
                        f"| {above} / {below} | {sign_test(above, below):.3f} |")
    return rows


def point_table(name, seeds):
    extra = has_stopped(seeds)
    out = [f"## {name}", "",
           "| policy | seeds | half way | end (replicas) | rogd's model after the final sync "
           "| final sync's change | time to BSP's final |"
           + (" rogd's model when training stopped | with the drain averaged |" if extra else ""),
           "| --- | --- | --- | --- | --- | --- | --- |" + (" --- | --- |" if extra else "")]
    out += policy_rows(seeds)
    paired = paired_rows(seeds)
    if paired:
        out += ["", "| paired by seed | seeds | mean difference ± SE (points) "
                "| ROG above / below | sign test p |", "| --- | --- | --- | --- | --- |"]
        out += paired
    return out + [""]


def paired(base, arm, policy, key):
    """ARM - BASE in points for `key`, over the seeds both have."""
    return [100 * (arm[s][policy][key] - base[s][policy][key]) for s in sorted(base)
            if s in arm and policy in base[s] and policy in arm[s]
            and key in base[s][policy] and key in arm[s][policy]]


def cross_rows(base, arm):
    """An arm that ran ROG alone: its ROG against the base's SSP, paired by
    seed (SSP's runs do not depend on a ROG-only setting)."""
    if any("ssp" in arm[s] for s in arm):
        return []
    d = [100 * (arm[s]["rog"]["final"] - base[s]["ssp"]["final"]) for s in sorted(base)
         if s in arm and "rog" in arm[s] and "ssp" in base[s]
         and "final" in arm[s]["rog"] and "final" in base[s]["ssp"]]
    if not d:
        return []
    above, below = sum(x > 0 for x in d), sum(x < 0 for x in d)
    return [f"| ROG (arm) − SSP (base) | rogd's model after the final sync | {len(d)} | "
            f"{fmt(*mean_se(d))} | {above} / {below} | {sign_test(above, below):.3f} |"]


def ab_table(name, base, arm):
    out = [f"## {name}: arm − base", "",
           "| policy | what | seeds | mean difference ± SE (points) | arm above / below | sign test p |",
           "| --- | --- | --- | --- | --- | --- |"]
    for p in _POLICIES:
        for key, what in (("final", "rogd's model after the final sync"),
                          ("replicas", "replicas at the end"),
                          ("stopped", "rogd's model when training stopped")):
            d = paired(base, arm, p, key)
            if not d:
                continue
            above, below = sum(x > 0 for x in d), sum(x < 0 for x in d)
            out.append(f"| {p.upper()} | {what} | {len(d)} | {fmt(*mean_se(d))} | {above} / {below} "
                       f"| {sign_test(above, below):.3f} |")
        if p == "rog":
            out += cross_rows(base, arm)
        ratios = [arm[s][p]["its"] / base[s][p]["its"] for s in sorted(base)
                  if s in arm and p in base[s] and p in arm[s] and base[s][p]["its"] > 0]
        if ratios:
            m, se = mean_se(ratios)
            out.append(f"| {p.upper()} | iterations/s, arm / base | {len(ratios)} | "
                       f"{m:.3f}" + ("" if math.isnan(se) else f" ± {se:.3f}") + " | | |")
    return out + [""]


def main_ab(argv):
    if len(argv) < 2 or not all(os.path.isdir(d) for d in argv[:2]):
        print("accuracy_table: --ab needs two study folders, BASE_DIR and ARM_DIR", file=sys.stderr)
        return 2
    base_root, arm_root = argv[:2]
    points = argv[2:] or sorted(d for d in os.listdir(base_root)
                                if os.path.isdir(os.path.join(base_root, d)))
    lines = [f"A/B in points (percent): arm {arm_root} minus base {base_root}, paired by seed.", ""]
    try:
        for p in points:
            lines += ab_table(p, load_point(os.path.join(base_root, p)),
                              load_point(os.path.join(arm_root, p)))
    except (RunError, OSError, ValueError) as e:
        print(f"accuracy_table: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


def diff_text(d):
    """ "-5.1 ± 1.6 (3 / 13, p 0.021)": mean ± SE, ROG above / below, sign test."""
    above, below = sum(x > 0 for x in d), sum(x < 0 for x in d)
    return f"{fmt(*mean_se(d))} ({above} / {below}, p {sign_test(above, below):.2f})"


def goal_text(d, margin=0.5):
    m, se = mean_se(d)
    if math.isnan(m):
        return "-"
    if m >= -margin:
        return "met"
    return "not met" if not math.isnan(se) and m + 2 * se < -margin else "unresolved"


def summary_row(name, seeds):
    both = [s for s in seeds.values() if all(p in s for p in _POLICIES)]
    final = [100 * (s["rog"]["final"] - s["ssp"]["final"]) for s in both]
    best_end = [100 * (s["rog"]["final"] - max(s["bsp"]["final"], s["ssp"]["final"]))
                for s in both]
    best_half = [100 * (half_way(s["rog"]["series"])
                        - max(half_way(s["bsp"]["series"]), half_way(s["ssp"]["series"])))
                 for s in both]
    ratio = [s["rog"]["its"] / s["ssp"]["its"] for s in both if s["ssp"]["its"] > 0]
    averaged = [100 * (s["rog"]["averaged"] - s["rog"]["final"]) for s in both
                if "averaged" in s["rog"]]
    drain_text = diff_text(averaged) if averaged else "-"

    def to_target(p):
        t = [s[p]["to_target"] for s in both if s[p]["to_target"] is not None]
        return (fmt(*mean_se(t)) + " s" if t else "not reached") + f" ({len(t)})"

    return (f"| {name} | {len(both)} | {mean_se(ratio)[0]:.2f}× | {diff_text(final)} "
            f"| {fmt(*mean_se(best_end))} | {fmt(*mean_se(best_half))} "
            f"| {to_target('rog')} / {to_target('ssp')} | {goal_text(final)} | {drain_text} |")


def main_summary(roots):
    if not roots or not all(os.path.isdir(d) for d in roots):
        print("accuracy_table: --summary needs study folders", file=sys.stderr)
        return 2
    lines = ["| point | seeds | ROG/SSP it/s | ROG − SSP, rogd's final model (above / below, sign test) "
             "| ROG − best baseline, end | half way | time to BSP's final, ROG / SSP (seeds reached) "
             "| ROG ≥ SSP − 0.5 | ROG's drain averaged − summed (above / below, sign test) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    try:
        for root in roots:
            for p in sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))):
                lines.append(summary_row(p, load_point(os.path.join(root, p))))
    except (RunError, OSError, ValueError) as e:
        print(f"accuracy_table: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    if argv[1] == "--ab":
        return main_ab(argv[2:])
    if argv[1] == "--summary":
        return main_summary(argv[2:])
    root = argv[1]
    if not os.path.isdir(root):
        print(f"accuracy_table: {root} is not a folder; give the study's points folder", file=sys.stderr)
        return 2
    points = argv[2:] or sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    lines = ["Accuracy in points (percent), mean ± standard error over seeds; the seeds",
             "pair the policies (same data, batches and links).", ""]
    try:
        for p in points:
            lines += point_table(p, load_point(os.path.join(root, p)))
    except (RunError, OSError, ValueError) as e:
        print(f"accuracy_table: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
