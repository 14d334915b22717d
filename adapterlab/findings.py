"""The findings of the four figure families, read from their tidy CSVs, with their noise.

Every number that the notebooks' "Reading the result" cells and the README's findings section
state comes from here, so no text can contradict the data:

    from adapterlab import findings
    print(findings.init_scale(df))              # markdown lines for one family's DataFrame
    print(findings.report("default"))           # all four, from data/results/default/*.csv
    python -m adapterlab.findings --profile default --write-readme   # the README section

A difference is stated only when it exceeds the noise: two seed means differ when |a - b| > 2 SE,
SE = sqrt(sd_a^2 / n_a + sd_b^2 / n_b) over seeds (about a 95% test); otherwise it is "within noise".
A comparison with the majority class treats the baseline as exact. With one seed there is no noise
estimate, and the text says so.
"""
import argparse
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from . import profiles

FAMILIES = ("layer_removal", "init_scale", "param_performance", "low_resource")
COLLAPSE = 0.01  # a run "collapsed" when it ends within one point of the majority class
BEGIN, END = "<!-- findings:begin (python -m adapterlab.findings --write-readme) -->", "<!-- findings:end -->"


def pts(value, signed=False):
    """A fraction as points x100: 0.823 -> '82.3'."""
    return f"{value * 100:{'+' if signed else ''}.1f}"


def difference(a, b):
    """(mean(a) - mean(b), its SE, verdict) for seed values a and b; b may be an exact number."""
    a = np.asarray(a, dtype=float)
    exact = np.isscalar(b)
    b = np.atleast_1d(np.asarray(b, dtype=float))
    diff = a.mean() - b.mean()
    if len(a) < 2 or (not exact and len(b) < 2):
        return diff, math.nan, "one seed: no noise estimate"
    se = math.sqrt(a.var(ddof=1) / len(a) + (0.0 if exact else b.var(ddof=1) / len(b)))
    verdict = "within noise" if abs(diff) <= 2 * se else ("higher" if diff > 0 else "lower")
    return diff, se, verdict


def said(a, b):
    """'+2.1 ± 1.4 (2 SE), higher' for a difference of seed values."""
    diff, se, verdict = difference(a, b)
    noise = "" if math.isnan(se) else f" ± {2 * se * 100:.1f} (2 SE)"
    return f"{pts(diff, True)}{noise}, {verdict}"


def unconverged(df):
    """'3 of 24 runs not converged' (the rule of adapterlab.train.convergence) and why: which runs failed
    only the loss criterion (final training loss >= loss_ratio x the class entropy) and which are still
    gaining beyond max(1 point, 2 paired SE); and how many runs the noise clause let through (a gain of
    over a point that the validation set cannot tell from noise), so a reader sees what it decided."""
    if "converged" not in df:
        return "these results predate the convergence record"
    from .train import CONVERGENCE as rule, plateau_threshold

    converged = df["converged"].astype(bool)
    bad = int((~converged).sum())
    if "plateau_gain" not in df:
        return f"{bad} of {len(df)} runs not converged" if bad else f"all {len(df)} runs converged"
    se = df["plateau_se"] if "plateau_se" in df else pd.Series(math.nan, index=df.index)
    gaining = ~converged & (df["plateau_gain"] >= se.map(plateau_threshold))
    noise = converged & (df["plateau_gain"] >= rule["plateau"])
    point = f"{rule['plateau'] * 100:g} point(s)"
    parts = []
    if bad > gaining.sum():
        parts.append(f"{bad - gaining.sum()} with a final training loss ≥ {rule['loss_ratio']:g} x the class entropy")
    if gaining.any():
        blind = int((gaining & se.isna()).sum())
        parts.append(f"{gaining.sum()} still gaining in their last third (by > {point} and > {rule['noise_se']:g} "
                     "paired SE" + (f"; {blind} without the per-example record, by > {point}" if blind else "") + ")")
    text = (f"{bad} of {len(df)} runs not converged: {', '.join(parts)}" if bad else f"all {len(df)} runs converged")
    if noise.any():
        text += (f"; {noise.sum()} converged run(s) gained > {point} but within {rule['noise_se']:g} paired SE "
                 "(the noise of the validation set)")
    return text


def _seeds(df):
    return df["seed"].nunique() if "seed" in df else 1


def layer_removal(df):
    """Single-layer and all-layer removal against no removal and the majority class (one model)."""
    lines = []
    for task, d in df.groupby("task", sort=False):
        full, base = d["full_value"].iloc[0], d["baseline"].iloc[0]
        single = d[d["first_layer"] == d["last_layer"]].set_index("first_layer")["value"] - full
        every = d[(d["first_layer"] == 0) & (d["last_layer"] == d["last_layer"].max())]["value"].iloc[0]
        n = int(d["eval_examples"].iloc[0]) if "eval_examples" in d else None
        noise = f" (one run; sampling SE of one score on {n:,} examples: {pts(math.sqrt(full * (1 - full) / n))})" if n else ""
        lines += [f"**Layer removal, {task}**{noise}: with every adapter {pts(full)}; removing one layer's adapters "
                  f"costs at most {pts(-single.min())} points (layer {int(single.idxmin())}); removing all of them "
                  f"leaves {pts(every)} against {pts(base)} for the majority class "
                  f"({pts(every - base, True)} points); {unconverged(d.head(1)).replace('runs', 'run')}."]
    return lines


def init_scale(df, flat_below=1e-2):
    """Flat for std <= flat_below (within noise)? Degraded at the largest std? Collapsed runs."""
    lines = []
    for task, d in df.groupby("task", sort=False):
        by = {std: g["value"].to_numpy() for std, g in d.groupby("init_std")}
        base = d["baseline"].iloc[0]
        means = {std: v.mean() for std, v in by.items()}
        small = [s for s in by if s <= flat_below]
        hi, lo = max(small, key=means.get), min(small, key=means.get)
        largest = max(by)
        collapsed = {std: int((v - base < COLLAPSE).sum()) for std, v in by.items()}
        flat = difference(by[lo], by[hi])[2]
        lines += [f"**Init scale, {task}** (validation accuracy, {_seeds(d)} seed(s), {unconverged(d)}; "
                  f"majority class {pts(base)}):",
                  "- seed mean per std: " + ", ".join(f"{s:.0e} {pts(m)}" for s, m in sorted(means.items())) + ".",
                  "- best of the seeds per std (the paper kept the best of 5): "
                  + ", ".join(f"{s:.0e} {pts(v.max())}" for s, v in sorted(by.items())) + ".",
                  f"- std ≤ {flat_below:.0e}: lowest mean (std {lo:.0e}) minus highest (std {hi:.0e}) "
                  f"{said(by[lo], by[hi])}: "
                  + ("flat within noise, as in the paper." if flat in ("within noise",) else
                     "no noise estimate." if "one seed" in flat else "not flat: the difference exceeds the noise."),
                  f"- std {largest:g} against the best std ≤ {flat_below:.0e}: {said(by[largest], by[hi])}"
                  + (": degraded, as in the paper." if difference(by[largest], by[hi])[2] == "lower" else "."),
                  "- runs collapsed to the majority class (within one point of it): "
                  + (", ".join(f"{n} at {s:.0e}" for s, n in sorted(collapsed.items()) if n) or "none")
                  + f" (of {_seeds(d)} per std)."]
    return lines


def smallest_within(df, points=1.0):
    """The label training the fewest parameters whose seed mean is at least full fine-tuning's seed mean
    minus `points` (accuracy points: 0.01 each); None when no method is that close (or no full run)."""
    full = df[df["method"] == "full"]["value"]
    if not len(full):
        return None
    others = df[df["method"] != "full"].groupby("label", sort=False)
    means, trainable = others["value"].mean(), others["trainable"].first()
    close = trainable[means >= full.mean() - points / 100]
    return close.idxmin() if len(close) else None


def param_performance(df, grid=None):
    """Each method's chosen learning rate and its difference to full fine-tuning; BitFit vs majority."""
    lines = []
    for task, d in df.groupby("task", sort=False):
        base = d["baseline"].iloc[0]
        full = d[d["method"] == "full"]["value"].to_numpy()
        lines.append(f"**Parameters vs performance, {task}** (test accuracy, mean of {_seeds(d)} seed(s), "
                     f"{unconverged(d)}; full fine-tuning {pts(full.mean())}, majority class {pts(base)}):")
        for label, g in d.groupby("label", sort=False):
            lr = (f" at lr {g['lr'].iloc[0]:g}" if "lr" in g else "") + (
                f" (chosen from {g['lr_grid'].iloc[0]})" if "lr_grid" in g else "")
            vs_full = f"; vs full {said(g['value'], full)}" if len(full) and label != "full" else ""
            lines.append(f"- {label}: {pts(g['value'].mean())}{lr}, {g['percent'].iloc[0]:.3f}% trained{vs_full}.")
        bitfit = d[d["method"] == "bitfit"]["value"]
        if len(bitfit):
            lines.append(f"- BitFit against the majority class: {said(bitfit, base)}.")
        smallest = smallest_within(d, 1.0)
        if smallest is not None:
            g = d[d["label"] == smallest]
            lines.append(f"- the fewest trained parameters with a seed mean within 1 point of full fine-tuning's: "
                         f"{smallest} ({int(g['trainable'].iloc[0]):,}, {g['percent'].iloc[0]:.3f}%; by seed means, "
                         f"so within noise of full is not the same claim: see its line above).")
        cpp, houlsby = d[d["method"] == "compacter++"]["value"], d[d["label"] == "houlsby m=64"]["value"]
        if len(cpp) and len(houlsby):
            lines.append(f"- Compacter++ against Houlsby m=64: {said(cpp, houlsby)}.")
    return lines


def low_resource(df):
    """Per training-set size: each method's mean, and Compacter++ and Houlsby against full fine-tuning."""
    lines = []
    for task, d in df.groupby("task", sort=False):
        lines.append(f"**Low resource, {task}** (test accuracy, mean of {_seeds(d)} seed(s), {unconverged(d)}; "
                     f"majority class {pts(d['baseline'].iloc[0])}):")
        if "lr" in d:
            rates = ", ".join(f"{m} {'/'.join(f'{lr:g}' for lr in g['lr'].unique())}"
                              + (f" (chosen on validation from {g['lr_grid'].iloc[0]})"
                                 if "lr_grid" in g and isinstance(g["lr_grid"].iloc[0], str) else "")
                              for m, g in d.groupby("method", sort=False))
            lines.append(f"- learning rates: {rates}.")
        for size, g in d.groupby("train_size"):
            by = {m: r["value"] for m, r in g.groupby("method", sort=False)}
            means = ", ".join(f"{m} {pts(v.mean())}" for m, v in by.items())
            vs = "; ".join(f"{m} − full {said(by[m], by['full'])}" for m in by if m != "full" and "full" in by)
            lines.append(f"- {int(size):,} examples: {means}" + (f"; {vs}" if vs else "") + ".")
        if "converged" in d and not d["converged"].astype(bool).all():
            per = ", ".join(f"{m} {(~g['converged'].astype(bool)).sum()} of {len(g)}"
                            for m, g in d.groupby("method", sort=False))
            lines.append(f"- not converged, by method: {per}; a gap that involves such runs is the gap at this "
                         "budget, not at convergence.")
        smallest = d[d["train_size"] == d["train_size"].min()]
        cpp, full = (smallest[smallest["method"] == m]["value"] for m in ("compacter++", "full"))
        if len(cpp) and len(full):
            verdict = difference(cpp, full)[2]
            lines.append(f"- the paper's finding, Compacter++ above full fine-tuning on the smallest set: "
                         + {"higher": "reproduced", "lower": "reversed here (Compacter++ is lower)",
                            "within noise": "not shown (within noise)"}.get(verdict, verdict) + ".")
    return lines


READERS = {"layer_removal": layer_removal, "init_scale": init_scale, "param_performance": param_performance,
           "low_resource": low_resource}


def load(profile, family):
    """The family's CSV from data/results/<profile>/ (None when it is not there)."""
    path = profiles.results_dir(profile) / f"{family}.csv"
    return pd.read_csv(path) if path.is_file() else None


def stored_runs(profile, family):
    """The stored records of the family's current plan (03's "teaching": the notebook's default runs)."""
    from . import experiments  # torch and the models: only when asked
    store = experiments.ResultStore(profiles.results_dir(profile))
    records = [store.get(experiments.run_key(c, profile, family), family) for c in experiments.plan(profile, family)]
    return [r for r in records if r is not None]


def _cost(records):
    """(seconds, what) of stored records: run_seconds (whole runs), or train_seconds (training loops
    only) when an older record lacks run_seconds. A run trained beside others (`workers` > 1, the
    sweep's CPU workers) counts for run_seconds / workers: its share of the wall time."""
    wall = all("run_seconds" in r for r in records)
    seconds = sum((r["run_seconds"] if wall else r["train_seconds"]) / r.get("workers", 1) for r in records)
    workers = sorted({r.get("workers", 1) for r in records})
    what = "whole runs" if wall else "training loops only"
    if workers != [1]:
        what += f", {' or '.join(map(str, workers))} at a time"
    return seconds, what


def from_scratch(profile, family):
    """What the family's planned runs cost to make, from their stored records: (seconds, runs, what)."""
    records = stored_runs(profile, family)
    seconds, what = _cost(records)
    return seconds, len(records), what


def timing(profile, family):
    """One sentence for the top of a notebook: what its runs cost from scratch, from the store."""
    records = stored_runs(profile, family)
    if not records:
        return f"From scratch: nothing stored yet for {family} in profile {profile!r}."
    seconds, what = _cost(records)
    return (f"From scratch this notebook trains {len(records)} run(s): {seconds / 60:.1f} min on the machines that "
            f"made the stored results ({machines(records)}; {what}, summed over "
            f"data/results/{profiles.get(profile).name}/{family}.jsonl); from the store it only redraws.")


def report(profile="default"):
    """Markdown of every family's findings from the profile's committed CSVs."""
    out = []
    for family in FAMILIES:
        df = load(profile, family)
        if df is None or df.empty:
            continue
        seconds, runs, what = from_scratch(profile, family)
        cost = f"{runs} run(s), {seconds / 60:.0f} min, {what}" if runs else "the store lacks the current plan's runs"
        out += READERS[family](df) + [f"  *(from scratch: {cost})*", ""]
    out.append(total_time(profile))
    return "\n".join(out).strip() + "\n"


# the notebooks that train, and the store family of their runs (01, 02 train nothing)
NOTEBOOK_FAMILIES = {"03_training_adapters": "teaching", "04_layer_removal": "layer_removal",
                     "05_init_scale": "init_scale", "06_params_vs_performance": "param_performance",
                     "07_low_resource": "low_resource"}


def notebook_seconds(profile):
    """{notebook stem: (seconds, device)}: what each training notebook's stored runs took to make
    (0 when none is stored), and where they ran ("gpu" if any ran on CUDA, else "cpu")."""
    out = {}
    for stem, family in NOTEBOOK_FAMILIES.items():
        records = stored_runs(profile, family)
        cuda = any(str(r.get("device", "cpu")).startswith("cuda") for r in records)
        out[stem] = (_cost(records)[0], "gpu" if cuda else "cpu")
    return out


def machines(records):
    """Where the records' seconds were measured: 'AMD EPYC (AVX512) 46 run(s), ...', most runs first.
    Records older than the `machine` field say so instead of guessing."""
    counts = Counter(r.get("machine", "machine not recorded") for r in records)
    return ", ".join(f"{name} {n} run(s)" for name, n in counts.most_common())


def total_time(profile):
    """One line: what `make figures-fresh` costs, summed from the stored runs of every notebook."""
    seconds = notebook_seconds(profile)
    missing = [family for stem, family in NOTEBOOK_FAMILIES.items() if family in FAMILIES and not seconds[stem][0]]
    listed = ", ".join(f"{stem[:2]} {s / 60:.0f}" for stem, (s, _) in seconds.items())
    total = sum(s for s, _ in seconds.values())
    where = machines([r for family in NOTEBOOK_FAMILIES.values() for r in stored_runs(profile, family)])
    return (f"**From scratch in all** (`make figures-fresh`): {total / 3600:.1f} h of stored "
            f"training runs (minutes per notebook: {listed}), as timed on the machines that made them "
            f"({where}; a run trained beside others counts for its share: run_seconds / workers)"
            + (f"; {', '.join(missing)} not stored yet, so more" if missing else "") + ".")


def write_readme(profile="default", path=None):
    """Replace the README text between BEGIN and END with report(profile); return the new README."""
    path = Path(path or profiles.project_root() / "README.md")
    text = path.read_text()
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{path} has no findings markers; put {BEGIN} and {END} where the findings go")
    new = pattern.sub(lambda _: f"{BEGIN}\n{report(profile)}{END}", text)
    path.write_text(new)
    return new


def readme_section(path=None):
    """The text between the README's findings markers (what write_readme wrote)."""
    text = Path(path or profiles.project_root() / "README.md").read_text()
    return text.split(BEGIN, 1)[1].split(END, 1)[0].lstrip("\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m adapterlab.findings", description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--write-readme", action="store_true", help="write the README's findings section")
    args = parser.parse_args()
    if args.write_readme:
        write_readme(args.profile)
    print(report(args.profile))
