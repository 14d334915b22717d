"""Figure definitions, one per family, and the registry that redraws every committed figure.

A definition turns a family's tidy table (data/results/<profile>/<family>.csv) into a `Figure`: plain
data, no drawing library. Its named views ("score", "change vs. no removal", "seed 1" ...) each hold
their marks: `Series` of points with a 95% interval over seeds (t, n - 1 df) (a difference to full fine-tuning is paired by
seed), ✕ on the runs that did not converge, reference lines, a heatmap, titles that say how to read
them ("one trained model, no error bars"). adapterlab.report.plots renders any Figure as a PNG and as
interactive HTML, and adapterlab.report.widgets lists the same views, so the three cannot drift apart.

    define(family, table)          the Figure of a family (a key of FIGURES)
    save(family, table, profile)   its PNG and HTML files under figures/<profile>/
    redraw(profile)                every registered figure from the stored tables, no notebook, no training:
                                   python -m adapterlab.report.figures --profile default

The teaching figures of notebooks 01-02 (kronecker_product, phm_*, methods_*, init_std_deviation)
illustrate code the notebook builds in front of the reader, so they stay drawn there; notebook 01's
explorer of the same measurement is a definition here (init_std_deviation), which writes no file.
"""
import argparse
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..experiments import families, profiles, stats
from . import labels
from .labels import SCALE

# seaborn's colorblind palette without its pale yellow (it reads badly on white), black added, and the
# yellow last; then five of Paul Tol's muted colours for the baselines without adapters (appended, so every earlier
# line keeps its colour): the k-th method line gets colour and marker k in every figure and both renderers.
# Matplotlib has 15 filled markers; the 16th line reuses the circle, in a colour no other line has
PALETTE = ("#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494",
           "#56b4e9", "#000000", "#ece133", "#882255", "#44aa99", "#332288", "#999933", "#aa4499")
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*", "<", ">", "h", "p", "d", "H", "8", "o")
# the order of method lines in legends (the param_performance CSV's `family` column; "adapters" is Houlsby)
LINE_ORDER = ("adapters", "full", "top-k", "layernorm", "bitfit", "pfeiffer", "adapter-lowrank", "adapterdrop",
              "phm", "compacter", "compacter++", "head-only", "lora", "prompt-tuning-R", "prompt-tuning-T",
              "intrinsic-said")


@dataclass
class Series:
    """One legend entry: points (y already × SCALE) with the half-width of their 95% band or bars (`err`,
    None for single runs) and the runs that did not converge (`bad_x`, `bad_y`), drawn as ✕ in its colour."""
    name: str
    x: list
    y: list
    err: list | None = None
    bad_x: list = field(default_factory=list)
    bad_y: list = field(default_factory=list)
    color: str = "#000000"
    marker: str = "o"
    line: bool = True  # joined, with a band; False: separate markers with error bars
    text: list | None = None  # a label beside each point
    area: list | None = None  # marker area per point (points²), proportional to memory
    hover: list | None = None  # more text per point, for the interactive figure


@dataclass
class Heatmap:
    z: list  # upper-triangular matrix × SCALE, NaN below the diagonal
    ticks: list  # the rows' labels, and the columns' unless `columns` says otherwise
    colorbar: str
    diverging: bool
    lines: dict  # reference values on the colour bar: name -> value
    outline: list  # cells to outline: (row, column, colour)
    columns: list | None = None  # the columns' labels when they are not the rows'
    limits: tuple | None = None  # (low, high) of the colour scale, shared by heatmaps drawn to be compared
    hover: str = "%{y}, %{x}: %{z:.2f}"  # the interactive figure's text for a cell (plotly's template)


@dataclass
class View:
    title: str  # first line: what is plotted; the next: how to read it (noise, ✕, a single run)
    xlabel: str
    ylabel: str
    xlog: bool = True
    series: list = field(default_factory=list)
    hlines: list = field(default_factory=list)  # reference lines: (name, y, colour)
    heatmap: Heatmap | None = None
    xticks: list | None = None  # exactly these x ticks (few sizes on a log axis)
    sizes: list = field(default_factory=list)  # a key of marker areas: (label, area)
    task: str = ""
    ylog: bool = False


@dataclass
class Figure:
    name: str
    views: dict  # view name -> View, in the order every control lists them


# --------------------------------------------------------------------------- shared rules


def colors(keys):
    """key -> (colour, marker): a method line keeps its slot in every figure; other keys (tasks, methods
    outside LINE_ORDER) take the free slots in order of appearance."""
    keys = list(dict.fromkeys(labels.method_line(str(k)) for k in keys))
    slots = {k: LINE_ORDER.index(k) for k in keys if k in LINE_ORDER}
    # when the method lines hold every slot, further keys reuse them in order (a repeat beats a crash)
    free = [i for i in range(len(PALETTE)) if i not in slots.values()] or list(range(len(PALETTE)))
    slots |= {k: free[i % len(free)] for i, k in enumerate(k for k in keys if k not in slots)}
    return {k: (PALETTE[i], MARKERS[i]) for k, i in slots.items()}


def _style(keys, key):
    return colors(keys)[labels.method_line(str(key))]


def ci95(values):
    """The half-width of the 95% interval of the mean over seeds: t_{0.975, n-1} x SE (4.30 SE for three
    seeds, where 2 SE would cover about 82%); NaN for a single run."""
    return stats.welch(values, 0.0).half_width(0.95)


def _converged(rows):
    return rows["converged"].astype(bool) if "converged" in rows else pd.Series(True, index=rows.index)


def _series(name, rows, x, y, style, **kw):
    """The seed means of `y` at each `x` with their 95% interval (t, n - 1 df), and ✕ on each run that did not converge."""
    g, bad = rows.groupby(x, sort=True)[y], rows[~_converged(rows)]
    err = g.agg(ci95) * SCALE
    return Series(name, list(g.mean().index), list(g.mean() * SCALE), None if err.isna().all() else list(err),
                  list(bad[x]), list(bad[y] * SCALE), *style, **kw)


def _check(df, needed, family):
    if (missing := [c for c in needed if c not in df.columns]) or df.empty:
        raise ValueError(f"{family}: the table lacks column(s) {missing} or has no rows; pass the table of "
                         f"data/results/<profile>/{family}.csv (tables.{family}), got columns {list(df.columns)}")


def _noise(rows):
    """How to read a view's marks, for its title: what a point is, and what ✕ means."""
    seeds = sorted(rows["seed"].unique()) if "seed" in rows else []
    text = f"mean of {len(seeds)} seeds, 95% CI (t, {len(seeds) - 1} df)" if len(seeds) > 1 else f"seed {seeds[0]} only: no error bars"
    return text + "; ✕ a run that did not converge" * bool((~_converged(rows)).any())


def _per_task(df):
    """(task, its rows, the prefix of its view names: none when the table has one task)."""
    tasks = list(dict.fromkeys(df["task"].astype(str)))
    return [(t, df[df["task"].astype(str) == t].copy(), f"{t}: " * (len(tasks) > 1)) for t in tasks]


def _majority(rows, color="#808080"):
    if "baseline" in rows and rows["baseline"].notna().any():
        return [("majority class", float(rows["baseline"].mean()) * SCALE, color)]
    return []


# --------------------------------------------------------------------------- near-identity init (notebook 01)


def init_std_deviation(df):
    """Notebook 01: how far Houlsby adapters inserted with init std σ move a frozen backbone's last hidden
    states before any training (‖ΔH‖ / ‖H‖), one view per std of the sweep: the mean over initialisations
    against σ with that std starred on it and, where a row has them (`per_token`: a list per row), each
    token's own relative change at that std. Columns: init_std, seed, deviation[, per_token]."""
    _check(df, ["init_std", "seed", "deviation"], "init_std_deviation")
    mean, n = df.groupby("init_std")["deviation"].mean(), df["seed"].nunique()
    curve, marked = PALETTE[0], PALETTE[1]
    views = {}
    for std, rows in df.groupby("init_std", sort=True):
        tokens = next(((seed, list(v)) for seed, v in zip(rows["seed"], rows["per_token"])
                       if isinstance(v, (list, tuple, np.ndarray))), None) if "per_token" in rows else None
        spread = f"; tokens of seed {tokens[0]}: {min(tokens[1]):.1e} to {max(tokens[1]):.1e}" if tokens else ""
        view = views[f"init std {std:.0e}"] = View(
            f"Near-identity init: relative change of the last hidden states at init std {std:.0e}\n"
            f"{mean[std]:.1e} of their size (mean of {n} initialisation(s)){spread}",
            "adapter init std σ (log scale)", "relative change of the last hidden states (log scale)", ylog=True)
        view.series.append(Series(f"mean of {n} initialisation(s)", list(mean.index), list(mean.values),
                                  color=curve, marker="o"))
        if tokens:
            view.series.append(Series(f"each token (seed {tokens[0]})", [std] * len(tokens[1]), tokens[1],
                                      color=marked, marker="o", line=False, area=[12] * len(tokens[1])))
        view.series.append(Series("this init std", [std], [mean[std]], color=marked, marker="*", line=False,
                                  area=[260]))
    return Figure("init_std_deviation", views)


# --------------------------------------------------------------------------- layer removal


def layer_removal_grid(rows):
    """One task's spans as an L × L matrix of fractions: z[i, j] = the score with the adapters of layers
    i..j removed (NaN below the diagonal); its layers; the score with every adapter in place."""
    layers = sorted({*rows["first_layer"].astype(int), *rows["last_layer"].astype(int)})
    z = np.full((len(layers), len(layers)), np.nan)
    for r in rows.itertuples():
        z[layers.index(int(r.first_layer)), layers.index(int(r.last_layer))] = r.value
    return z, layers, float(rows["full_value"].iloc[0])


def layer_removal(df, span=None):
    """Houlsby Fig. 6 left/centre, per task: the validation score with the adapters of layers first..last
    removed ("score") and its change against no removal. One trained model, so no error bars; `span`
    (first, last) outlines one span (the explorer's pick)."""
    _check(df, ["task", "first_layer", "last_layer", "value", "full_value"], "layer_removal")
    views = {}
    for t, rows, prefix in _per_task(df):
        (z, layers, full), metric = layer_removal_grid(rows), str(rows["metric"].iloc[0])
        unit, n, majority = labels.metric_unit(metric), len(layers), _majority(rows)
        outline = [(k, k, "black") for k in range(n)] + [(0, n - 1, "white")]
        outline += [(layers.index(span[0]), layers.index(span[1]), "#E69F00")] if span else []
        facts = [f"no removal {full * SCALE:.1f}{unit}", f"all removed {z[0, -1] * SCALE:.1f}{unit}",
                 *[f"majority class {y:.1f}{unit}" for _, y, _ in majority]]
        run = "one trained model, no error bars" + "; ✕ its run did not converge" * (not _converged(rows).all())
        for mode, rel in (("score", False), ("change vs. no removal", True)):
            views[prefix + mode] = View(
                f"{t}: {'change in ' * rel}validation {labels.metric_name(metric)} with adapters removed from layers "
                f"first…last\n{' · '.join(facts)}\n{run}; outlined: one layer; white: all layers",
                "last layer with adapters removed", "first layer with adapters removed", False, task=t,
                heatmap=Heatmap(((z - full * rel) * SCALE).tolist(), layers,
                                labels.metric_label(metric, rel) + " vs. no removal" * rel, rel,
                                {"no removal": full * SCALE * (not rel), **{k: y - full * SCALE * rel
                                                                           for k, y, _ in majority}}, outline,
                                hover="layers %{y}–%{x} removed: %{z:.2f}"))
    return Figure("layer_removal", views)


# --------------------------------------------------------------------------- init scale


def init_scale(df):
    """Houlsby Fig. 6 right: the validation score against the adapters' init std, one line per task.
    Views: the seed mean with its 95% interval, then each seed alone (its title names the seed). Rows whose `source` is
    "extra" (trained live in the explorer) are open diamonds, kept out of the mean."""
    _check(df, ["task", "init_std", "value", "seed"], "init_scale")
    extra = df["source"].eq("extra") if "source" in df else pd.Series(False, index=df.index)
    sweep, split, tasks = df[~extra], families.SPLITS["init_scale"], list(dict.fromkeys(df["task"].astype(str)))
    seeds = sorted(sweep["seed"].unique())
    views = {}
    each = [(f"seed {s}", sweep[sweep["seed"] == s]) for s in seeds] if len(seeds) > 1 else []
    for mode, rows in [("mean, 95% CI", sweep), *each]:
        view = views[mode] = View(f"Houlsby adapters: {split} score vs. initial weight scale\n{_noise(rows)}",
                                  "standard deviation of the adapter weights at initialisation (log scale)",
                                  f"{split} " + labels.metric_label(str(df["metric"].iloc[0])))
        for t in tasks:
            mine, live, style = rows[rows["task"].astype(str) == t], df[extra & (df["task"].astype(str) == t)], \
                _style(tasks, t)
            view.series.append(_series(t, mine, "init_std", "value", style))
            if len(live):
                view.series.append(Series(f"{t}: trained live", list(live["init_std"]), list(live["value"] * SCALE),
                                          color=style[0], marker="D", line=False))
            view.hlines += [(f"{t}: " * (len(tasks) > 1) + k, y, style[0]) for k, y, _ in _majority(mine)]
    return Figure("init_scale", views)


# --------------------------------------------------------------------------- parameters vs performance


def _dodge(series, step, close=0.03):
    """Spread points of different series whose x lie within `close` decades of each other by `step`
    decades, so that neither hides the other (BitFit, Adapter-LowRank and Compacter train 2.7e4
    parameters each); the exact x goes into the point's hover text. True when it moved a point."""
    points = sorted((np.log10(x), k, i) for k, s in enumerate(series) for i, x in enumerate(s.x))
    cuts = [0, *[j + 1 for j in range(len(points) - 1) if points[j + 1][0] - points[j][0] > close], len(points)]
    for cluster in (points[a:b] for a, b in zip(cuts, cuts[1:]) if b - a > 1):
        for rank, (_, k, i) in enumerate(cluster):
            s, shift = series[k], 10 ** (step * (rank - (len(cluster) - 1) / 2))
            s.hover = s.hover or [""] * len(s.x)
            s.hover[i] += f" · x {s.x[i]:,.6g}, drawn shifted"
            s.bad_x = [b * shift if b == s.x[i] else b for b in s.bad_x]
            s.x[i] *= shift
    return len(cuts) < len(points) + 1

def param_performance(df):
    """Houlsby Figs. 3/4 and Compacter Fig. 1, per task, one colour per method line. Views: the score
    minus full fine-tuning's (paired by seed) against trainable parameters; the score itself; the share
    of parameters trained with marker area ∝ peak training memory, and a key of round memories."""
    _check(df, ["task", "method", "label", "trainable", "percent", "value", "peak_memory_mb"], "param_performance")
    split, views = families.SPLITS["param_performance"], {}
    for t, rows, prefix in _per_task(df):
        rows["line"] = (rows["family"] if "family" in rows else rows["method"].map(labels.method_line)).astype(str)
        if "value_minus_full" not in rows:
            rows["value_minus_full"] = rows["value"] - rows.loc[rows["method"] == "full", "value"].mean()
        metric, memory = str(rows["metric"].iloc[0]), rows.groupby("label")["peak_memory_mb"].mean()
        lines = sorted(dict.fromkeys(rows["line"]), key=lambda k: LINE_ORDER.index(k) if k in LINE_ORDER else 99)
        for mode, x, y in (("vs. full fine-tuning", "trainable", "value_minus_full"), ("score", "trainable", "value"),
                           ("% trained, memory", "percent", "value")):
            rel, memory_view = y != "value", x == "percent"
            view = views[prefix + mode] = View(
                f"{'Share of parameters trained' if memory_view else 'Trainable parameters'} vs. {split} score"
                + ", relative to full fine-tuning" * rel + f" ({t})\n{_noise(rows)}"
                + "\nmarker area ∝ peak training memory" * memory_view,
                "trained parameters, % of the base model (log scale)" if memory_view
                else "trainable parameters (log scale)",
                f"{split} " + labels.metric_label(metric, rel) + " vs. full fine-tuning" * rel, task=t,
                hlines=[("full fine-tuning level", 0.0, "#000000")] if rel else [] if memory_view else _majority(rows))
            for key in lines:
                mine = rows[rows["line"] == key]
                order = list(mine.groupby(x, sort=True)["label"].first())
                s = _series(labels.method_name(key), mine, x, y, colors(lines)[key], line=len(order) > 1,
                            hover=list(order))  # one setting: the legend names it, no label on the point
                s.text = [lab.split(" ")[1] for lab in order] if len(order) > 1 else None  # "m=64", "k=3", "n=4"
                if memory_view:
                    s.line, s.area = False, [memory[lab] / memory.max() * 520 for lab in order]
                    s.hover = [f"{lab}: peak memory {memory[lab]:,.0f} MB" for lab in order]
                view.series.append(s)
            view.title += "; nearly equal x drawn side by side" * _dodge(view.series, 0.1 if memory_view else 0.06)
            top = float(f"{memory.max():.1g}")  # the size key: a round memory near the largest, its half, its quarter
            view.sizes = [(f"{m:,.0f} MB", m / memory.max() * 520) for m in (top / 4, top / 2, top)] * memory_view
    return Figure("param_performance", views)


# --------------------------------------------------------------------------- low resource


def low_resource(df):
    """Compacter Fig. 4: the test score against the number of training examples, one line per method
    (seed mean, 95% CI); a second view shows each method minus full fine-tuning, paired by seed."""
    _check(df, ["task", "method", "train_size", "seed", "value"], "low_resource")
    split, views = families.SPLITS["low_resource"], {}
    for t, rows, prefix in _per_task(df):
        full = rows[rows["method"] == "full"].set_index(["train_size", "seed"])["value"]
        rows["delta"] = rows["value"] - [full.get((n, s), np.nan) for n, s in zip(rows["train_size"], rows["seed"])]
        metric, methods = str(rows["metric"].iloc[0]), list(dict.fromkeys(rows["method"].astype(str)))
        for mode, y in (("score", "value"), ("minus full fine-tuning", "delta")):
            rel = y == "delta"
            views[prefix + mode] = View(
                f"Low-resource setting: {split} score vs. training set size ({t})"
                + ", minus full fine-tuning (paired by seed)" * rel + f"\n{_noise(rows)}",
                "training examples (log scale)", f"{split} " + labels.metric_label(metric, rel)
                + " vs. full fine-tuning" * rel, xticks=sorted(int(n) for n in rows["train_size"].unique()), task=t,
                series=[_series(labels.method_name(m), rows[rows["method"] == m], "train_size", y, _style(methods, m))
                        for m in methods if not (rel and m == "full")],
                hlines=[("full fine-tuning", 0.0, _style(methods, "full")[0])] if rel else _majority(rows))
    return Figure("low_resource", views)


# --------------------------------------------------------------------------- learning curves


BACKBONE_NAMES = {"default": "MiniLM-L6", "tiny": "tiny random BERT"}


def learning_curves(records):
    """Notebook 03: training loss and validation score against the step (two views), one line per method.
    `records`: {method: its run's record}. One run per method, so no error bars; ✕ on the last point of a
    run that did not converge."""
    if not records:
        raise ValueError("learning_curves: no records; pass {method: record} of notebook 03's runs")
    first, methods, views = next(iter(records.values())), list(records), {}
    head = f"{BACKBONE_NAMES.get(first['backbone'], first['backbone'])} on {first['config']['task']}"
    bad = [m for m, r in records.items() if not r.get("converged", True)]
    for mode, key, scale, ylabel in (("training loss", "train_loss", 1, "training loss (cross-entropy)"),
                                     ("validation", "validation", SCALE, labels.metric_label(first["metric"]))):
        view = View(f"{head}: {mode}\none run per method, no error bars"
                    + "; ✕ the last point of a run that did not converge" * bool(bad), "training step", ylabel, False)
        for m, r in records.items():
            x, y = zip(*[(p["step"], p[key] * scale) for p in r["curve"] if p.get(key) is not None])
            view.series.append(Series(labels.method_name(m), list(x), list(y), None, list(x[-1:]) * (m in bad),
                                      list(y[-1:]) * (m in bad), *_style(methods, m)))
        views[mode] = view
    return Figure("learning_curves", views)


def teaching_records(profile, root=None):
    """{method: record} of notebook 03's runs on its first task as the profile plans them, from the store
    under `root`."""
    from .provenance import stored_runs

    first = profiles.resolve(profile).tasks[0]
    return {r["method"]: r for r in stored_runs(profile, "teaching", root) if r["task"] == first}


# --------------------------------------------------------------------------- a stream of tasks

# a learner's line takes its method's colour: the adapters Houlsby's, a fine-tuned copy full fine-tuning's
LEARNER_LINES = {"sequential": "sequential", "adapters": "adapters", "copies": "full"}


def stream(df):
    """Notebook 08, per order: each learner's accuracy matrix (heatmaps on one colour scale, so that a row
    that fades reads the same in every panel); each learner's forgetting after each arrival (the earlier tasks'
    drop since their own training, as the reading measures it: findings.stream_forgetting, its 95% interval
    over seeds and test examples); the storage bill (bytes on disk in units of one fine-tuned model)."""
    # one definition of the matrix, of forgetting and its noise, shared with the reading
    from .findings import stream_forgetting, stream_matrix

    _check(df, ["learner", "order", "order_name", "seed", "task", "time", "value", "test_correct", "test_examples",
                "stored_models"], "stream")
    seeds, styles = sorted(df["seed"].unique()), colors(LEARNER_LINES.values())
    over = f"mean of {len(seeds)} seeds" if len(seeds) > 1 else f"seed {seeds[0]} only"
    matrices, views = {}, {}
    for order, learner in df.groupby(["order", "learner"]).groups:
        matrices[order, learner] = (stream_matrix(df, learner, order) * SCALE).to_numpy()
    cells = np.concatenate([m[np.isfinite(m)] for m in matrices.values()])
    for order, rows in df.groupby("order"):
        ticks, name = rows["order_name"].iloc[0].split(" > "), f"order {order + 1}"
        seen = list(range(1, len(ticks) + 1))
        for learner, title in labels.LEARNER_NAMES.items():
            views[f"{name}: {title}"] = View(
                f"{title}, {name}: test accuracy after each arrival\n{over}; a constant row: nothing forgotten",
                "tasks seen", "task, in arrival order", False,
                heatmap=Heatmap(matrices[order, learner].tolist(), ticks, "test accuracy (%)", False, {}, [],
                                columns=seen, limits=(float(cells.min()), float(cells.max())),
                                hover="%{y} after %{x} task(s): %{z:.1f} %"))
        noise = "95% CI over seeds and test examples" if len(seeds) > 1 else "95% CI over test examples (one seed)"
        forgetting = views[f"{name}: forgetting"] = View(
            f"Forgetting, {name}: earlier tasks' accuracy on arrival minus after k tasks\n{over}, {noise}\n"
            "no band: identical predictions, a drop of exactly 0",
            "tasks seen (k)", "forgetting (percentage points)", False, xticks=seen[1:],
            hlines=[("no forgetting", 0.0, "#808080")])
        storage = views[f"{name}: storage bill"] = View(
            f"Storage bill, {name}: bytes on disk after each arrival, measured from the saved files\n",
            "tasks seen", "bytes stored (× one fine-tuned model)", False, xticks=seen)
        for learner, title in labels.LEARNER_NAMES.items():
            diffs = [stream_forgetting(df, learner, order, k) for k in seen[1:]]
            err = [d.half_width() * SCALE for d in diffs]
            color, marker = styles[LEARNER_LINES[learner]]
            forgetting.series.append(Series(title, seen[1:], [d.estimate * SCALE for d in diffs],
                                            None if np.isnan(err).all() else err, color=color, marker=marker))
            bill = rows[rows["learner"] == learner].drop_duplicates(["seed", "time"]).groupby("time")["stored_models"]
            spread = bill.agg(ci95)
            storage.series.append(Series(title, list(bill.mean().index), list(bill.mean()),
                                         None if spread.isna().all() else list(spread), color=color, marker=marker))
        storage.title += (f"{over}, 95% CI (t, {len(seeds) - 1} df)" if any(s.err for s in storage.series) else
                          f"{over}: the same bytes for every seed, no error bars" if len(seeds) > 1 else
                          f"{over}: no error bars")
    return Figure("stream", views)


# --------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class Entry:
    define: object  # table -> Figure
    source: str  # the file of data/results/<profile>/ it reads
    png: dict  # file stem -> the views drawn side by side in that PNG
    html: dict  # file stem -> the views its buttons switch between (None: all)
    family: str | None = None  # the family whose notebook draws it (None: the entry's own name)
    load: object = None  # (profile, root, path of source) -> its table (None: the CSV as it is)


# notebook 08's files: each learner's matrices of every order in one grid, the forgetting and the bill of every order
STREAM_FILES = {"stream_matrices": list(labels.LEARNER_NAMES.values()), "stream_forgetting": ["forgetting"],
                "stream_storage": ["storage bill"]}

FIGURES = {
    "layer_removal": Entry(layer_removal, "layer_removal.csv",
                           {"layer_removal_heatmap": ["score"],
                            "layer_removal_heatmap_relative": ["change vs. no removal"]},
                           {"layer_removal_heatmap": None}),
    "init_scale": Entry(init_scale, "init_scale.csv", {"init_scale": ["mean, 95% CI"]}, {"init_scale": None}),
    "param_performance": Entry(param_performance, "param_performance.csv",
                               {"param_performance_params": ["vs. full fine-tuning"],
                                "param_performance_tradeoff": ["% trained, memory"]},
                               {"param_performance_params": ["vs. full fine-tuning", "score"],
                                "param_performance_tradeoff": ["% trained, memory"]}),
    "low_resource": Entry(low_resource, "low_resource.csv", {"low_resource": ["score"]}, {"low_resource": None}),
    "learning_curves": Entry(learning_curves, "teaching.jsonl", {"learning_curves": ["training loss", "validation"]},
                             {"learning_curves": None}, family="teaching",
                             load=lambda profile, root, path: teaching_records(profile, root)),
    "stream": Entry(stream, "stream.csv", STREAM_FILES, STREAM_FILES),
    # notebook 01 draws init_std_deviation.png by hand; this definition is its explorer only: no file
    "init_std_deviation": Entry(init_std_deviation, "init_std_deviation.csv", {}, {}),
}


def define(family, table, **options):
    if family not in FIGURES:
        raise ValueError(f"no figure family {family!r}; choose one of {list(FIGURES)}")
    return FIGURES[family].define(table, **options)


def save(family, table, profile, root=None, **options):
    """Write a family's PNG (one per task) and HTML files under <root>/figures/<profile>/; return their paths."""
    from . import plots

    figure, entry, paths = define(family, table, **options), FIGURES[family], []
    tasks = list(dict.fromkeys(v.task for v in figure.views.values()))
    pick = lambda modes, t=None: [n for n, v in figure.views.items()  # noqa: E731
                                  if (modes is None or n.split(": ")[-1] in modes) and t in (None, v.task)]
    for stem, modes in entry.png.items():
        for t in tasks:
            name = stem + ("" if len(tasks) == 1 else "_" + t.replace("/", "-"))
            paths.append(plots.save_figure(plots.png(figure, pick(modes, t)), name, profile, root))
    html = [plots.save_figure(plots.html(figure, pick(modes)), stem, profile, root)
            for stem, modes in entry.html.items()]
    return paths + html


def _read_csv(profile, root, path):
    return pd.read_csv(path)


def redraw(profile, root=None):
    """Redraw every registered figure of a profile from its stored tables under `root` (no notebook, no
    training)."""
    p = profiles.resolve(profile)
    folder, paths = profiles.results_dir(p, root), []
    for family, entry in FIGURES.items():
        if (folder / entry.source).exists():
            table = (entry.load or _read_csv)(p, root, folder / entry.source)
            if len(table):  # nothing stored under the current plan (e.g. 03's runs not retrained yet): keep the file
                paths += save(family, table, p, root)
    return paths


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m adapterlab.report.figures", description=redraw.__doc__)
    parser.add_argument("--profile", default="default")
    print("\n".join(str(p) for p in redraw(parser.parse_args().profile)))
