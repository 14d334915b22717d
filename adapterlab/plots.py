"""Figure builders: seaborn/matplotlib for static images, plotly for interactive HTML.

Every figure is also written under figures/<profile>/ because widget state does
not survive a headless run. Interactive HTML files share one local copy of
plotly.js beside them (no CDN: they work offline; no megabytes inlined per file).

Each figure family has a static builder (returns a matplotlib Figure) and an
interactive one (returns a plotly Figure), both taking the family's tidy
DataFrame as experiments.py returns it (columns as in DESIGN.md "Result tables"):

    layer_removal_heatmap(df, task=None, relative=False)   Houlsby Fig. 6 left/centre
    layer_removal_heatmap_interactive(df)
    init_scale_plot(df) / init_scale_plot_interactive(df)  Houlsby Fig. 6 right
    param_performance_plot(df) / ..._interactive(df)       Houlsby Figs. 3/4
    param_performance_tradeoff(df) / ..._interactive(df)   Compacter Fig. 1
    param_performance_table(df)                            Compacter Table 3 (a DataFrame;
    param_performance_table_view(table)                    ... and a Styler that fits a notebook)
    low_resource_plot(df) / low_resource_plot_interactive(df)   Compacter Fig. 4
    learning_curves_plot(curves) / ..._interactive(curves)      notebook 03's training curves

Helpers the notebooks and widgets share: layer_removal_grid(df, task) (one task's
L × L matrix + no-removal value + majority baseline), param_performance_summary(df)
(means over seeds and the difference to full fine-tuning), method_label(method, size).
Static builders take filters (task/tasks, seeds, families, methods, sizes) so the
widgets can redraw a selection. Axis labels name the split a family's `value`
measures (SPLITS; a `split` column overrides it).

Metric values are stored as fractions (accuracy 0.83); figures show them x100,
as the papers do ("accuracy (%)", "MCC x 100"). Colours come from seaborn's
colorblind palette, one fixed colour (and marker) per method family in every
figure, static and interactive alike (FAMILY_ORDER); heatmaps use viridis, and a
blue-red diverging map centred on zero for changes.
"""
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import seaborn as sns
from matplotlib.colors import TwoSlopeNorm
from matplotlib.patches import Rectangle
from matplotlib.patheffects import withStroke
from matplotlib.transforms import Bbox

from . import profiles

# --------------------------------------------------------------------------- saving


def save_figure(fig, name, profile=None):
    """Write `fig` to figures/<profile>/<name>.png (matplotlib) or .html (plotly); return the path."""
    folder = profiles.figures_dir(profiles.get(profile) if not isinstance(profile, profiles.Profile) else profile)
    # Same figure -> same bytes, so redrawing from the cache leaves git clean: plotly would draw a random
    # div id per call, matplotlib stamps its version into the PNG.
    if hasattr(fig, "write_html"):  # plotly
        path = folder / f"{name}.html"
        fig.write_html(path, include_plotlyjs="directory", full_html=True, div_id=f"figure-{name}")
    else:  # matplotlib Figure (or a seaborn grid, which has .figure)
        figure = getattr(fig, "figure", fig)
        path = folder / f"{name}.png"
        figure.savefig(path, dpi=150, bbox_inches="tight", metadata={"Software": None})
    return Path(path)


# --------------------------------------------------------------------------- shared helpers

SCALE = 100  # fractions -> percent / "x 100", as the papers report
# seaborn's colorblind palette (Okabe-Ito-like), with its pale yellow moved last: it reads badly on white
# (and black added, so eleven method families get eleven colours)
PALETTE = [c for c in sns.color_palette("colorblind").as_hex() if c != "#ece133"] + ["#000000", "#ece133"]
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*", "<", ">", "h", "p")
PLOTLY_MARKERS = ("circle", "square", "diamond", "triangle-up", "triangle-down", "cross", "x", "star",
                  "triangle-left", "triangle-right", "hexagon", "pentagon")
HEATMAP_CMAP, DIVERGING_CMAP = "viridis", "RdBu"
PLOTLY_HEATMAP, PLOTLY_DIVERGING = "Viridis", "RdBu"

_METRIC_NAMES = {"accuracy": "accuracy", "f1": "F1", "mcc": "MCC", "spearman": "Spearman",
                 "pearson": "Pearson"}
_PERCENT_METRICS = {"accuracy", "f1"}

# method family -> display name; families not listed keep their own name
FAMILY_NAMES = {
    "full": "full fine-tuning", "top-k": "top-k layers", "layernorm": "LayerNorm only", "bitfit": "BitFit",
    "houlsby": "Houlsby adapters", "adapters": "Houlsby adapters", "pfeiffer": "Pfeiffer adapter",
    "adapter-lowrank": "Adapter-LowRank", "adapterdrop": "AdapterDrop", "phm": "PHM adapter",
    "compacter": "Compacter", "compacter++": "Compacter++",
}
# a fixed order: the order of legends, and each family's colour and marker (the k-th family gets
# PALETTE[k] and MARKERS[k] in every figure, static and interactive; "adapters" is Houlsby's other name)
FAMILY_ORDER = ("houlsby", "adapters", "full", "top-k", "layernorm", "bitfit", "pfeiffer", "adapter-lowrank",
                "adapterdrop", "phm", "compacter", "compacter++")
_FAMILY_SLOT = {f: k for k, f in enumerate(f for f in FAMILY_ORDER if f != "adapters")}
_FAMILY_SLOT["adapters"] = _FAMILY_SLOT["houlsby"]


def metric_label(metric, relative=False):
    """Axis text for a metric, with its unit: 'accuracy (%)', 'MCC × 100', 'Δ accuracy (points)'."""
    name = _METRIC_NAMES.get(str(metric), str(metric))
    if relative:
        return f"Δ {name} ({'percentage points' if metric in _PERCENT_METRICS else 'points × 100'})"
    return f"{name} (%)" if metric in _PERCENT_METRICS else f"{name} × 100"


def _unit(metric):
    return " %" if metric in _PERCENT_METRICS else ""


def _delta_unit(metric):
    return " pp" if metric in _PERCENT_METRICS else " pts"


def _metrics_text(df):
    """One axis label for the metrics in df (several tasks may use different metrics)."""
    metrics = list(dict.fromkeys(df["metric"].astype(str))) if "metric" in df else ["value"]
    if len(metrics) == 1:
        return metric_label(metrics[0])
    return "validation metric × 100 (" + ", ".join(_METRIC_NAMES.get(m, m) for m in metrics) + ")"


# Which split a family's `value` column measures, as adapterlab.experiments documents it (a `split`
# column in the table overrides this): spans and init scales are scored on validation, the
# method comparisons on test (the best-on-validation state, tested once).
SPLITS = {"layer_removal": "validation", "init_scale": "validation", "param_performance": "test",
          "low_resource": "test"}


def _split(df, family):
    if "split" in df.columns and df["split"].notna().any():
        return str(df["split"].dropna().iloc[0])
    return SPLITS[family]


def _majority(rows):
    """The majority-class score in a table (column `baseline`, `majority` or `majority_baseline`), or None."""
    for column in ("baseline", "majority", "majority_baseline"):
        if column in rows.columns and rows[column].notna().any():
            return float(rows[column].dropna().mean())
    return None


def _check_columns(df, needed, family):
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(f"{family}: the DataFrame lacks column(s) {missing}; expected the columns of "
                         f"data/results/<profile>/{family}.csv (see DESIGN.md 'Result tables'), "
                         f"got {list(df.columns)}")
    if df.empty:
        raise ValueError(f"{family}: the DataFrame is empty; run adapterlab.experiments first")


def _tasks(df, task=None):
    tasks = list(dict.fromkeys(df["task"].astype(str)))
    if task is not None:
        if task not in tasks:
            raise ValueError(f"task {task!r} is not in the results; choose one of {tasks}")
        return [task]
    return tasks


def _slots(keys):
    """key -> style index: a method family's own slot (the same in every figure); other keys (tasks,
    unknown methods) take the slots not used by the families present, in order of appearance."""
    keys = list(dict.fromkeys(str(k) for k in keys))
    slots = {k: _FAMILY_SLOT[k] for k in keys if k in _FAMILY_SLOT}
    free = [i for i in range(len(PALETTE)) if i not in slots.values()] or list(range(len(PALETTE)))
    others = [k for k in keys if k not in slots]
    return {**slots, **{k: free[i % len(free)] for i, k in enumerate(others)}}


def _colors(keys):
    """key -> colour: one colour per method family across the package (see _slots)."""
    return {k: PALETTE[i % len(PALETTE)] for k, i in _slots(keys).items()}


def _markers(keys, plotly=False):
    pool = PLOTLY_MARKERS if plotly else MARKERS
    return {k: pool[i % len(pool)] for k, i in _slots(keys).items()}


def _seed_summary(df, by, x):
    """Mean, min and max of `value` over seeds (and repeats) for each (by..., x), sorted by x."""
    g = df.groupby([*by, x], sort=True)["value"]
    out = g.agg(mean="mean", low="min", high="max", n="count").reset_index()
    return out.sort_values([*by, x]).reset_index(drop=True)


def _mark_unconverged(ax, rows, x, y):
    """An x over every run (or seed mean) in rows whose `converged` column is false (the rule of
    adapterlab.train.convergence); one legend entry per axes."""
    if "converged" not in rows or rows["converged"].astype(bool).all():
        return
    bad = rows[~rows["converged"].astype(bool)]
    named = "not converged" in ax.get_legend_handles_labels()[1]
    ax.scatter(bad[x], bad[y] * SCALE, marker="x", s=45, color="black", lw=1.3, zorder=5,
               label="_nolegend_" if named else "not converged")


def _grid(n_panels, width=5.2, height=4.0, max_cols=3):
    cols = min(n_panels, max_cols)
    rows = int(np.ceil(n_panels / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[n_panels:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n_panels])


def _log_linear_buttons(decades=True):
    """Buttons switching the x axis between log (ticks at decades) and linear (automatic ticks)."""
    log = {"xaxis.type": "log", **({"xaxis.dtick": 1} if decades else {})}
    linear = {"xaxis.type": "linear", **({"xaxis.dtick": None} if decades else {})}
    return [dict(label="log x", method="relayout", args=[log]),
            dict(label="linear x", method="relayout", args=[linear])]


def _menu(buttons, x, y, direction="down", kind="dropdown", active=0):
    return dict(buttons=buttons, direction=direction, type=kind, x=x, y=y, xanchor="left", yanchor="bottom",
                showactive=True, active=active, pad=dict(r=4, t=4), bgcolor="white")


# --------------------------------------------------------------------------- layer removal

# experiments.layer_removal names them full_value and baseline; the others are accepted too
_NO_REMOVAL_COLUMNS = ("full_value", "no_removal")
_MAJORITY_COLUMNS = ("baseline", "majority", "majority_baseline")


class LayerRemovalGrid:
    """One task's layer-removal results as an L × L matrix.

    z[i, j] is the validation metric (a fraction) with the adapters of layers i..j
    removed; NaN below the diagonal (j < i). no_removal is the metric with every
    adapter in place, majority the majority-class baseline (None when unknown).
    """

    def __init__(self, task, metric, layers, z, no_removal, majority):
        self.task, self.metric, self.layers, self.z = task, metric, list(layers), z
        self.no_removal, self.majority = no_removal, majority

    @property
    def all_removed(self):
        return self.z[0, -1]

    def relative(self):
        """z minus the no-removal value (NaN everywhere when that value is unknown)."""
        return self.z - (np.nan if self.no_removal is None else self.no_removal)

    def span(self, first, last):
        """(value, change vs no removal) of the span first..last (fractions)."""
        i, j = self.layers.index(first), self.layers.index(last)
        value = self.z[i, j]
        return value, (None if self.no_removal is None else value - self.no_removal)


def _special(df, columns, kinds):
    """A value given as a column (first non-null of `columns`) or as rows whose span is missing."""
    for c in columns:
        if c in df.columns and df[c].notna().any():
            return float(df[c].dropna().iloc[0])
    if "kind" in df.columns:
        hit = df[df["kind"].astype(str).str.lower().isin(kinds)]
        if len(hit):
            return float(hit["value"].iloc[0])
    return None


def layer_removal_grid(df, task=None):
    """The LayerRemovalGrid of one task (the first one when task is None).

    The no-removal value and the majority-class baseline come from the columns
    `full_value` and `baseline` (as experiments.layer_removal writes them; also
    `no_removal`, `majority`), or from extra rows with empty layers whose `kind`
    column says "no_removal" / "majority".
    """
    _check_columns(df, ["task", "first_layer", "last_layer", "value"], "layer_removal")
    task = _tasks(df, task)[0]
    d = df[df["task"].astype(str) == task]
    metric = str(d["metric"].iloc[0]) if "metric" in d else "value"
    spans = d.dropna(subset=["first_layer", "last_layer"])
    spans = spans[(spans["first_layer"] >= 0) & (spans["last_layer"] >= 0)]
    if "kind" in spans.columns:
        spans = spans[spans["kind"].isna() | spans["kind"].astype(str).str.lower().isin(("span", "removed"))]
    layers = sorted({int(v) for v in spans["first_layer"]} | {int(v) for v in spans["last_layer"]})
    index = {layer: k for k, layer in enumerate(layers)}
    z = np.full((len(layers), len(layers)), np.nan)
    for row in spans.itertuples():
        z[index[int(row.first_layer)], index[int(row.last_layer)]] = row.value
    no_removal = _special(d, _NO_REMOVAL_COLUMNS, {"no_removal", "none", "full"})
    majority = _special(d, _MAJORITY_COLUMNS, {"majority", "baseline"})
    return LayerRemovalGrid(task, metric, layers, z, no_removal, majority)


def _layer_removal_title(g, relative):
    what = "change in" if relative else ""
    parts = [f"no removal {g.no_removal * SCALE:.1f}{_unit(g.metric)}" if g.no_removal is not None else None,
             f"all removed {g.all_removed * SCALE:.1f}{_unit(g.metric)}",
             f"majority class {g.majority * SCALE:.1f}{_unit(g.metric)}" if g.majority is not None else None]
    name = _METRIC_NAMES.get(g.metric, g.metric)
    head = f"{g.task}: {what} validation {name} with adapters removed from layers first…last"
    return head.replace("  ", " "), " · ".join(p for p in parts if p)


def layer_removal_heatmap(df, task=None, relative=False, span=None, annotate=None, ax=None):
    """Houlsby Fig. 6 (left/centre): validation metric with the adapters of layers first..last removed.

    Rows: first layer removed; columns: last layer removed (upper triangle only).
    The diagonal (single layers) is outlined in black, the all-removed cell
    (top-right) is marked "all", and the colour bar carries lines at the
    no-removal value and the majority-class baseline. relative=True shows the
    change against no removal instead. span=(first, last) outlines one span
    (used by the widget). Returns the matplotlib Figure.
    """
    g = layer_removal_grid(df, task)
    n = len(g.layers)
    z = (g.relative() if relative else g.z) * SCALE
    annotate = n <= 12 if annotate is None else annotate
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.6 + 0.75 * max(n, 4), 1.0 + 0.62 * max(n, 4)))
    else:
        fig = ax.figure
    finite = z[np.isfinite(z)]
    if relative:
        lines = {"no removal": 0.0}
        if g.majority is not None and g.no_removal is not None:
            lines["majority class"] = (g.majority - g.no_removal) * SCALE
        # drops dominate: give the negative side the whole red half, keep a little blue for gains
        values = [*finite, *lines.values()]
        low = min(min(values), -1e-6) * 1.04  # a little room, so a line at the extreme stays visible
        high = max(max(values), 0.2 * abs(low), 1e-6)
        norm = dict(cmap=DIVERGING_CMAP, norm=TwoSlopeNorm(vmin=low, vcenter=0.0, vmax=high))
    else:
        lines = {}
        if g.no_removal is not None:
            lines["no removal"] = g.no_removal * SCALE
        if g.majority is not None:
            lines["majority class"] = g.majority * SCALE
        values = [*finite, *lines.values()]
        lo, hi = (min(values), max(values)) if values else (0, 1)
        room = max(0.04 * (hi - lo), 0.5)  # so that lines at the extremes stay visible on the colour bar
        norm = dict(cmap=HEATMAP_CMAP, vmin=lo - room, vmax=hi + room)
    labels = [str(layer) for layer in g.layers]
    frame = pd.DataFrame(z, index=labels, columns=labels)
    cbar_label = metric_label(g.metric, relative) + (" vs. no removal" if relative else "")
    sns.heatmap(frame, mask=~np.isfinite(z), annot=annotate, fmt=".1f", annot_kws=dict(fontsize=8),
                square=True, linewidths=0.5, linecolor="white", ax=ax,
                cbar_kws=dict(label=cbar_label, shrink=0.85, pad=0.06), **norm)
    cbar = ax.collections[0].colorbar
    # reference lines on the colour bar, outlined so that they show on any colour and jutting out to the left
    # like a tick: no removal white, majority class black; named in a key below the figure
    handles = []
    for name, v in lines.items():
        line, edge = ("black", "white") if name == "majority class" else ("white", "black")
        handles.append(cbar.ax.axhline(v, xmin=-0.35, color=line, lw=1.6, clip_on=False, label=name,
                                       path_effects=[withStroke(linewidth=3.4, foreground=edge)]))
    for k in range(n):  # the diagonal: one layer's adapters removed
        ax.add_patch(Rectangle((k, k), 1, 1, fill=False, edgecolor="black", lw=1.8))
    ax.add_patch(Rectangle((n - 1, 0), 1, 1, fill=False, edgecolor="black", lw=1.8, ls=(0, (2, 1.5)), hatch="//",
                           alpha=0.6))
    ax.text(n - 0.5, 0.1, "all", ha="center", va="top", fontsize=7, fontweight="bold", color="white",
            bbox=dict(boxstyle="round,pad=0.1", fc="black", ec="none", alpha=0.7))
    if span is not None:
        i, j = g.layers.index(span[0]), g.layers.index(span[1])
        ax.add_patch(Rectangle((j, i), 1, 1, fill=False, edgecolor="#E69F00", lw=3))
    ax.set_xlabel("last layer with adapters removed")
    ax.set_ylabel("first layer with adapters removed")
    ax.tick_params(axis="y", rotation=0)
    head, sub = _layer_removal_title(g, relative)
    ax.set_title(f"{head}\n{sub}\n(diagonal outlined: a single layer removed)", fontsize=9.5)
    fig.tight_layout()
    if handles:
        fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=len(handles), fontsize=8,
                   frameon=False, handlelength=2.2, title="lines on the colour bar", title_fontsize=8)
    return fig


def _hover_matrix(g):
    """customdata for the plotly heatmap: [first, last, value, change, n layers] per cell."""
    n = len(g.layers)
    data = np.full((n, n, 5), np.nan)
    rel = g.relative()
    for i in range(n):
        for j in range(i, n):
            data[i, j] = [g.layers[i], g.layers[j], g.z[i, j] * SCALE, rel[i, j] * SCALE, j - i + 1]
    return data


def layer_removal_heatmap_interactive(df, relative=False):
    """Plotly version of layer_removal_heatmap: hover shows the span and its numbers.

    Buttons switch between the metric and its change vs. no removal; a dropdown
    switches task when there are several. Works as standalone HTML (no kernel).
    """
    _check_columns(df, ["task", "first_layer", "last_layer", "value"], "layer_removal")
    grids = [layer_removal_grid(df, t) for t in _tasks(df)]
    fig = go.Figure()
    absolute_z, relative_z, titles = [], [], []
    for k, g in enumerate(grids):
        unit, dunit = _unit(g.metric), _delta_unit(g.metric)
        name = _METRIC_NAMES.get(g.metric, g.metric)
        absolute_z.append(g.z * SCALE)
        relative_z.append(g.relative() * SCALE)
        baseline = (f"<br>majority class: {g.majority * SCALE:.1f}{unit}" if g.majority is not None else "")
        hover = ("adapters removed from layers %{customdata[0]:.0f}–%{customdata[1]:.0f} "
                 "(%{customdata[4]:.0f} layer(s))<br>"
                 f"validation {name}: %{{customdata[2]:.2f}}{unit}<br>"
                 f"change vs. no removal: %{{customdata[3]:+.2f}}{dunit}{baseline}<extra>{g.task}</extra>")
        fig.add_trace(go.Heatmap(
            z=(relative_z if relative else absolute_z)[-1], x=g.layers, y=g.layers, customdata=_hover_matrix(g),
            hovertemplate=hover, colorscale=PLOTLY_DIVERGING if relative else PLOTLY_HEATMAP,
            zmid=0 if relative else None, reversescale=False, hoverongaps=False, visible=k == 0, name=g.task,
            colorbar=dict(title=dict(text=metric_label(g.metric, relative), side="right")),
            texttemplate="%{z:.1f}" if len(g.layers) <= 12 else None, textfont=dict(size=10)))
        head, sub = _layer_removal_title(g, False)
        titles.append(f"{head}<br><sup>{sub} · diagonal outlined: a single layer removed</sup>")
    n = max(len(g.layers) for g in grids)
    layers = grids[0].layers
    shapes = [dict(type="rect", x0=layers[k] - 0.5, x1=layers[k] + 0.5, y0=layers[k] - 0.5, y1=layers[k] + 0.5,
                   line=dict(color="black", width=2)) for k in range(len(layers))]
    shapes.append(dict(type="rect", x0=layers[-1] - 0.5, x1=layers[-1] + 0.5, y0=layers[0] - 0.5,
                       y1=layers[0] + 0.5, line=dict(color="black", width=2, dash="dot")))
    annotations = [dict(x=layers[-1], y=layers[0] - 0.32, text="<b>all</b>", showarrow=False,
                        font=dict(size=10, color="white"), bgcolor="rgba(0,0,0,0.6)")]
    colorbar_titles = [[metric_label(g.metric, rel) for g in grids] for rel in (False, True)]
    toggle = [
        dict(label="validation metric", method="restyle",
             args=[{"z": absolute_z, "colorscale": [PLOTLY_HEATMAP] * len(grids), "zmid": [None] * len(grids),
                    "colorbar.title.text": colorbar_titles[0]}]),
        dict(label="change vs. no removal", method="restyle",
             args=[{"z": relative_z, "colorscale": [PLOTLY_DIVERGING] * len(grids), "zmid": [0] * len(grids),
                    "colorbar.title.text": colorbar_titles[1]}]),
    ]
    menus = [_menu(toggle, x=0.0, y=1.02, direction="right", kind="buttons", active=int(relative))]
    if len(grids) > 1:
        task_buttons = [dict(label=g.task, method="update",
                             args=[{"visible": [k == m for m in range(len(grids))]}, {"title.text": titles[k]}])
                        for k, g in enumerate(grids)]
        menus.append(_menu(task_buttons, x=0.75, y=1.02))
    fig.update_layout(
        title=dict(text=titles[0], x=0.02, y=0.97, font=dict(size=14)),
        xaxis=dict(title="last layer with adapters removed", dtick=1, constrain="domain"),
        yaxis=dict(title="first layer with adapters removed", dtick=1, autorange="reversed", scaleanchor="x"),
        shapes=shapes, annotations=annotations, updatemenus=menus, template="plotly_white",
        width=max(560, 60 * n + 260), height=max(520, 55 * n + 260), margin=dict(t=130))
    return fig


# --------------------------------------------------------------------------- init scale


def init_scale_plot(df, tasks=None, seeds=None, ax=None):
    """Houlsby Fig. 6 (right): validation metric against the adapters' init std (log x).

    One line per task (the mean over seeds) with a band from the worst to the
    best seed; each seed's value as a faint dot, an x on runs that did not converge. `tasks`/`seeds` filter.
    Rows whose `source` column says "extra" (trained live in the widget) are
    drawn as open diamonds only: the mean, band and dots are the sweep's seeds. Returns the matplotlib Figure.
    """
    _check_columns(df, ["task", "init_std", "value"], "init_scale")
    d = _filter(df, task=tasks, seed=seeds)
    is_extra = d["source"].eq("extra") if "source" in d else pd.Series(False, index=d.index)
    sweep, extra = d[~is_extra], d[is_extra]
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.4))
    else:
        fig = ax.figure
    tasks = _tasks(d)
    colors = _colors(tasks)
    markers = _markers(tasks)
    for t in tasks:
        rows = sweep[sweep["task"].astype(str) == t]
        ex = extra[extra["task"].astype(str) == t]
        metric = d.loc[d["task"].astype(str) == t, "metric"].iloc[0] if "metric" in d else ""
        label = f"{t} ({_METRIC_NAMES.get(metric, metric)})" if len(tasks) > 1 else t
        if len(rows):
            s = _seed_summary(rows, [], "init_std")
            ax.plot(s["init_std"], s["mean"] * SCALE, marker=markers[t], color=colors[t], lw=2, label=label)
            if (s["n"] > 1).any():
                ax.fill_between(s["init_std"], s["low"] * SCALE, s["high"] * SCALE, color=colors[t], alpha=0.2,
                                lw=0)
                ax.scatter(rows["init_std"], rows["value"] * SCALE, s=12, color=colors[t], alpha=0.45, lw=0)
            _mark_unconverged(ax, rows, "init_std", "value")
        if len(ex):
            ax.scatter(ex["init_std"], ex["value"] * SCALE, s=70, marker="D", facecolor="none",
                       edgecolor=colors[t], lw=1.5, label=f"{t}: trained live")
        majority = _majority(rows)
        if majority is not None:
            ax.axhline(majority * SCALE, color=colors[t], ls=":", lw=1.2,
                       label="majority class" if len(tasks) == 1 else f"{t}: majority class")
    ax.set_xscale("log")
    ax.set_xlabel("standard deviation of the adapter weights at initialisation (log scale)")
    ax.set_ylabel(f"{_split(d, 'init_scale')} {_metrics_text(d)}")
    n_seeds = sweep["seed"].nunique() if "seed" in sweep else 1
    spread = f"mean of {n_seeds} seeds, band: min–max" if n_seeds > 1 else "one seed"
    ax.set_title(f"Houlsby adapters: {_split(d, 'init_scale')} score vs. initial weight scale\n({spread})",
                 fontsize=10.5)
    ax.grid(True, which="major", alpha=0.35)
    ax.legend(frameon=False, fontsize=8.5)
    fig.tight_layout()
    return fig


def _filter(df, **columns):
    """Rows of df whose column is in the given collection (None: no filter)."""
    d = df
    for column, allowed in columns.items():
        if allowed is None or column not in d.columns:
            continue
        allowed = [allowed] if isinstance(allowed, (str, int, float)) else list(allowed)
        d = d[d[column].isin(allowed) | d[column].astype(str).isin([str(a) for a in allowed])]
    if d.empty:
        raise ValueError(f"no rows left after filtering by {columns}")
    return d


def _band_traces(x, mean, low, high, color, name, group, hover, customdata, marker="circle", visible=True,
                 dash=None):
    """A line with markers plus a shaded min–max band (two traces, one legend entry)."""
    rgba = _rgba(color, 0.18)
    band = go.Scatter(x=np.concatenate([x, x[::-1]]), y=np.concatenate([high, low[::-1]]), fill="toself",
                      mode="lines",
                      fillcolor=rgba, line=dict(width=0), hoverinfo="skip", showlegend=False, legendgroup=group,
                      name=f"{name} (seed range)", visible=visible)
    line = go.Scatter(x=x, y=mean, mode="lines+markers", name=name, legendgroup=group, visible=visible,
                      line=dict(color=color, width=2.5, dash=dash), marker=dict(size=8, symbol=marker, color=color),
                      customdata=customdata, hovertemplate=hover)
    return [band, line]


def _majority_trace(x, majority, color, name, group, visible=True):
    """A dotted horizontal line at the majority-class score across x."""
    x = [min(x), max(x)]
    return go.Scatter(x=x, y=[majority * SCALE] * 2, mode="lines", name=name, legendgroup=group, visible=visible,
                      line=dict(color=color, dash="dot", width=1.5),
                      hovertemplate=f"{name}: {majority * SCALE:.2f}<extra></extra>")


def _rgba(color, alpha):
    color = color.lstrip("#")
    r, g, b = (int(color[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def init_scale_plot_interactive(df):
    """Plotly version of init_scale_plot: hover gives std, mean, seed range and each seed's value.

    Buttons show the mean with its seed band or every seed as its own line, and
    switch the x axis between log and linear.
    """
    _check_columns(df, ["task", "init_std", "value"], "init_scale")
    tasks = _tasks(df)
    colors, markers = _colors(tasks), _markers(tasks, plotly=True)
    fig = go.Figure()
    mean_vis, seed_vis = [], []
    has_seeds = "seed" in df.columns and df["seed"].nunique() > 1
    for t in tasks:
        rows = df[df["task"].astype(str) == t]
        metric = str(rows["metric"].iloc[0]) if "metric" in rows else "value"
        unit = _unit(metric)
        s = _seed_summary(rows, [], "init_std")
        per_seed = (rows.groupby("init_std")
                    .apply(lambda r: ", ".join(f"seed {int(a)}: {b * SCALE:.1f}" for a, b in
                                               zip(r["seed"] if "seed" in r else [0] * len(r), r["value"])),
                           include_groups=False)
                    .reindex(s["init_std"]).to_numpy())
        custom = np.stack([s["low"] * SCALE, s["high"] * SCALE, s["n"], per_seed], axis=1)
        hover = (f"<b>{t}</b><br>init std %{{x:.0e}}<br>mean {_METRIC_NAMES.get(metric, metric)} "
                 f"%{{y:.2f}}{unit}<br>seed range %{{customdata[0]:.2f}}–%{{customdata[1]:.2f}}{unit} "
                 "(%{customdata[2]} seeds)<br>%{customdata[3]}<extra></extra>")
        traces = _band_traces(s["init_std"].to_numpy(), (s["mean"] * SCALE).to_numpy(), (s["low"] * SCALE).to_numpy(),
                              (s["high"] * SCALE).to_numpy(), colors[t], f"{t} ({_METRIC_NAMES.get(metric, metric)})",
                              t, hover, custom, markers[t])
        for tr in traces:
            fig.add_trace(tr)
            mean_vis.append(True)
            seed_vis.append(False)
        majority = _majority(rows)
        if majority is not None:
            fig.add_trace(_majority_trace(s["init_std"], majority, colors[t],
                                          "majority class" if len(tasks) == 1 else f"{t}: majority class", t))
            mean_vis.append(True)
            seed_vis.append(True)
        if has_seeds:
            for k, (seed, r) in enumerate(rows.sort_values("init_std").groupby("seed")):
                fig.add_trace(go.Scatter(
                    x=r["init_std"], y=r["value"] * SCALE, mode="lines+markers", visible=False,
                    name=f"{t} seed {seed}", legendgroup=t,
                    line=dict(color=colors[t], width=1.5, dash=["solid", "dash", "dot", "dashdot"][k % 4]),
                    marker=dict(symbol=markers[t], size=7, color=colors[t]),
                    hovertemplate=f"<b>{t}</b> seed {seed}<br>init std %{{x:.0e}}<br>"
                                  f"%{{y:.2f}}{unit}<extra></extra>"))
                mean_vis.append(False)
                seed_vis.append(True)
    n_seeds = df["seed"].nunique() if "seed" in df else 1
    menus = [_menu(_log_linear_buttons(), x=0.0, y=1.02, direction="right", kind="buttons")]
    if has_seeds:
        menus.append(_menu([dict(label="mean + seed band", method="restyle", args=[{"visible": mean_vis}]),
                            dict(label="each seed", method="restyle", args=[{"visible": seed_vis}])],
                           x=0.3, y=1.02, direction="right", kind="buttons"))
    spread = f"mean of {n_seeds} seeds, band: min–max" if n_seeds > 1 else "one seed"
    fig.update_layout(
        title=dict(text=f"Houlsby adapters: {_split(df, 'init_scale')} score vs. initial weight scale<br><sup>"
                        f"{spread}; hover a point for every seed</sup>", x=0.02, y=0.96),
        xaxis=dict(type="log", title="std of the adapter weights at initialisation", exponentformat="power", dtick=1),
        yaxis=dict(title=f"{_split(df, 'init_scale')} {_metrics_text(df)}"),
        updatemenus=menus, template="plotly_white", height=520, margin=dict(t=120),
        legend=dict(title="task"))
    return fig


# --------------------------------------------------------------------------- parameters vs performance

_SIZE_NAMES = {"top-k": "k", "phm": "n"}


def method_label(method, size=None):
    """'Houlsby m=64', 'top-3', 'PHM n=4', 'full fine-tuning' ..."""
    method = str(method)
    if size is None or (isinstance(size, float) and np.isnan(size)) or pd.isna(size):
        return FAMILY_NAMES.get(method, method)
    size = int(size) if float(size).is_integer() else size
    if method == "top-k":
        return f"top-{size}"
    if method == "phm":
        return f"PHM n={size}"
    return f"{FAMILY_NAMES.get(method, method).replace(' adapters', '').replace(' adapter', '')} m={size}"


def _with_family(df):
    d = df.copy()
    if "family" not in d.columns:
        d["family"] = d["method"]
    d["family"] = d["family"].fillna(d["method"]).astype(str)
    if "size" not in d.columns:
        d["size"] = np.nan
    d["label"] = [method_label(m, s) for m, s in zip(d["method"], d["size"])]
    return d


def param_performance_summary(df, task=None):
    """One row per (task, family, method, size): means over seeds, plus `delta` = value minus full
    fine-tuning's (a fraction; NaN when the task has no full fine-tuning run), sorted by parameters.
    `converged` becomes the share of a setting's seeds that converged."""
    _check_columns(df, ["task", "method", "trainable", "value"], "param_performance")
    d = _with_family(df if task is None else _filter(df, task=task))
    if "converged" in d.columns:
        d["converged"] = d["converged"].astype(float)
    keys = ["task", "family", "method", "size", "label"]
    numeric = [c for c in ("trainable", "percent", "value", "value_minus_full", "train_seconds", "peak_memory_mb",
                           "epochs", "steps", "seconds_per_epoch", "baseline", "converged") if c in d.columns]
    out = d.groupby(keys, dropna=False, sort=False)[numeric].mean().reset_index()
    spread = d.groupby(keys, dropna=False, sort=False)["value"].agg(low="min", high="max", n="count").reset_index()
    out = out.merge(spread, on=keys, how="left")
    full = out[out["method"] == "full"].groupby("task")["value"].mean()
    if "value_minus_full" in out.columns and out["value_minus_full"].notna().any():
        out["delta"] = out["value_minus_full"]
    else:
        out["delta"] = out["value"] - out["task"].map(full)
    if "metric" in d.columns:
        out["metric"] = out["task"].map(d.groupby("task")["metric"].first())
    rank = {f: k for k, f in enumerate(FAMILY_ORDER)}
    out["_rank"] = out["family"].map(lambda f: rank.get(f, len(rank)))
    return out.sort_values(["task", "_rank", "family", "trainable"]).drop(columns="_rank").reset_index(drop=True)


_AXES = {
    "trainable": ("trainable parameters (log scale)", True),
    "percent": ("trained parameters, % of the base model (log scale)", True),
}


def param_performance_plot(df, x="trainable", relative=True, families=None, tasks=None):
    """Houlsby Figs. 3/4: trainable parameters (log x) against the metric minus full fine-tuning's.

    One line per method family (sizes joined in order of parameters; one-off
    methods are single markers; seed min–max as a vertical bar; an x where a seed did not converge),
    one panel per task. relative=False plots the
    metric itself; x="percent" uses the percentage of trained parameters.
    Returns the matplotlib Figure.
    """
    split = _split(df, "param_performance")
    s = param_performance_summary(df)
    if families is not None:
        s = _filter(s, family=families)
    if tasks is not None:
        s = _filter(s, task=tasks)
    tasks = _tasks(s)
    colors, markers = _colors(_with_family(df)["family"]), _markers(_with_family(df)["family"])
    fig, axes = _grid(len(tasks), width=6.2, height=4.5)
    for ax, t in zip(axes, tasks):
        rows = s[s["task"] == t]
        metric = rows["metric"].iloc[0] if "metric" in rows else "value"
        y = "delta" if relative and rows["delta"].notna().any() else "value"
        for fam, r in rows.groupby("family", sort=False):
            r = r.sort_values(x)
            ax.plot(r[x], r[y] * SCALE, marker=markers[fam], color=colors[fam], lw=2 if len(r) > 1 else 0,
                    ms=7, label=FAMILY_NAMES.get(fam, fam))
            if (r["n"] > 1).any():
                lo = (r["low"] - r["value"] + r[y]) * SCALE
                hi = (r["high"] - r["value"] + r[y]) * SCALE
                ax.vlines(r[x], lo, hi, color=colors[fam], alpha=0.5)
            _mark_unconverged(ax, r.assign(converged=r.get("converged", 1.0) == 1), x, y)
            for _, p in r.iterrows():
                if len(r) > 1 and p["label"] != FAMILY_NAMES.get(fam, fam):
                    ax.annotate(p["label"].split(" ")[-1] if fam not in ("top-k",) else p["label"],
                                (p[x], p[y] * SCALE), textcoords="offset points", xytext=(4, 4), fontsize=7,
                                color=colors[fam])
        if y == "delta":
            ax.axhline(0, color="black", lw=1, ls="--")
            ax.text(0.01, 0.0, "full fine-tuning", transform=ax.get_yaxis_transform(), ha="left", va="bottom",
                    fontsize=7.5)
        ax.set_xscale("log")
        ax.set_xlabel(_AXES[x][0])
        ax.set_ylabel(metric_label(metric, True).replace(" (", " vs. full fine-tuning\n(") if y == "delta"
                      else f"{split} " + metric_label(metric))
        ax.set_title(t, fontsize=10)
        ax.grid(True, which="major", alpha=0.35)
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes[1:]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    order = {FAMILY_NAMES.get(f, f): k for k, f in enumerate(FAMILY_ORDER)}
    pairs = sorted(zip(labels, handles), key=lambda p: order.get(p[0], len(FAMILY_ORDER)))  # "not converged" last
    fig.legend([h for _, h in pairs], [lab for lab, _ in pairs], loc="center left", bbox_to_anchor=(1.0, 0.5),
               frameon=False, fontsize=8.5, title="method family")
    fig.suptitle(f"Trainable parameters vs. {split} score" +
                 (", relative to full fine-tuning" if relative else ""), fontsize=11)
    fig.tight_layout()
    return fig


def param_performance_plot_interactive(df):
    """Plotly version of param_performance_plot: hover shows method, size, parameters, % trained and
    score; legend clicks hide families; buttons switch the y axis (vs. full fine-tuning / absolute) and
    the x axis (trainable parameters / percent trained); a dropdown picks the task."""
    split = _split(df, "param_performance")
    s = param_performance_summary(df)
    tasks = _tasks(s)
    fams = list(_with_family(df)["family"])
    colors, markers = _colors(fams), _markers(fams, plotly=True)
    fig = go.Figure()
    per_task, ys = [], {"delta": [], "value": []}
    xs = {"trainable": [], "percent": []}
    for k, t in enumerate(tasks):
        rows = s[s["task"] == t]
        metric = rows["metric"].iloc[0] if "metric" in rows else "value"
        unit, dunit = _unit(metric), _delta_unit(metric)
        for fam, r in rows.groupby("family", sort=False):
            r = r.sort_values("trainable")
            custom = np.stack([r["label"], r["trainable"], r.get("percent", r["trainable"] * np.nan),
                               r["value"] * SCALE, r["delta"] * SCALE], axis=1)
            fig.add_trace(go.Scatter(
                x=r["trainable"], y=r["delta"] * SCALE, mode="lines+markers" if len(r) > 1 else "markers",
                name=FAMILY_NAMES.get(fam, fam), legendgroup=fam, visible=k == 0, customdata=custom,
                line=dict(color=colors[fam], width=2.5), marker=dict(color=colors[fam], size=10, symbol=markers[fam]),
                text=[lab.split(" ")[-1] if len(r) > 1 else "" for lab in r["label"]], textposition="top right",
                hovertemplate=(f"<b>%{{customdata[0]}}</b> ({t})<br>trainable parameters %{{customdata[1]:,.0f}}"
                               "<br>%{customdata[2]:.4f} % of the base model<br>"
                               f"{split} {_METRIC_NAMES.get(metric, metric)} %{{customdata[3]:.2f}}{unit}<br>"
                               f"vs. full fine-tuning %{{customdata[4]:+.2f}}{dunit}<extra></extra>")))
            per_task.append(k)
            ys["delta"].append((r["delta"] * SCALE).tolist())
            ys["value"].append((r["value"] * SCALE).tolist())
            xs["trainable"].append(r["trainable"].tolist())
            xs["percent"].append(r["percent"].tolist() if "percent" in r else r["trainable"].tolist())
    metric = s["metric"].iloc[0] if "metric" in s else "value"
    full_line = dict(type="line", xref="paper", x0=0, x1=1, y0=0, y1=0, line=dict(color="black", dash="dash", width=1))
    menus = [
        _menu([dict(label="vs. full fine-tuning", method="update",
                    args=[{"y": ys["delta"]}, {"yaxis.title.text": f"{split} " + metric_label(metric, True) +
                                               " vs. full fine-tuning", "shapes": [full_line]}]),
               dict(label="absolute score", method="update",
                    args=[{"y": ys["value"]}, {"yaxis.title.text": f"{split} " + metric_label(metric),
                                               "shapes": []}])],
              x=0.0, y=1.02, direction="right", kind="buttons"),
        _menu([dict(label="trainable parameters", method="update",
                    args=[{"x": xs["trainable"]}, {"xaxis.title.text": _AXES["trainable"][0]}]),
               dict(label="% trained", method="update",
                    args=[{"x": xs["percent"]}, {"xaxis.title.text": _AXES["percent"][0]}])],
              x=0.42, y=1.02, direction="right", kind="buttons"),
    ]
    if len(tasks) > 1:
        menus.append(_menu([dict(label=t, method="update", args=[{"visible": [p == k for p in per_task]}])
                            for k, t in enumerate(tasks)], x=0.85, y=1.02))
    fig.update_layout(
        title=dict(text=f"Trainable parameters vs. {split} score, relative to full fine-tuning<br><sup>"
                        "one line per method family; click a legend entry to hide it</sup>", x=0.02, y=0.96),
        xaxis=dict(type="log", title=_AXES["trainable"][0], exponentformat="power", dtick=1),
        yaxis=dict(title=f"{split} " + metric_label(metric, True) + " vs. full fine-tuning"),
        shapes=[full_line], updatemenus=menus, template="plotly_white", height=560,
        margin=dict(t=120), legend=dict(title="method family"))
    return fig


def _memory_sizes(mem, largest=520):
    """Marker areas (points²) proportional to memory: the largest value gets `largest`, so 1.3x the
    memory is drawn as 1.3x the area (unknown values: half the largest)."""
    mem = np.asarray(mem, dtype=float)
    if not np.isfinite(mem).any() or np.nanmax(mem) <= 0:
        return np.full(len(mem), largest / 2)
    return np.where(np.isfinite(mem), mem / np.nanmax(mem) * largest, largest / 2)


def _memory_range(mem):
    mem = np.asarray(mem, dtype=float)
    if not np.isfinite(mem).any():
        return ""
    return f", from {np.nanmin(mem):,.0f} MB (smallest) to {np.nanmax(mem):,.0f} MB (largest)"


def _place_labels(ax, points, labels, marker_areas, fontsize=7):
    """Label each point beside it, at the candidate offset that overlaps the markers and the labels
    placed before it least (methods with similar budgets crowd together)."""
    renderer = ax.figure.canvas.get_renderer()
    px = ax.figure.dpi / 72  # pixels per point
    taken = []
    for (x, y), area in zip(points, marker_areas):
        cx, cy = ax.transData.transform((x, y))
        r = np.sqrt(area) / 2 * px
        taken.append(Bbox.from_extents(cx - r, cy - r, cx + r, cy + r))

    def overlap(box):
        return sum(max(0, min(box.x1, b.x1) - max(box.x0, b.x0)) * max(0, min(box.y1, b.y1) - max(box.y0, b.y0))
                   for b in taken)

    offsets = [(dx * k, dy * k) for k in (1, 2) for dx, dy in
               [(7, 4), (7, -10), (-7, 4), (-7, -10), (0, 10), (0, -16), (9, -3), (-9, -3)]]
    for (x, y), label in zip(points, labels):
        best = None
        for dx, dy in offsets:
            ha = "left" if dx > 0 else "right" if dx < 0 else "center"
            text = ax.annotate(label, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha,
                               fontsize=fontsize, zorder=4)
            box = text.get_window_extent(renderer)
            cost = overlap(box)
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, text, box)
            else:
                text.remove()
            if cost == 0:
                break
        taken.append(best[2])


def param_performance_tradeoff(df, families=None):
    """Compacter Fig. 1: percent of parameters trained (log x) against the score (the mean
    over tasks when there are several); marker area is proportional to peak training memory (the legend
    draws the smallest and the largest); an x where a seed did not converge. Returns the matplotlib Figure."""
    split = _split(df, "param_performance")
    from matplotlib.lines import Line2D

    s = param_performance_summary(df)
    if families is not None:
        s = _filter(s, family=families)
    keys = ["family", "method", "size", "label"]
    agg = s.groupby(keys, dropna=False, sort=False)[["percent", "value", "peak_memory_mb",
                                                     *(["converged"] if "converged" in s else [])]].mean().reset_index()
    colors, markers = _colors(_with_family(df)["family"]), _markers(_with_family(df)["family"])
    fig, ax = plt.subplots(figsize=(9, 5.4))
    mem = agg["peak_memory_mb"].astype(float)
    sizes = _memory_sizes(mem)
    for k, p in agg.iterrows():
        ax.scatter(p["percent"], p["value"] * SCALE, s=sizes[k], color=colors[p["family"]], alpha=0.75,
                   edgecolor="black", lw=0.6, marker=markers[p["family"]], zorder=3)
    if "converged" in agg:
        _mark_unconverged(ax, agg.assign(converged=agg["converged"] == 1), "percent", "value")
    ax.set_xscale("log")
    ax.margins(x=0.1, y=0.1)
    ax.set_xlabel(_AXES["percent"][0])
    tasks = _tasks(s)
    task_text = tasks[0] if len(tasks) == 1 else f"mean over {len(tasks)} tasks"
    ax.set_ylabel(f"{split} {_metrics_text(s)}" + ("" if len(tasks) == 1 else ", task mean"))
    ax.set_title(f"Share of parameters trained vs. {split} score ({task_text})\n"
                 "marker area proportional to peak memory during training", fontsize=10.5)
    ax.grid(True, which="major", alpha=0.35)
    fams = list(dict.fromkeys(agg["family"]))
    handles = [Line2D([], [], ls="", marker=markers[f], ms=8, mfc=colors[f], mec="black", mew=0.6, alpha=0.75)
               for f in fams]
    if mem.notna().any():
        lo, hi = np.nanmin(mem), np.nanmax(mem)
        area = _memory_sizes([lo, hi])
        handles += [Line2D([], [], ls="", label=" ")]  # a gap, then the size key
        handles += [Line2D([], [], ls="", marker="o", ms=np.sqrt(a), mfc="lightgrey", mec="black", mew=0.6)
                    for a in area]
        labels = [FAMILY_NAMES.get(f, f) for f in fams] + ["peak memory:", f"{lo:,.0f} MB", f"{hi:,.0f} MB"]
    else:
        labels = [FAMILY_NAMES.get(f, f) for f in fams]
    if "converged" in agg and (agg["converged"] < 1).any():
        handles.append(Line2D([], [], ls="", marker="x", ms=7, color="black", mew=1.3))
        labels.append("not converged")
    ax.legend(handles, labels, frameon=False, fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5),
              title="method family", labelspacing=1.1, borderpad=1.2)
    fig.tight_layout()
    # labels last: tight_layout narrows the axes for the legend, which moves the points closer together
    _place_labels(ax, list(zip(agg["percent"], agg["value"] * SCALE)), list(agg["label"]), list(sizes))
    return fig


def param_performance_tradeoff_interactive(df):
    """Plotly version of param_performance_tradeoff (marker area = peak memory; hover for the numbers;
    buttons for log/linear x)."""
    split = _split(df, "param_performance")
    s = param_performance_summary(df)
    keys = ["family", "method", "size", "label"]
    agg = s.groupby(keys, dropna=False, sort=False)[["percent", "trainable", "value", "peak_memory_mb",
                                                     "train_seconds"]].mean().reset_index()
    fams = list(_with_family(df)["family"])
    colors = _colors(fams)
    mem = agg["peak_memory_mb"].astype(float)
    agg["marker_px"] = np.sqrt(_memory_sizes(mem)) * 1.4  # the static figure's areas, as diameters in pixels
    metric = s["metric"].iloc[0] if "metric" in s else "value"
    fig = go.Figure()
    for fam, r in agg.groupby("family", sort=False):
        custom = np.stack([r["label"], r["trainable"], r["peak_memory_mb"], r["train_seconds"]], axis=1)
        fig.add_trace(go.Scatter(
            x=r["percent"], y=r["value"] * SCALE, mode="markers+text", name=FAMILY_NAMES.get(fam, fam),
            text=r["label"], textposition="top center", textfont=dict(size=9), customdata=custom,
            marker=dict(size=r["marker_px"], sizemode="diameter", color=colors[fam], opacity=0.75,
                        line=dict(color="black", width=0.6)),
            hovertemplate=("<b>%{customdata[0]}</b><br>%{x:.4f} % trained (%{customdata[1]:,.0f} parameters)"
                           f"<br>{split} {_METRIC_NAMES.get(metric, metric)} %{{y:.2f}}{_unit(metric)}"
                           "<br>peak memory %{customdata[2]:,.0f} MB<br>training time %{customdata[3]:.1f} s"
                           "<extra></extra>")))
    tasks = _tasks(s)
    task_text = tasks[0] if len(tasks) == 1 else f"mean over {len(tasks)} tasks"
    fig.update_layout(
        title=dict(text=f"Share of parameters trained vs. {split} score ({task_text})<br><sup>"
                        f"marker area proportional to peak memory during training{_memory_range(mem)}; hover for the numbers"
                        "</sup>", x=0.02, y=0.96),
        xaxis=dict(type="log", title=_AXES["percent"][0], exponentformat="power", dtick=1),
        yaxis=dict(title=f"{split} {_metrics_text(s)}"),
        updatemenus=[_menu(_log_linear_buttons(), x=0.0, y=1.02, direction="right", kind="buttons")],
        template="plotly_white", height=580, margin=dict(t=120), legend=dict(title="method family"))
    return fig


def param_performance_table(df):
    """Compacter Table 3: per method, the share of parameters trained, training time per epoch and peak
    memory, each also relative to full fine-tuning (in %; 100 = as much as full fine-tuning).

    Time per epoch comes from a `seconds_per_epoch` column (or train_seconds / `epochs`); without
    either the table reports total training time (`train_seconds`), which compares the same way when
    every method trains for equally many epochs.
    """
    s = param_performance_summary(df)
    keys = ["family", "method", "size", "label"]
    cols = [c for c in ("trainable", "percent", "value", "train_seconds", "peak_memory_mb", "epochs",
                        "seconds_per_epoch") if c in s]
    t = s.groupby(keys, dropna=False, sort=False)[cols].mean().reset_index()
    if "seconds_per_epoch" not in t.columns and "epochs" in t.columns:
        t["seconds_per_epoch"] = t["train_seconds"] / t["epochs"]
    time_col = "seconds_per_epoch" if "seconds_per_epoch" in t.columns else "train_seconds"
    full = t[t["method"] == "full"]
    out = pd.DataFrame({"method": t["label"], "family": t["family"],
                        "trainable": t["trainable"].round().astype("Int64")})
    if "percent" in t:
        out["percent_trained"] = t["percent"]
    out["value_x100"] = t["value"] * SCALE
    if time_col in t:
        out[time_col] = t[time_col]
        out["time_vs_full_pct"] = (100 * t[time_col] / full[time_col].iloc[0]) if len(full) else np.nan
    if "peak_memory_mb" in t:
        out["peak_memory_mb"] = t["peak_memory_mb"]
        out["memory_vs_full_pct"] = ((100 * t["peak_memory_mb"] / full["peak_memory_mb"].iloc[0]) if len(full)
                                     else np.nan)
    return out.sort_values("trainable", ascending=False).reset_index(drop=True)


_TABLE_VIEW = {  # column of param_performance_table -> (header, format)
    "method": ("method", None), "trainable": ("trainable", "{:,}"), "percent_trained": ("% trained", "{:.3g}"),
    "value_x100": ("score × 100", "{:.1f}"), "seconds_per_epoch": ("s / epoch", "{:.1f}"),
    "train_seconds": ("train s", "{:.0f}"), "time_vs_full_pct": ("time vs. full", "{:.0f} %"),
    "peak_memory_mb": ("peak MB", "{:,.0f}"), "memory_vs_full_pct": ("memory vs. full", "{:.0f} %"),
}


def param_performance_table_view(table):
    """param_performance_table(df) for reading in a notebook: short headers, formatted numbers, no index
    (the family column is left out: the method's name says it). Returns a pandas Styler."""
    t = table[[c for c in _TABLE_VIEW if c in table]]
    t = t.rename(columns={c: _TABLE_VIEW[c][0] for c in t})
    formats = {_TABLE_VIEW[c][0]: f for c, (_, f) in _TABLE_VIEW.items() if c in table and f}
    return (t.style.format(formats, na_rep="–").hide(axis="index")
            .set_properties(subset=["method"], **{"text-align": "left", "white-space": "nowrap"}))


# --------------------------------------------------------------------------- low resource


def low_resource_plot(df, methods=None, sizes=None, tasks=None):
    """Compacter Fig. 4: the metric (test split by default) against the number of training examples (log x).

    One line per method (mean over seeds) with a min–max seed band, an x on each run that did not
    converge; one panel per task. `methods`/`sizes`/`tasks` filter. Returns the matplotlib Figure.
    """
    split = _split(df, "low_resource")
    _check_columns(df, ["task", "method", "train_size", "value"], "low_resource")
    d = _filter(df, method=methods, train_size=sizes, task=tasks)
    tasks = _tasks(d)
    colors, markers = _colors(df["method"].astype(str)), _markers(df["method"].astype(str))
    fig, axes = _grid(len(tasks), width=6.4, height=4.4)
    n_seeds = d["seed"].nunique() if "seed" in d else 1
    for ax, t in zip(axes, tasks):
        rows = d[d["task"].astype(str) == t]
        metric = rows["metric"].iloc[0] if "metric" in rows else "value"
        s = _seed_summary(rows.assign(method=rows["method"].astype(str)), ["method"], "train_size")
        for m, r in s.groupby("method", sort=False):
            ax.plot(r["train_size"], r["mean"] * SCALE, marker=markers[m], color=colors[m], lw=2, ms=7,
                    label=FAMILY_NAMES.get(m, m))
            if (r["n"] > 1).any():
                ax.fill_between(r["train_size"], r["low"] * SCALE, r["high"] * SCALE, color=colors[m], alpha=0.2,
                                lw=0)
        _mark_unconverged(ax, rows, "train_size", "value")
        majority = _majority(rows)
        if majority is not None:
            ax.axhline(majority * SCALE, color="grey", ls=":", lw=1.2, label="majority class")
        ax.set_xscale("log")
        sizes_here = sorted(rows["train_size"].unique())
        ax.set_xticks(sizes_here)
        ax.set_xticklabels([f"{int(v):,}" for v in sizes_here])
        ax.minorticks_off()
        ax.set_xlabel("training examples (log scale)")
        ax.set_ylabel(f"{split} " + metric_label(metric))
        ax.set_title(t, fontsize=10)
        ax.grid(True, which="major", alpha=0.35)
        ax.legend(frameon=False, fontsize=8.5, title="method")
    spread = f"mean of {n_seeds} seeds, band: min–max" if n_seeds > 1 else "one seed"
    fig.suptitle(f"Low-resource setting: {split} score vs. training set size\n({spread})", fontsize=11)
    fig.tight_layout()
    return fig


def low_resource_plot_interactive(df):
    """Plotly version of low_resource_plot: hover gives size, mean, seed range and each seed; buttons switch
    the y axis between the score and its difference to full fine-tuning, and the x axis log/linear; a
    dropdown picks the task."""
    split = _split(df, "low_resource")
    _check_columns(df, ["task", "method", "train_size", "value"], "low_resource")
    tasks = _tasks(df)
    methods = list(dict.fromkeys(df["method"].astype(str)))
    colors, markers = _colors(methods), _markers(methods, plotly=True)
    fig = go.Figure()
    owner, ys_abs, ys_rel = [], [], []  # per trace: its task, its y for each button
    for k, t in enumerate(tasks):
        rows = df[df["task"].astype(str) == t].assign(method=lambda r: r["method"].astype(str))
        metric = str(rows["metric"].iloc[0]) if "metric" in rows else "value"
        unit = _unit(metric)
        s = _seed_summary(rows, ["method"], "train_size")
        full = s[s["method"] == "full"].set_index("train_size")["mean"]
        for m, r in s.groupby("method", sort=False):
            seeds = rows[rows["method"] == m]
            per_seed = (seeds.groupby("train_size")
                        .apply(lambda g: ", ".join(f"seed {int(a)}: {b * SCALE:.1f}" for a, b in
                                                   zip(g["seed"] if "seed" in g else [0] * len(g), g["value"])),
                               include_groups=False).reindex(r["train_size"]).to_numpy())
            ref = r["train_size"].map(full).to_numpy() if len(full) else np.full(len(r), np.nan)
            custom = np.stack([r["low"] * SCALE, r["high"] * SCALE, per_seed, (r["mean"] - ref) * SCALE,
                               r["mean"] * SCALE], axis=1)
            hover = (f"<b>{FAMILY_NAMES.get(m, m)}</b> ({t})<br>%{{x:,}} training examples<br>"
                     f"mean {_METRIC_NAMES.get(metric, metric)} %{{customdata[4]:.2f}}{unit} "
                     f"(%{{customdata[3]:+.2f}}{_delta_unit(metric)} vs. full fine-tuning)"
                     f"<br>seed range %{{customdata[0]:.2f}}–%{{customdata[1]:.2f}}{unit}<br>%{{customdata[2]}}"
                     "<extra></extra>")
            x = r["train_size"].to_numpy()
            mean, lo, hi = (r["mean"] * SCALE).to_numpy(), (r["low"] * SCALE).to_numpy(), (r["high"] * SCALE).to_numpy()
            for tr in _band_traces(x, mean, lo, hi, colors[m], FAMILY_NAMES.get(m, m), f"{t}/{m}", hover, custom,
                                   markers[m], visible=k == 0):
                fig.add_trace(tr)
                owner.append(k)
            ys_abs += [np.concatenate([hi, lo[::-1]]).tolist(), mean.tolist()]
            ys_rel += [np.concatenate([hi - ref * SCALE, (lo - ref * SCALE)[::-1]]).tolist(),
                       (mean - ref * SCALE).tolist()]
        majority = _majority(rows)
        if majority is not None:  # shown with the score, hidden (NaN) when differences are shown
            fig.add_trace(_majority_trace(rows["train_size"], majority, "grey", "majority class", f"{t}/majority",
                                          visible=k == 0))
            owner.append(k)
            ys_abs.append([majority * SCALE] * 2)
            ys_rel.append([None, None])
    metric = str(df["metric"].iloc[0]) if "metric" in df else "value"
    menus = [
        _menu([dict(label="score", method="update",
                    args=[{"y": ys_abs}, {"yaxis.title.text": f"{split} " + metric_label(metric)}]),
               dict(label="minus full fine-tuning", method="update",
                    args=[{"y": ys_rel}, {"yaxis.title.text": f"{split} " + metric_label(metric, True)
                                          + " vs. full fine-tuning"}])],
              x=0.0, y=1.02, direction="right", kind="buttons"),
        _menu(_log_linear_buttons(decades=False), x=0.45, y=1.02, direction="right", kind="buttons"),
    ]
    if len(tasks) > 1:
        menus.append(_menu([dict(label=t, method="update", args=[{"visible": [o == k for o in owner]}])
                            for k, t in enumerate(tasks)], x=0.8, y=1.02))
    n_seeds = df["seed"].nunique() if "seed" in df else 1
    spread = f"mean of {n_seeds} seeds, band: min–max" if n_seeds > 1 else "one seed"
    sizes = sorted(df["train_size"].unique())
    fig.update_layout(
        title=dict(text=f"Low-resource setting: {split} score vs. training set size<br><sup>{spread}; "
                        "hover a point for every seed</sup>", x=0.02, y=0.96),
        xaxis=dict(type="log", title="training examples", tickvals=sizes, ticktext=[f"{int(v):,}" for v in sizes]),
        yaxis=dict(title=f"{split} " + metric_label(metric)), updatemenus=menus, template="plotly_white",
        height=520, margin=dict(t=120), legend=dict(title="method"))
    return fig


# --------------------------------------------------------------------------- learning curves


def _learning_long(curves, metric):
    """Curves (one row per method and evaluation: method, step, epoch, train_loss, validation) in long form."""
    long = curves.melt(id_vars=["method", "step", "epoch"], value_vars=["train_loss", "validation"],
                       var_name="quantity", value_name="value")
    long["quantity"] = long["quantity"].map({"train_loss": "training loss", "validation": f"validation {metric}"})
    return long.assign(method=long["method"].astype(str))


def learning_curves_plot(curves, metric="metric", title=None):
    """Training loss and validation metric against the training step (a panel each), one line per method in
    its family colour. `curves`: one row per method and evaluation, with columns method, step, epoch,
    train_loss, validation (the points of a record's "curve"). Returns the matplotlib Figure."""
    long = _learning_long(curves, metric)
    methods = list(dict.fromkeys(long["method"]))
    grid = sns.relplot(data=long, x="step", y="value", hue="method", col="quantity", kind="line", marker="o",
                       hue_order=methods, palette=_colors(methods), facet_kws=dict(sharey=False), height=3.6,
                       aspect=1.25)
    grid.set_titles("{col_name}")
    grid.set_axis_labels("training step", "")
    if title:
        grid.figure.suptitle(title, y=1.03)
    return grid.figure


def learning_curves_plot_interactive(curves, metric="metric", title=None):
    """Plotly version of learning_curves_plot (the same colours; hover gives the epoch)."""
    long = _learning_long(curves, metric)
    methods = list(dict.fromkeys(long["method"]))
    fig = px.line(long, x="step", y="value", color="method", facet_col="quantity", markers=True,
                  hover_data={"epoch": ":.2f"}, category_orders={"method": methods},
                  color_discrete_map=_colors(methods), title=title)
    fig.update_yaxes(matches=None, showticklabels=True)
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    fig.update_layout(height=420, width=950)
    return fig
