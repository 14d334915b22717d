"""Both renderers of every figure family draw the same marks, and the explorers list the same views.

For each figure of adapterlab.report.figures.registered(), drawn from the committed default tables (the figures
that ship), every view is rendered as a PNG (matplotlib) and found among the HTML's views (plotly
buttons); the test reads back what each renderer actually drew (matplotlib artists by gid, plotly
traces by meta) and compares it with the definition: the same points (x, y), the same ✕ markers on
runs that did not converge, error bars wherever the definition has them, the same heatmap cells and
the same titles. A renderer that drops the ✕ markers (as the interactive figures once did) fails.
"""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from adapterlab.report import figures, plots, widgets  # noqa: E402
from adapterlab.experiments import profiles
from adapterlab.families import teaching

RESULTS = profiles.project_root() / "data" / "results" / "default"


def committed(family):
    entry = figures.entry(family)[1]
    if not (RESULTS / entry.source).exists():
        pytest.skip(f"no committed {entry.source}")
    if family == "learning_curves":
        return teaching.teaching_records("default")
    return pd.read_csv(RESULTS / entry.source)


def points(xs, ys):
    return sorted((round(float(x), 6), round(float(y), 6)) for x, y in zip(xs, ys) if y is not None)


def png_marks(fig):
    """{gid: points} of what matplotlib drew, and the heatmap's cells (None when there is none)."""
    marks, cells = {}, None
    for ax in fig.axes:
        for artist in [*ax.get_lines(), *ax.collections]:
            gid = artist.get_gid() or ""
            if gid.startswith(("series:", "bad:")):
                xy = artist.get_xydata() if hasattr(artist, "get_xydata") else artist.get_offsets()
                marks[gid] = points(xy[:, 0], xy[:, 1])
            elif gid.startswith("err:"):
                marks[gid] = True
            elif gid == "heatmap":
                cells = np.ma.filled(artist.get_array().astype(float), np.nan).ravel()
    return marks, cells


def html_marks(fig, k):
    """The same for the k-th view of a plotly figure: the traces its button makes visible."""
    visible = fig.layout.updatemenus[0].buttons[k].args[0]["visible"] if fig.layout.updatemenus else [True] * len(
        fig.data)
    marks, cells = {}, None
    for trace, shown in zip(fig.data, visible):
        meta = str(trace.meta or "")
        if not shown:
            continue
        if meta.startswith(("series:", "bad:")):
            marks[meta] = points(trace.x, trace.y)
            if meta.startswith("series:") and trace.error_y.array is not None:
                marks["err:" + meta[len("series:"):]] = True
        elif meta.startswith("err:"):
            marks[meta] = True
        elif meta == "heatmap":
            cells = np.array([[np.nan if v is None else v for v in row] for row in trace.z], dtype=float).ravel()
    return marks, cells


def expected(view):
    marks = {}
    for s in view.series:
        marks[f"series:{s.name}"] = points(s.x, s.y)
        if s.bad_x:
            marks[f"bad:{s.name}"] = points(s.bad_x, s.bad_y)
        if s.err is not None:
            marks[f"err:{s.name}"] = True
    return marks


@pytest.mark.parametrize("family", list(figures.registered()))
def test_png_and_html_draw_the_same_marks_in_every_view(family):
    figure = figures.define(family, committed(family))
    page = plots.html(figure)
    labels = [b.label for b in page.layout.updatemenus[0].buttons] if page.layout.updatemenus else list(figure.views)
    assert labels == list(figure.views)  # the HTML's controls list the definition's views, in order
    for k, name in enumerate(figure.views):
        view = figure.views[name]
        fig = plots.png(figure, [name])
        drawn_png, cells_png = png_marks(fig)
        drawn_html, cells_html = html_marks(page, k)
        assert drawn_png == expected(view) == drawn_html, (family, name)
        if view.heatmap:
            assert np.allclose(cells_png, np.ravel(view.heatmap.z), equal_nan=True)
            assert np.allclose(cells_html, np.ravel(view.heatmap.z), equal_nan=True)
        assert fig.axes[0].get_title() == view.title
        button_title = page.layout.updatemenus[0].buttons[k].args[1]["title.text"] if page.layout.updatemenus \
            else page.layout.title.text
        assert plots._layout(view)["title.text"] == button_title
        plt.close(fig)


@pytest.mark.parametrize("family", ["init_scale", "param_performance", "low_resource", "learning_curves"])
def test_both_renderers_mark_the_unconverged_runs_of_a_committed_table(family):
    """The parity above would pass vacuously without ✕ markers: on the committed table with its first run
    marked unconverged (a converged protocol may leave none), both renderers must carry the markers."""
    table = committed(family)
    if isinstance(table, pd.DataFrame):
        table = table.copy()
        table.loc[table.index[0], "converged"] = False
    else:  # the teaching runs' records, {method: record}
        first = next(iter(table))
        table = {**table, first: {**table[first], "converged": False}}
    figure = figures.define(family, table)
    bad = {s.name for v in figure.views.values() for s in v.series if s.bad_x}
    assert bad
    page = plots.html(figure)
    assert {str(t.meta)[4:] for t in page.data if str(t.meta).startswith("bad:")} == bad
    # one key entry explains every ✕; no series has a legend entry of its own for them
    assert [t.name for t in page.data if t.legend == "legend2" and t.visible][:1] == [plots.NOT_CONVERGED]
    assert not [t.name for t in page.data if str(t.meta).startswith("bad:") and t.showlegend is not False]
    fig = plots.png(figure)
    assert [t.get_text() for legend in fig.legends for t in legend.get_texts()].count(plots.NOT_CONVERGED) == 1
    plt.close(fig)


def test_the_readme_tradeoff_lists_each_method_once_and_its_legend_is_no_taller_than_its_plot():
    """The README's figure: sixteen method lines, most with unconverged runs. The legend beside the plot
    names each line once (then the ★ of the methods within the margin, where any is, and the majority class);
    the key below explains the ✕ and the marker areas once; the legend fits the plot."""
    table = committed("param_performance")
    view_name = figures.entry("param_performance")[1].png["param_performance_tradeoff"][0]
    figure = figures.define("param_performance", table)
    view = figure.views[view_name]
    methods = [s.name for s in view.series if not s.name.startswith("within ")]
    assert len(methods) == len(set(table["family"])) == 16 and any(s.bad_x for s in view.series)
    lines = [s.name for s in view.series] + [name for name, *_ in view.hlines]
    assert lines[-1] == "majority class"
    key = [plots.NOT_CONVERGED, *[f"peak memory {label}" for label, _ in view.sizes]]
    fig = plots.png(figure, [view_name])
    renderer, ax = fig.canvas.get_renderer(), fig.axes[0]
    beside, below = sorted(fig.legends, key=lambda legend: -legend.get_window_extent(renderer).x0)
    assert [t.get_text() for t in beside.get_texts()] == lines and [t.get_text() for t in below.get_texts()] == key
    assert beside.get_window_extent(renderer).height <= ax.get_window_extent(renderer).height
    plt.close(fig)
    page = plots.html(figure, [view_name])
    assert [t.name for t in page.data if t.showlegend is not False and t.legend is None] == lines
    assert [t.name for t in page.data if t.legend == "legend2"] == key  # its height: tests/checks/test_browser.py


def test_a_single_run_says_so_and_an_unconverged_one_is_flagged_in_both_titles():
    table = committed("layer_removal").assign(converged=False)
    view = figures.define("layer_removal", table).views["score"]
    assert "one trained model, no error bars" in view.title and "did not converge" in view.title
    fig = plots.png(figures.define("layer_removal", table), ["score"])
    assert "did not converge" in fig.axes[0].get_title()
    assert "did not converge" in plots.html(figures.define("layer_removal", table)).layout.title.text
    plt.close(fig)


@pytest.mark.parametrize("family", ["layer_removal", "init_scale", "param_performance", "low_resource",
                                    "init_std_deviation"])
def test_the_live_explorer_lists_the_same_views(family):
    table = committed(family)
    box = widgets.explorer(family, table, live=True)
    assert list(box.explorer.view.options) == list(figures.define(family, table).views)
    plt.close("all")


def test_every_method_line_of_the_committed_tradeoff_gets_its_own_colour_and_marker():
    # 06 draws 16 method lines; a palette shorter than the lines once failed with a
    # ZeroDivisionError. Each line needs a (colour, marker) no other line has, and a marker plotly can draw
    table = pd.read_csv(profiles.results_dir("default") / "param_performance.csv")
    lines = list(dict.fromkeys(table["family"]))
    styles = figures.colors(lines)
    assert len(styles) == len(lines) and len(set(styles.values())) == len(lines)
    assert {marker for _, marker in styles.values()} <= set(plots.SYMBOLS)


def test_a_key_beyond_every_method_line_still_gets_a_style():
    styles = figures.colors([*figures.LINE_ORDER, "airline"])  # all 16 slots taken, then one more key
    assert len(styles) == len(figures.LINE_ORDER) + 1 and styles["airline"][0] in figures.PALETTE
