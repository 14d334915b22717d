"""A tiny timing helper shared by the benchmarks: warm up, alternate, take medians.

On a shared 2-core machine the speed of a side drifts from minute to minute
(other jobs come and go). Timing side A for a minute and then side B for a
minute would mix that drift into the comparison. Instead we alternate:

    warm-up: A B A B ...          (not recorded)
    rounds:  A B  A B  A B ...    (each call timed on its own)

and report, per side, the median time and the interquartile range (IQR), plus
the median of the per-round ratios B/A -- a ratio of two calls made a second
apart, so slow drifts cancel out.
"""
import os
import re
import statistics
import time

import torch

THREADS = int(os.environ.get("BENCH_THREADS", "2"))


def set_threads(n=THREADS):
    """Fix torch's thread count (intra-op; inter-op too, the first time), so results are comparable."""
    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(n)
    except RuntimeError:  # can only be set once per process, before any parallel work
        pass
    return torch.get_num_threads()


def quartiles(xs):
    """(25th percentile, median, 75th percentile)."""
    if len(xs) == 1:
        return xs[0], xs[0], xs[0]
    q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return q1, q2, q3


def summary(times):
    q1, med, q3 = quartiles(times)
    return {"median_s": med, "iqr_s": q3 - q1, "n": len(times)}


def alternate(sides, warmup=2, rounds=7, sync=None):
    """Time each callable in `sides` ({name: fn}) `rounds` times, alternating, after `warmup` untimed rounds.

    Returns {"sides": {name: {median_s, iqr_s, n, times}}, "ratios": {"B/A": {median, iqr}}}
    where the ratios compare every side to the first one, round by round.
    `sync` (e.g. torch.cuda.synchronize) is called before reading the clock.
    """
    names = list(sides)
    for _ in range(warmup):
        for name in names:
            sides[name]()
    times = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            if sync:
                sync()
            start = time.perf_counter()
            sides[name]()
            if sync:
                sync()
            times[name].append(time.perf_counter() - start)
    out = {"sides": {n: {**summary(t), "times": [round(x, 5) for x in t]} for n, t in times.items()}, "ratios": {}}
    base = names[0]
    for name in names[1:]:
        per_round = [b / a for a, b in zip(times[base], times[name])]
        q1, med, q3 = quartiles(per_round)
        out["ratios"][f"{name}/{base}"] = {"median": med, "iqr": q3 - q1}
    return out


def speed_ratio(result, fast, slow):
    """Median over rounds of time(slow)/time(fast): > 1 means `fast` is faster (a throughput ratio)."""
    t = {n: s["times"] for n, s in result["sides"].items()}
    per_round = [b / a for a, b in zip(t[fast], t[slow])]
    q1, med, q3 = quartiles(per_round)
    return {"ratio": med, "iqr": q3 - q1}


# ---- memory (CPU): peak resident set size, resettable on Linux -------------------------------

def reset_peak_rss():
    """Reset the kernel's high-water mark of this process's resident memory (Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def rss_mb(field="VmRSS"):
    """Current (VmRSS) or peak since the last reset (VmHWM) resident memory, in MiB."""
    with open("/proc/self/status") as f:
        kb = int(re.search(rf"{field}:\s+(\d+)", f.read()).group(1))
    return kb / 1024


def loadavg():
    """The 1-minute load average: how busy the shared machine was (2 cores: above 2 means contention)."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])
