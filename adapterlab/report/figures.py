"""Figures: the plain-data Figure every definition returns, the pieces every family's definitions share, and the
registry that redraws every committed figure. A family's own definitions are in its module (Family.figures).

A definition turns a family's tidy table (data/results/<profile>/<family>.csv) into a `Figure`: plain
data, no drawing library. Its named views ("score", "change vs. no removal", "seed 1" ...) each hold
their marks: `Series` of points with a 95% interval over seeds (t, n - 1 df) (a difference to full fine-tuning is paired by
seed), ✕ on the runs that did not converge, reference lines, a heatmap, titles that say how to read
them ("one trained model, no error bars"). adapterlab.report.plots renders any Figure as a PNG and as
interactive HTML, and adapterlab.report.widgets lists the same views, so the three cannot drift apart.

    define(name, table)            the Figure of a figure (a key of registered(), or its family's one figure)
    save(name, table, profile)     its PNG and HTML files under figures/<profile>/
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

from .csvs import read_csv
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


def key_style(keys, key):
    return colors(keys)[labels.method_line(str(key))]


def ci95(values):
    """The half-width of the 95% interval of the mean over seeds: t_{0.975, n-1} x SE (4.30 SE for three
    seeds, where 2 SE would cover about 82%); NaN for a single run."""
    return stats.welch(values, 0.0).half_width(0.95)


def converged_rows(rows):
    return rows["converged"].astype(bool) if "converged" in rows else pd.Series(True, index=rows.index)


def seed_series(name, rows, x, y, style, **kw):
    """The seed means of `y` at each `x` with their 95% interval (t, n - 1 df), and ✕ on each run that did not converge."""
    g, bad = rows.groupby(x, sort=True)[y], rows[~converged_rows(rows)]
    err = g.agg(ci95) * SCALE
    return Series(name, list(g.mean().index), list(g.mean() * SCALE), None if err.isna().all() else list(err),
                  list(bad[x]), list(bad[y] * SCALE), *style, **kw)


def check_columns(df, needed, family):
    if (missing := [c for c in needed if c not in df.columns]) or df.empty:
        raise ValueError(f"{family}: the table lacks column(s) {missing} or has no rows; pass the table of "
                         f"data/results/<profile>/{family}.csv (tables.{family}), got columns {list(df.columns)}")


def noise_text(rows, x=None):
    """How to read a view's marks, for its title: what a point is, and what ✕ means. `x`: the column a point is
    drawn at, for a sweep whose points have different numbers of seeds (each interval has its own df)."""
    seeds = sorted(rows["seed"].unique()) if "seed" in rows else []
    per_point = sorted(set(rows.groupby(x)["seed"].nunique())) if x and seeds else []
    text = (f"mean of {len(seeds)} seeds, 95% CI (t, {len(seeds) - 1} df)" if len(seeds) > 1 else
            f"seed {seeds[0]} only: no error bars")
    if len(per_point) > 1:
        text = f"mean of {per_point[0]} to {per_point[-1]} seeds a point, 95% CI (t, seeds - 1 df)"
    return text + "; ✕ a run that did not converge" * bool((~converged_rows(rows)).any())


def per_task(df):
    """(task, its rows, the prefix of its view names: none when the table has one task)."""
    tasks = list(dict.fromkeys(df["task"].astype(str)))
    return [(t, df[df["task"].astype(str) == t].copy(), f"{t}: " * (len(tasks) > 1)) for t in tasks]


def majority_line(rows, color="#808080"):
    if "baseline" in rows and rows["baseline"].notna().any():
        return [("majority class", float(rows["baseline"].mean()) * SCALE, color)]
    return []


def span_grid(rows):
    """One task's spans as an L × L matrix of fractions: z[i, j] = the score with the adapters of layers
    i..j removed (NaN below the diagonal); its layers; the score with every adapter in place."""
    layers = sorted({*rows["first_layer"].astype(int), *rows["last_layer"].astype(int)})
    z = np.full((len(layers), len(layers)), np.nan)
    for r in rows.itertuples():
        z[layers.index(int(r.first_layer)), layers.index(int(r.last_layer))] = r.value
    return z, layers, float(rows["full_value"].iloc[0])


# --------------------------------------------------------------------------- near-identity init (notebook 01)


def init_std_deviation(df):
    """Notebook 01: how far Houlsby adapters inserted with init std σ move a frozen backbone's last hidden
    states before any training (‖ΔH‖ / ‖H‖), one view per std of the sweep: the mean over initialisations
    against σ with that std starred on it and, where a row has them (`per_token`: a list per row), each
    token's own relative change at that std. Columns: init_std, seed, deviation[, per_token]."""
    check_columns(df, ["init_std", "seed", "deviation"], "init_std_deviation")
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


# --------------------------------------------------------------------------- init scale


# --------------------------------------------------------------------------- parameters vs performance


def dodge(series, step, close=0.03):
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


# --------------------------------------------------------------------------- low resource


# --------------------------------------------------------------------------- learning curves


# --------------------------------------------------------------------------- a stream of tasks


# --------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class Entry:
    """One figure a family draws from its tables (Family.figures: {its name: Entry})."""
    define: object  # table -> Figure
    source: str  # the file of data/results/<profile>/ it reads
    png: dict  # file stem -> the views drawn side by side in that PNG
    html: dict  # file stem -> the views its buttons switch between (None: all)
    load: object = None  # (profile, root, path of source) -> its table (None: the CSV as it is)


# notebook 01 draws init_std_deviation.png by hand; this definition is its explorer only: no file
NOTEBOOK_01 = {"init_std_deviation": Entry(init_std_deviation, "init_std_deviation.csv", {}, {})}


def registered():
    """{figure name: (the family that draws it, or None for notebook 01's, its Entry)}, in notebook order."""
    out = {name: (family, entry) for family in families.registered() for name, entry in family.figures.items()}
    return out | {name: (None, entry) for name, entry in NOTEBOOK_01.items()}


def entry(name):
    """(family, Entry) of a figure by its name, or by its family's (the figure a family draws when it draws one)."""
    found = registered()
    if name in found:
        return found[name]
    try:
        family = families.get(name)
    except ValueError:
        family = None
    if family is not None and len(family.figures) == 1:
        return family, next(iter(family.figures.values()))
    raise ValueError(f"no figure {name!r}; choose one of {', '.join(found)}")


def define(name, table, **options):
    """The Figure of a figure (or of its family's one figure) drawn from `table`."""
    return entry(name)[1].define(table, **options)


def save(name, table, profile, root=None, **options):
    """Write a figure's PNG (one per task) and HTML files under <root>/figures/<profile>/; return their paths."""
    from . import plots

    figure, (_, found), paths = define(name, table, **options), entry(name), []
    tasks = list(dict.fromkeys(v.task for v in figure.views.values()))
    pick = lambda modes, t=None: [n for n, v in figure.views.items()  # noqa: E731
                                  if (modes is None or n.split(": ")[-1] in modes) and t in (None, v.task)]
    for stem, modes in found.png.items():
        for t in tasks:
            file = stem + ("" if len(tasks) == 1 else "_" + t.replace("/", "-"))
            paths.append(plots.save_figure(plots.png(figure, pick(modes, t)), file, profile, root))
    html = [plots.save_figure(plots.html(figure, pick(modes)), stem, profile, root)
            for stem, modes in found.html.items()]
    return paths + html


def _read_csv(profile, root, path):
    return read_csv(path)


def redraw(profile, root=None):
    """Redraw every registered figure of a profile from its stored tables under `root` (no notebook, no
    training)."""
    p = profiles.resolve(profile)
    folder, paths = profiles.results_dir(p, root), []
    for name, (_, found) in registered().items():
        if (folder / found.source).exists():
            table = (found.load or _read_csv)(p, root, folder / found.source)
            if len(table):  # nothing stored under the current plan (e.g. 03's runs not retrained yet): keep the file
                paths += save(name, table, p, root)
    return paths


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m adapterlab.report.figures", description=redraw.__doc__)
    parser.add_argument("--profile", default="default")
    print("\n".join(str(p) for p in redraw(parser.parse_args().profile)))
