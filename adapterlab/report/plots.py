"""The two renderers of a figure definition (adapterlab.report.figures): a PNG and an interactive HTML page.

    png(figure, views=None)    matplotlib: the named views side by side (default: the first)
    html(figure, views=None)   plotly: buttons switch between the named views (default: all)
    save_figure(fig, name, profile, root)   <root>/figures/<profile>/<name>.png or .html, the same bytes every time

Both draw exactly a View's marks and compute nothing: points with a 95% band (joined) or error bars,
a ✕ in the series' colour on each run that did not converge, reference lines, a heatmap. Both give
the same two legends: beside the plot one entry per series and reference line, no taller than the
plot; below it a key of what a mark means whatever its colour (one ✕ for every unconverged run, the
marker areas). Artists carry gid (matplotlib) or meta (plotly) "series:<name>", "bad:<name>",
"err:<name>", so tests/report/test_figure_parity.py can check that both show the same. HTML files
share one plotly.js.
"""
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import plotly.graph_objects as go
import seaborn as sns
from matplotlib.colors import TwoSlopeNorm
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.patheffects import withStroke
from matplotlib.transforms import Bbox

from ..experiments import profiles

DPI = 150
ROW = 3  # views side by side in one PNG; more wrap onto further rows
SYMBOLS = {"o": "circle", "s": "square", "D": "diamond", "^": "triangle-up", "v": "triangle-down", "P": "cross",
           "X": "x", "*": "star", "<": "triangle-left", ">": "triangle-right", "h": "hexagon", "p": "pentagon",
           "d": "diamond-tall", "H": "hexagon2", "8": "octagon"}
NOT_CONVERGED = "a run that did not converge"  # the key's one ✕ stands for the ✕ of every series
# the interactive figure, px: its least height, the room for its title and buttons, for the x label (plotly's
# bottom margin), and the height of the key of marks below it (plotly widens the bottom margin by that much);
# one legend entry at plotly's default font with no gap between groups
HEIGHT, TOP, BOTTOM, KEY_ROOM, LEGEND_ROW = 560, 150, 80, 30, 20


def save_figure(fig, name, profile, root=None):
    """Write `fig` to <root>/figures/<profile>/<name>.png (matplotlib) or .html (plotly); return the path.
    Same figure, same bytes, so a redraw leaves git clean: a fixed DPI, no version or date stamped into
    the PNG, a div id fixed by the name instead of plotly's random one."""
    folder = profiles.figures_dir(profiles.resolve(profile), root)
    if hasattr(fig, "write_html"):
        fig.write_html(path := folder / f"{name}.html", include_plotlyjs="directory", div_id=f"figure-{name}")
    else:
        fig.savefig(path := folder / f"{name}.png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
        plt.close(fig)
    return Path(path)


def _names(figure, views, default):
    names = default if views is None else list(views)
    if unknown := [n for n in names if n not in figure.views]:
        raise ValueError(f"{figure.name} has no view(s) {unknown}; choose among {list(figure.views)}")
    return names


# --------------------------------------------------------------------------- PNG


def png(figure, views=None):
    """The named views side by side (ROW to a row) as a matplotlib Figure, the legend of their series beside
    the axes and the key of their marks below."""
    names = _names(figure, views, list(figure.views)[:1])
    heat, views = figure.views[names[0]].heatmap, [figure.views[n] for n in names]
    n = max(len(heat.ticks), 4) if heat else 0
    width, height = (1.6 + 0.75 * n, 1.2 + 0.62 * n) if heat else (6.4, 4.4)
    rows, columns = -(-len(views) // ROW), min(len(views), ROW)
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows), squeeze=False)
    for ax in axes.flat[len(views):]:  # the last row's empty places
        ax.remove()
    for ax, view in zip(axes.flat, views):
        _heatmap(fig, ax, view.heatmap) if heat else _series(ax, view)
        ax.set(title=view.title, xlabel=view.xlabel, ylabel=view.ylabel)
        ax.title.set_fontsize(9.5)
    fig.tight_layout()
    if not heat:
        _key(fig, {k: h for view in views for k, h in _marks_key(view).items()})
        _beside(fig, axes.flat[:len(views)], {k: h for view in views for k, h in _entries(view).items()})
    for ax, view in zip(axes.flat, views):  # last: tight_layout and the legend have moved the points
        _place_labels(ax, view.series)
    return fig


def _entries(view):
    """Label -> handle of the legend beside the plot: each series (its colour and marker), the reference lines."""
    handles = {s.name: Line2D([], [], ls="-" if s.line else "", lw=2, marker=s.marker, ms=7, color=s.color,
                              mec=s.color if s.line else "black", mew=0.6) for s in view.series}
    return handles | {name: Line2D([], [], color=c, ls="--" if "full" in name else ":", lw=1.2)
                      for name, _, c in view.hlines}


def _marks_key(view):
    """Label -> handle of the key below the plot: one black ✕ for the unconverged runs of every series (each
    drawn in its series' colour), and the marker areas at the points' own scale."""
    bad = any(s.bad_x for s in view.series)
    handles = {NOT_CONVERGED: Line2D([], [], ls="", marker="x", ms=7, color="black", mew=1.6)} if bad else {}
    return handles | {f"peak memory {k}": Line2D([], [], ls="", marker="o", ms=np.sqrt(a), mfc="lightgrey",
                                                 mec="black", mew=0.6) for k, a in view.sizes}


def _key(fig, handles):
    """The key of marks in one row below the axes (and their x label)."""
    if handles:
        fig.legend(handles.values(), handles.keys(), loc="upper center", bbox_to_anchor=(0.5, 0), ncol=len(handles),
                   frameon=False, fontsize=8.5, columnspacing=1.6)


def _beside(fig, axes, handles):
    """The legend of series right of the axes, in the fewest columns that keep it no taller than the axes
    (many method lines in one column would stand taller than the plot they explain)."""
    renderer = fig.canvas.get_renderer()
    plot = Bbox.union([ax.get_window_extent(renderer) for ax in axes]).height
    for columns in range(1, len(handles) + 1):
        legend = fig.legend(handles.values(), handles.keys(), loc="center left", bbox_to_anchor=(1.0, 0.5),
                            ncol=columns, frameon=False, fontsize=8.5, labelspacing=0.5)
        if legend.get_window_extent(renderer).height <= plot or columns == len(handles):
            return legend
        legend.remove()


def _series(ax, view):
    for s in view.series:
        x, y = np.asarray(s.x, dtype=float), np.asarray(s.y, dtype=float)
        if s.line:
            ax.plot(x, y, marker=s.marker, color=s.color, lw=2, ms=6, gid=f"series:{s.name}")
            if s.err is not None:
                ax.fill_between(x, y - s.err, y + s.err, color=s.color, alpha=0.18, lw=0, gid=f"err:{s.name}")
        else:
            ax.scatter(x, y, s=s.area or 45, color=s.color, marker=s.marker, alpha=0.75, edgecolor="black", lw=0.6,
                       zorder=3, gid=f"series:{s.name}")
            if s.err is not None:
                ax.errorbar(x, y, yerr=s.err, fmt="none", ecolor=s.color, capsize=3, zorder=2, gid=f"err:{s.name}")
        if s.bad_x:
            ax.scatter(s.bad_x, s.bad_y, marker="x", s=40, color=s.color, lw=1.6, zorder=5, gid=f"bad:{s.name}")
    for name, y, color in view.hlines:
        ax.axhline(y, color=color, ls="--" if "full" in name else ":", lw=1.2)
    ax.set_xscale("log" if view.xlog else "linear")
    if view.ylog:
        ax.set_yscale("log")
    if view.xticks:
        ax.set_xticks(view.xticks, [f"{v:,}" for v in view.xticks])
        ax.minorticks_off()
    ax.margins(x=0.08, y=0.12)
    ax.grid(True, which="major", alpha=0.35)


def _heatmap(fig, ax, h):
    z = np.asarray(h.z, dtype=float)
    values = [*z[np.isfinite(z)], *h.lines.values(), *(h.limits or ())]
    if h.diverging:  # drops dominate: the negative side gets the whole red half, a little blue for gains
        low = min(min(values), -1e-6) * 1.04
        norm = dict(cmap="RdBu", norm=TwoSlopeNorm(vmin=low, vcenter=0.0, vmax=max(max(values), 0.2 * abs(low))))
    else:  # a little room, so that a line at the extremes stays visible on the colour bar
        room = max(0.04 * (max(values) - min(values)), 0.5)
        norm = dict(cmap="viridis", vmin=min(values) - room, vmax=max(values) + room)
    sns.heatmap(z, mask=~np.isfinite(z), annot=len(h.ticks) <= 12, fmt=".1f", annot_kws=dict(fontsize=8), ax=ax,
                square=True, linewidths=0.5, linecolor="white", xticklabels=_columns(h), yticklabels=h.ticks,
                cbar_kws=dict(label=h.colorbar, shrink=0.85, pad=0.06), **norm)
    ax.collections[0].set_gid("heatmap")
    ax.tick_params(axis="y", rotation=0)
    for i, j, color in h.outline:
        ax.add_patch(Rectangle((j, i), 1, 1, fill=False, edgecolor=color, lw=1.6 if color == "black" else 2.4))
    # reference values on the colour bar, outlined so they show on any colour, named in a key below
    marks = [ax.collections[0].colorbar.ax.axhline(
        v, xmin=-0.35, clip_on=False, lw=1.6, label=name, color="black" if "majority" in name else "white",
        path_effects=[withStroke(linewidth=3.4, foreground="white" if "majority" in name else "black")])
        for name, v in h.lines.items()]
    if marks:
        fig.legend(handles=marks, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=len(marks), fontsize=8,
                   frameon=False, title="lines on the colour bar", title_fontsize=8)


def _columns(h):
    return h.ticks if h.columns is None else h.columns


def _place_labels(ax, series):
    """Label each point at the first of a ring of offsets where the label overlaps no marker, no label
    placed before and nothing outside the axes; else where it overlaps least."""
    renderer, px, frame = ax.figure.canvas.get_renderer(), ax.figure.dpi / 72, ax.get_window_extent()
    points = [(x, y, t, s.color, np.sqrt(a) / 2 * px) for s in series if s.text
              for x, y, t, a in zip(s.x, s.y, s.text, s.area or [45] * len(s.x))]
    taken = [Bbox.from_bounds(*(ax.transData.transform((x, y)) - r), 2 * r, 2 * r) for x, y, _, _, r in points]
    area = lambda a, b: max(0, min(a.x1, b.x1) - max(a.x0, b.x0)) * max(0, min(a.y1, b.y1) - max(a.y0, b.y0))  # noqa
    for x, y, label, color, _ in points:
        tries = []
        for k in (1, 2, 3):
            for dx, dy in ((7, 4), (7, -10), (-7, 4), (-7, -10), (0, 10), (0, -16), (9, -3), (-9, -3)):
                text = ax.annotate(label, (x, y), textcoords="offset points", xytext=(dx * k, dy * k), fontsize=7,
                                   ha="left" if dx > 0 else "right" if dx < 0 else "center", color=color, zorder=4)
                box = text.get_window_extent(renderer)
                cost = 4 * (box.width * box.height - area(box, frame)) + sum(area(box, b) for b in taken)
                tries.append((cost, len(tries), text, box))
        best = min(tries)
        for _, _, text, _ in tries:
            if text is not best[2]:
                text.remove()
        taken.append(best[3])


# --------------------------------------------------------------------------- HTML


def html(figure, views=None):
    """The named views (default: all) in one plotly Figure; buttons (a dropdown beyond four views) switch
    between them, as the explorer's view toggle does in JupyterLab."""
    names = _names(figure, views, list(figure.views))
    fig, owner = go.Figure(), []
    for k, name in enumerate(names):
        for trace in _traces(figure.views[name]):
            fig.add_trace(trace.update(visible=k == 0))
            owner.append(k)
    fig.update_layout(template="plotly_white", **_frame([figure.views[n] for n in names]),
                      **{key.replace(".", "_"): value for key, value in _layout(figure.views[names[0]]).items()})
    if len(names) > 1:
        buttons = [dict(label=name, method="update",
                        args=[{"visible": [o == k for o in owner]}, _layout(figure.views[name])])
                   for k, name in enumerate(names)]
        few = len(names) <= 4  # a row of buttons; more open as a list downwards, over the plot, not off its edge
        fig.update_layout(updatemenus=[dict(buttons=buttons, type="buttons" if few else "dropdown",
                                            direction="right" if few else "down", x=0.0, y=1.0, xanchor="left",
                                            yanchor="bottom",
                                            active=0, pad=dict(b=4), bgcolor="white")])
    return fig


def _frame(views):
    """The frame the views share (height, margins, where the title and the legends sit): tall enough that the
    legend beside the plot lists the longest view's entries without a scrollbar (plotly cuts a taller
    legend at the plot's height), with room below the x label for the key of marks when a view has one."""
    keyed = any(v.sizes or any(s.bad_x for s in v.series) for v in views)
    entries = max(len(v.series) + len(v.hlines) for v in views)
    legend = LEGEND_ROW * (entries + 1)  # a row more for the legend's padding
    frame = dict(height=max(HEIGHT, TOP + BOTTOM + KEY_ROOM * keyed + legend), margin=dict(t=TOP, r=30),
                 title=dict(x=0.02, y=0.97), legend=dict(x=1.02, y=0.5, yanchor="middle", tracegroupgap=0))
    if keyed:
        frame["legend2"] = dict(orientation="h", x=0.5, xanchor="center", y=0, yref="container", yanchor="bottom")
    return frame


def _layout(view):
    """The layout of one view, as the relayout dict its button applies."""
    h, title = view.heatmap, view.title.replace("\n", "<br><sup>", 1).replace("\n", "<br>")
    return {"title.text": title + "</sup>" * ("\n" in view.title), "xaxis.title.text": view.xlabel,
            "yaxis.title.text": view.ylabel, "xaxis.type": "log" if view.xlog else "linear",
            "yaxis.autorange": "reversed" if h else True, "yaxis.scaleanchor": "x" if h else None,
            "xaxis.constrain": "domain" if h else None, "xaxis.dtick": 1 if h else None,
            "xaxis.exponentformat": "power" if view.xlog else None,
            "xaxis.tickvals": view.xticks, "xaxis.ticktext": [f"{v:,}" for v in view.xticks or []] or None,
            "shapes": [dict(type="rect", x0=_columns(h)[j] - 0.5, x1=_columns(h)[j] + 0.5, y0=h.ticks[i] - 0.5,
                            y1=h.ticks[i] + 0.5, line=dict(color=c, width=2)) for i, j, c in h.outline] if h else [],
            **({"yaxis.type": "log", "yaxis.exponentformat": "power"} if view.ylog else {})}


def _traces(view):
    if h := view.heatmap:
        z = np.asarray(h.z, dtype=float)
        low, high = h.limits or (None, None)
        return [go.Heatmap(z=np.where(np.isfinite(z), z, None), x=_columns(h), y=h.ticks, hoverongaps=False,
                           meta="heatmap", colorscale="RdBu" if h.diverging else "Viridis",
                           zmid=0 if h.diverging else None, zmin=low, zmax=high,
                           colorbar=dict(title=dict(text=h.colorbar, side="right")),
                           texttemplate="%{z:.1f}" if len(h.ticks) <= 12 else None,
                           hovertemplate=h.hover + "<extra></extra>")]
    traces, xs = [], [x for s in view.series for x in s.x]
    for s in view.series:
        rgb = tuple(int(s.color[i:i + 2], 16) for i in (1, 3, 5))
        if s.line and s.err is not None:
            y, e = np.asarray(s.y), np.asarray(s.err)
            traces.append(go.Scatter(x=[*s.x, *s.x[::-1]], y=[*(y + e), *(y - e)[::-1]], fill="toself", mode="lines",
                                     fillcolor=f"rgba{(*rgb, 0.18)}", line=dict(width=0), hoverinfo="skip",
                                     showlegend=False, legendgroup=s.name, meta=f"err:{s.name}"))
        notes = [" · ".join(p for p in parts if p) for parts in zip(
            s.text or [""] * len(s.x), s.hover or [""] * len(s.x),
            [f"± {e:.2f} (95% CI)" if e == e else "one run" for e in s.err or [np.nan] * len(s.x)])]
        traces.append(go.Scatter(
            x=s.x, y=s.y, mode="lines+markers" if s.line else "markers", name=s.name, legendgroup=s.name, text=notes,
            meta=f"series:{s.name}", line=dict(color=s.color, width=2.5),
            marker=dict(symbol=SYMBOLS.get(s.marker, "circle"), color=s.color, opacity=0.85,
                        size=np.sqrt(s.area).tolist() if s.area else 9, line=dict(color="black", width=0.6)),
            error_y=dict(array=s.err, color=s.color) if s.err is not None and not s.line else None,
            hovertemplate=f"<b>{s.name}</b><br>x %{{x:,.4g}}<br>y %{{y:.2f}}<br>%{{text}}<extra></extra>"))
        if s.bad_x:  # no legend entry: the key's one ✕ explains it; a click on its series' entry hides it too
            traces.append(go.Scatter(x=s.bad_x, y=s.bad_y, mode="markers", name=f"{s.name}: not converged",
                                     legendgroup=s.name, meta=f"bad:{s.name}", showlegend=False,
                                     marker=dict(symbol="x-thin", size=11, line=dict(color=s.color, width=2.5)),
                                     hovertemplate=f"{s.name}: a run that did not converge, %{{y:.2f}}<extra></extra>"))
    traces += [go.Scatter(x=[min(xs), max(xs)], y=[y, y], mode="lines", name=name, meta=f"line:{name}",
                          line=dict(color=color, dash="dash" if "full" in name else "dot", width=1.5))
               for name, y, color in view.hlines]
    if any(s.bad_x for s in view.series):
        traces.append(go.Scatter(x=[None], y=[None], mode="markers", name=NOT_CONVERGED, meta="key:not converged",
                                 legend="legend2", marker=dict(symbol="x-thin", size=11,
                                                               line=dict(color="black", width=2.5))))
    return traces + [go.Scatter(x=[None], y=[None], mode="markers", name=f"peak memory {label}", meta="size key",
                                legend="legend2", marker=dict(size=np.sqrt(area), color="lightgrey",
                                                              line=dict(color="black", width=0.6)))
                     for label, area in view.sizes]
