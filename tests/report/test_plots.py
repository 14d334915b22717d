"""Figure definitions, renderers and explorers on small hand-made tables with the contract columns.

The numbers here are test inputs only (no figure in the repo is drawn from them); the committed
figures are checked in test_figure_parity.py.
"""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import plotly.graph_objects as go  # noqa: E402
import pytest  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from adapterlab.report import figures, plots, widgets  # noqa: E402

L = 4


def layer_removal_df(tasks=("t1",), converged=True):
    return pd.DataFrame([dict(task=t, first_layer=i, last_layer=j, metric="accuracy", value=0.9 - 0.05 * (j - i + 1),
                              full_value=0.9, baseline=0.6, seed=0, converged=converged)
                         for t in tasks for i in range(L) for j in range(i, L)])


def init_scale_df(tasks=("t1",), seeds=(0, 1, 2)):
    return pd.DataFrame([dict(task=t, init_std=s, seed=seed, metric="accuracy", value=0.8 - 0.1 * s + 0.01 * seed,
                              baseline=0.6, converged=seed != 1)
                         for t in tasks for s in (1e-6, 1e-4, 1e-2, 1.0) for seed in seeds])


def param_performance_df():
    spec = [("houlsby", "adapters", "houlsby m=2", 1_000), ("houlsby", "adapters", "houlsby m=8", 4_000),
            ("bitfit", "bitfit", "bitfit", 27_267), ("compacter", "compacter", "compacter n=4 m=64", 27_331),
            ("layernorm", "layernorm", "layernorm", 500), ("full", "full", "full", 200_000)]
    rows = [dict(task="t1", method=m, family=f, label=lab, trainable=p, percent=100 * p / 200_000, metric="accuracy",
                 value=0.8 + 0.01 * np.log10(p) + 0.01 * seed * (1 + np.log10(p) / 10), seed=seed, peak_memory_mb=1000 + p / 1000,
                 converged=not (m == "bitfit" and seed == 1), baseline=0.6)
            for m, f, lab, p in spec for seed in (0, 1)]
    df = pd.DataFrame(rows)
    full = df[df["method"] == "full"].set_index("seed")["value"]
    return df.assign(value_minus_full=df["value"] - df["seed"].map(full))


def low_resource_df():
    return pd.DataFrame([dict(task="t1", method=m, train_size=n, seed=seed, metric="accuracy", baseline=0.6,
                              value=0.5 + 0.05 * np.log10(n) + 0.01 * seed + (0.02 * seed if m == "full" else 0),
                              converged=not (m == "compacter++" and n == 100))
                         for m in ("compacter++", "full") for n in (100, 1000) for seed in (0, 1, 2)])


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def series(view, name):
    (s,) = [s for s in view.series if s.name == name]
    return s


# --------------------------------------------------------------------------- the noise a figure shows

def test_the_band_is_the_95_percent_t_interval_of_the_mean():
    # sd of (1, 2, 3) with ddof 1 is 1, so SE = 1/sqrt(3); one run has no SE at all
    assert figures.ci95([1, 2, 3]) == pytest.approx(4.302653 / np.sqrt(3))  # t_{0.975, 2} x SE, SE = 1 / sqrt(3)
    assert np.isnan(figures.ci95([0.8]))


def test_init_scale_views_mean_then_each_seed_and_each_title_says_how_to_read_it():
    figure = figures.define("init_scale", init_scale_df())
    assert list(figure.views) == ["mean, 95% CI", "seed 0", "seed 1", "seed 2"]
    mean = series(figure.views["mean, 95% CI"], "t1")
    # seeds 0.01 apart: sd 0.01, SE 0.01 / sqrt(3), x SCALE, x t_{0.975, 2} = 4.3027
    assert mean.err == pytest.approx([100 * 4.302653 * 0.01 / np.sqrt(3)] * 4)
    assert mean.bad_x == [1e-6, 1e-4, 1e-2, 1.0]  # seed 1 never converged: one ✕ per std, at its own value
    assert "mean of 3 seeds, 95% CI (t, 2 df)" in figure.views["mean, 95% CI"].title
    one = figure.views["seed 2"]
    assert "seed 2 only: no error bars" in one.title and series(one, "t1").err is None
    # the explorer narrowed to one seed: the title names it
    picked = figures.define("init_scale", init_scale_df(seeds=(1,)))
    assert list(picked.views) == ["mean, 95% CI"] and "seed 1 only: no error bars" in picked.views["mean, 95% CI"].title


def test_init_scale_keeps_rows_trained_live_out_of_the_mean():
    df = init_scale_df()
    extra = pd.DataFrame([dict(task="t1", init_std=1e-3, seed=5, metric="accuracy", value=0.1, source="extra")])
    view = figures.define("init_scale", pd.concat([df, extra], ignore_index=True)).views["mean, 95% CI"]
    assert series(view, "t1").y == series(figures.define("init_scale", df).views["mean, 95% CI"], "t1").y
    assert series(view, "t1: trained live").y == [10.0]


def test_low_resource_difference_to_full_is_paired_by_seed():
    # full is 0.02·seed above Compacter++ at every size: the paired differences are -0, -2, -4 points
    view = figures.define("low_resource", low_resource_df()).views["minus full fine-tuning"]
    s = series(view, "Compacter++")
    assert [v.name for v in view.series] == ["Compacter++"]  # full minus itself is the 0 line, not a series
    assert s.y == pytest.approx([-2.0, -2.0]) and s.err == pytest.approx([4.302653 * 2 / np.sqrt(3)] * 2)
    assert s.bad_x == [100] * 3 and "paired by seed" in view.title
    assert ("full fine-tuning", 0.0, figures.colors(["full"])["full"][0]) in view.hlines


def test_param_performance_views_and_honest_marks():
    figure = figures.define("param_performance", param_performance_df())
    assert list(figure.views) == ["vs. full fine-tuning", "score", "% trained, memory"]
    relative = figure.views["vs. full fine-tuning"]
    assert series(relative, "BitFit").bad_y and series(relative, "BitFit").err is not None
    # one setting per line: the legend names it, no label on the point (it sat on LayerNorm's marker)
    assert series(relative, "full fine-tuning").text is None and series(relative, "Houlsby adapters").text == [
        "m=2", "m=8"]
    # BitFit and Compacter train 27,267 and 27,331 parameters: drawn side by side, the true count in the hover
    bitfit, compacter = series(relative, "BitFit"), series(relative, "Compacter")
    assert bitfit.x[0] != 27_267 and compacter.x[0] > bitfit.x[0] and "27,267" in bitfit.hover[0]
    memory = figures.define("param_performance", param_performance_df()).views["% trained, memory"]
    areas = {s.name: s.area[0] for s in memory.series if not s.line}
    assert areas["full fine-tuning"] / areas["LayerNorm only"] == pytest.approx(1200 / 1000.5)  # area ∝ memory
    assert [label for label, _ in memory.sizes] == ["250 MB", "500 MB", "1,000 MB"]  # round, up to the largest


def test_layer_removal_is_one_model_and_says_so():
    figure = figures.define("layer_removal", layer_removal_df(tasks=("t1", "t2")), span=(1, 2))
    assert list(figure.views) == ["t1: score", "t1: change vs. no removal", "t2: score", "t2: change vs. no removal"]
    view = figure.views["t1: change vs. no removal"]
    z = np.array(view.heatmap.z)
    assert np.isnan(z[np.tril_indices(L, -1)]).all() and z[1, 2] == pytest.approx(-10)
    assert view.heatmap.lines == pytest.approx({"no removal": 0.0, "majority class": -30.0})
    assert (1, 2, "#E69F00") in view.heatmap.outline and "no error bars" in view.title


def test_bad_tables_name_the_problem_and_the_fix():
    with pytest.raises(ValueError, match="first_layer.*layer_removal.csv"):
        figures.define("layer_removal", pd.DataFrame({"task": ["t"], "value": [0.5]}))
    with pytest.raises(ValueError, match="choose one of"):
        figures.define("nope", pd.DataFrame())
    with pytest.raises(ValueError, match="choose among"):
        plots.png(figures.define("low_resource", low_resource_df()), ["absolute"])


# --------------------------------------------------------------------------- what the PNG looks like

def png_legends(fig):
    """(the labels of the legend right of the axes, the labels of the key below them); fails when a legend
    sits anywhere else, over the axes included."""
    renderer = fig.canvas.get_renderer()
    frame = Bbox.union([ax.get_window_extent(renderer) for ax in fig.axes])
    boxes = [(legend, legend.get_window_extent(renderer)) for legend in fig.legends]
    beside = [legend for legend, box in boxes if box.x0 >= frame.x1]
    below = [legend for legend, box in boxes if box.y1 <= frame.y0]
    assert len(beside) <= 1 and len(below) <= 1 and len(beside) + len(below) == len(fig.legends)
    return tuple([t.get_text() for legend in found for t in legend.get_texts()] for found in (beside, below))


def html_legends(page):
    """The same for the first view of an interactive figure: its visible traces in each legend."""
    shown = [t for t in page.data if t.visible is not False and t.showlegend is not False]
    return ([t.name for t in shown if t.legend in (None, "legend")], [t.name for t in shown if t.legend == "legend2"])


def test_one_legend_entry_per_method_and_one_key_for_every_unconverged_run():
    """A method's unconverged runs are its ✕ marks: the key explains the ✕ once for every method (BitFit's
    run here), and the legend beside the plot names each method once, whether or not a run of it converged, then
    the reference lines, the majority class among them."""
    figure = figures.define("param_performance", param_performance_df())
    methods = ["Houlsby adapters", "full fine-tuning", "LayerNorm only", "BitFit", "Compacter"]
    sizes = ["peak memory 250 MB", "peak memory 500 MB", "peak memory 1,000 MB"]
    for view, beside, key in (("vs. full fine-tuning", [*methods, "full fine-tuning level", "majority class"],
                               [plots.NOT_CONVERGED]),
                              ("% trained, memory", [*methods, "majority class"], [plots.NOT_CONVERGED, *sizes])):
        assert png_legends(plots.png(figure, [view])) == (beside, key)
        assert html_legends(plots.html(figure, [view])) == (beside, key)
    # every run converged: no ✕ to explain, and the memory view's key keeps only the marker areas
    converged = figures.define("param_performance", param_performance_df().assign(converged=True))
    assert png_legends(plots.png(converged, ["vs. full fine-tuning"]))[1] == []
    assert html_legends(plots.html(converged, ["% trained, memory"]))[1] == sizes
    assert "legend2" not in plots.html(converged, ["vs. full fine-tuning"]).layout.to_plotly_json()


def test_a_legend_takes_the_fewest_columns_that_keep_it_no_taller_than_its_plot():
    def drawn(lines):
        """(entries, columns, the legend's height, the pitch of its rows, the plot's height) in pixels."""
        view = figures.View("lines", "x", "y", series=[figures.Series(f"line {k}", [1, 10], [k, k + 1])
                                                       for k in range(lines)])
        fig = plots.png(figures.Figure("lines", {"lines": view}))
        fig.canvas.draw()  # places the legend's texts
        renderer, (legend,) = fig.canvas.get_renderer(), fig.legends
        boxes = [t.get_window_extent(renderer) for t in legend.get_texts()]
        rows = sorted({round(b.y0, 3) for b in boxes})
        pitch = (rows[-1] - rows[0]) / (len(rows) - 1)
        return len(boxes), len({round(b.x0) for b in boxes}), legend.get_window_extent(renderer).height, pitch, \
            fig.axes[0].get_window_extent(renderer).height

    assert drawn(4)[:2] == (4, 1)
    entries, columns, legend, pitch, plot = drawn(60)
    assert entries == 60 and columns > 1 and legend <= plot
    # one column fewer would not fit: its rows alone, without the legend's padding, stand taller than the plot
    assert pitch * -(-60 // (columns - 1)) > plot


def test_legends_sit_outside_the_axes_and_labels_stay_inside_without_overlap():
    for family, df, view in (("low_resource", low_resource_df(), "score"),
                             ("param_performance", param_performance_df(), "vs. full fine-tuning")):
        fig = plots.png(figures.define(family, df), [view])
        beside, key = png_legends(fig)
        assert beside and key == [plots.NOT_CONVERGED]
        renderer, ax = fig.canvas.get_renderer(), fig.axes[0]
        frame = ax.get_window_extent(renderer)
        boxes = [t.get_window_extent(renderer) for t in ax.texts]
        assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 for b in boxes)
        assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]


def test_a_method_keeps_its_colour_in_every_figure():
    low = figures.define("low_resource", low_resource_df()).views["score"]
    params = figures.define("param_performance", param_performance_df()).views["score"]
    assert series(low, "full fine-tuning").color == series(params, "full fine-tuning").color
    assert figures.colors(["compacter++"]) == {"compacter++": figures.colors(["full", "compacter++"])["compacter++"]}


def test_save_figure_writes_the_same_bytes_and_shares_one_plotly_js(tmp_path):
    """Redrawing must not dirty git: no version stamp in the PNG, plotly's div id fixed by the name."""
    figure = figures.define("layer_removal", layer_removal_df())
    first, second = ([plots.save_figure(draw(figure), "heatmap", "smoke", tmp_path).read_bytes()
                      for draw in (plots.png, plots.html)] for _ in range(2))
    assert first == second
    png, page = first
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and b"Matplotlib" not in png and b"tEXtSoftware" not in png
    assert 'id="figure-heatmap"' in page.decode() and 'src="plotly.min.js"' in page.decode()
    assert "https://" not in page.decode().split("<body>")[0].lower()
    assert [p.name for p in (tmp_path / "figures" / "smoke").glob("*.js")] == ["plotly.min.js"]


def test_save_writes_every_registered_file_of_a_family(tmp_path):
    paths = figures.save("param_performance", param_performance_df(), "smoke", tmp_path)
    assert {p.parent for p in paths} == {tmp_path / "figures" / "smoke"}
    assert sorted(p.name for p in paths) == ["param_performance_params.html", "param_performance_params.png",
                                             "param_performance_tradeoff.html", "param_performance_tradeoff.png"]


def test_init_std_deviation_has_a_view_per_std_with_its_tokens_on_log_axes_and_writes_no_file(tmp_path, monkeypatch):
    df = pd.DataFrame([dict(init_std=s, seed=k, deviation=s * s * (1 + k),
                            per_token=[s * s, 2 * s * s] if k == 0 else None) for s in (1e-3, 1e-2) for k in (0, 1)])
    figure = figures.define("init_std_deviation", df)
    assert list(figure.views) == ["init std 1e-03", "init std 1e-02"]
    curve, tokens, star = figure.views["init std 1e-02"].series
    # means of two products of floats: a few ulps (~1e-16 relative) from the decimal values
    assert curve.x == [1e-3, 1e-2] and curve.y == pytest.approx([1.5e-6, 1.5e-4], rel=1e-12)
    assert tokens.name == "each token (seed 0)" and tokens.x == [1e-2, 1e-2] and tokens.y == [1e-4, 2e-4]
    assert star.x == [1e-2] and star.y == pytest.approx([1.5e-4], rel=1e-12) and not star.line
    fig = plots.png(figure, ["init std 1e-02"])
    assert fig.axes[0].get_xscale() == fig.axes[0].get_yscale() == "log"
    plt.close(fig)
    page = plots.html(figure)
    assert page.layout.yaxis.type == "log" and page.layout.updatemenus[0].buttons[1].args[1]["yaxis.type"] == "log"
    # the committed table has no per-token column: each view holds the curve and its star
    bare = figures.define("init_std_deviation", df.drop(columns="per_token"))
    assert [s.name for s in bare.views["init std 1e-03"].series] == ["mean of 2 initialisation(s)", "this init std"]
    monkeypatch.setenv("ADAPTERLAB_OUT", str(tmp_path))
    assert figures.save("init_std_deviation", df, "smoke") == []  # notebook 01 draws its PNG by hand


# --------------------------------------------------------------------------- explorers

def test_without_a_live_frontend_the_explorer_is_the_kernel_free_html_figure():
    assert not widgets.live_frontend()  # pytest runs no kernel: like papermill, nothing would render widgets
    page = widgets.explorer("low_resource", low_resource_df())
    assert isinstance(page, go.Figure)
    assert [b.label for b in page.layout.updatemenus[0].buttons] == ["score", "minus full fine-tuning"]
    assert not isinstance(widgets.explorer("low_resource", low_resource_df(), live=True), go.Figure)  # forced


def test_layer_removal_explorer_outlines_the_span_and_prints_its_numbers():
    box = widgets.explorer("layer_removal", layer_removal_df(tasks=("t1", "t2")), live=True)
    e = box.explorer
    assert "layers 0–3" in e.info.value and list(e.view.options) == ["score", "change vs. no removal"]
    e.first.value = 2
    assert e.last.min == 2 and "layers 2–3" in e.info.value and (2, 3, "#E69F00") in e.shown.heatmap.outline
    e.view.value = "change vs. no removal"
    e.pickers["task"].value = "t2"  # the task picker narrows the table to one task: the view stays
    assert e.view.value == "change vs. no removal" and e.shown.task == "t2" and e.shown.heatmap.diverging


def test_init_scale_explorer_names_a_single_seed_and_trains_an_extra_std_on_click():
    # nothing trains until the button is clicked; the new row is a diamond, out of the seed mean
    calls = []

    def train_extra(init_std, task, seed):
        calls.append((init_std, task, seed))
        return dict(task=task, init_std=init_std, seed=seed, metric="accuracy", value=0.5)

    box = widgets.explorer("init_scale", init_scale_df(), live=True, train_extra=train_extra, estimate_seconds=42)
    e = box.explorer
    assert calls == [] and list(e.view.options) == ["mean, 95% CI", "seed 0", "seed 1", "seed 2"]
    e.pickers["seed"].value = (2,)
    assert list(e.view.options) == ["mean, 95% CI"] and "seed 2 only" in e.shown.title
    std, task, seed, button, status = box.children[2].children
    button.click()
    assert len(calls) == 1 and (e.table["source"] == "extra").sum() == 1
    assert "validation accuracy 50.00 %" in status.value and not button.disabled
    assert any(s.name == "t1: trained live" for s in e.shown.series)


def test_param_performance_and_low_resource_explorers_filter_the_table():
    e = widgets.explorer("param_performance", param_performance_df(), live=True).explorer
    e.pickers["family"].value = ("adapters", "full")
    assert {s.name for s in e.shown.series} == {"Houlsby adapters", "full fine-tuning"}
    e = widgets.explorer("low_resource", low_resource_df(), live=True).explorer
    e.pickers["method"].value = ()  # an empty pick says so in the explorer's output instead of raising
    e.pickers["method"].value = ("full",)
    assert [s.name for s in e.shown.series] == ["full fine-tuning"]
