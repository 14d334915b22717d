"""Figure builders and widget explorers on small hand-made tables with the contract columns.

The numbers here are test inputs only (no figure in the repo is drawn from them).
"""
import matplotlib
import matplotlib.colors

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from adapterlab import plots, widgets  # noqa: E402

L = 4


def layer_removal_df(tasks=("t1",), layers=L, as_rows=False):
    rows = []
    for t in tasks:
        for i in range(layers):
            for j in range(i, layers):
                rows.append(dict(task=t, first_layer=i, last_layer=j, metric="accuracy",
                                 value=0.9 - 0.05 * (j - i + 1)))
        if as_rows:
            rows.append(dict(task=t, first_layer=np.nan, last_layer=np.nan, metric="accuracy", value=0.9,
                             kind="no_removal"))
            rows.append(dict(task=t, first_layer=np.nan, last_layer=np.nan, metric="accuracy", value=0.6,
                             kind="majority"))
    df = pd.DataFrame(rows)
    if not as_rows:
        df["full_value"], df["baseline"] = 0.9, 0.6  # as experiments.layer_removal names them
    return df


def init_scale_df(tasks=("t1", "t2"), seeds=(0, 1)):
    stds = [1e-6, 1e-4, 1e-2, 1.0]
    return pd.DataFrame([dict(task=t, init_std=s, seed=seed, metric="accuracy", value=0.8 - 0.1 * s + 0.01 * seed)
                         for t in tasks for s in stds for seed in seeds])


def param_performance_df(tasks=("t1",)):
    spec = [("houlsby", 2, 1_000), ("houlsby", 8, 4_000), ("top-k", 1, 50_000), ("top-k", 2, 100_000),
            ("layernorm", None, 500), ("full", None, 200_000), ("compacter++", 4, 300)]
    return pd.DataFrame([dict(task=t, method=m, family=m, size=s, trainable=p, percent=100 * p / 200_000,
                              metric="accuracy", value=0.8 + 0.01 * np.log10(p), train_seconds=10 + p / 1e4,
                              peak_memory_mb=500 + p / 1e3, epochs=2)
                         for t in tasks for m, s, p in spec])


def low_resource_df(tasks=("t1",), seeds=(0, 1)):
    return pd.DataFrame([dict(task=t, method=m, train_size=n, seed=seed, metric="accuracy",
                              value=0.5 + 0.05 * np.log10(n) + 0.01 * seed)
                         for t in tasks for m in ("compacter++", "full") for n in (50, 100, 200) for seed in seeds])


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# --------------------------------------------------------------------------- layer removal

@pytest.mark.parametrize("as_rows", [False, True])
def test_layer_removal_grid_is_upper_triangular(as_rows):
    g = plots.layer_removal_grid(layer_removal_df(as_rows=as_rows))
    assert g.z.shape == (L, L)
    assert np.isnan(g.z[np.tril_indices(L, -1)]).all()
    assert np.isfinite(g.z[np.triu_indices(L)]).all()
    assert g.no_removal == pytest.approx(0.9) and g.majority == pytest.approx(0.6)
    assert g.all_removed == pytest.approx(0.9 - 0.05 * L)
    assert g.span(1, 2)[1] == pytest.approx(-0.1)


@pytest.mark.parametrize("relative", [False, True])
def test_layer_removal_heatmap_static(relative):
    fig = plots.layer_removal_heatmap(layer_removal_df(), relative=relative, span=(1, 2))
    ax = fig.axes[0]
    assert "first layer" in ax.get_ylabel() and "last layer" in ax.get_xlabel()
    mesh = ax.collections[0].get_array()
    assert mesh.size == L * L and np.ma.count_masked(mesh) == L * (L - 1) // 2  # below the diagonal
    assert "majority class" in ax.get_title()


def test_layer_removal_heatmap_interactive_with_task_dropdown():
    fig = plots.layer_removal_heatmap_interactive(layer_removal_df(tasks=("t1", "t2")))
    assert len(fig.data) == 2 and fig.data[0].visible and not fig.data[1].visible
    z = np.array(fig.data[0].z, dtype=float)
    assert z.shape == (L, L) and np.isnan(z[np.tril_indices(L, -1)]).all()
    assert "customdata" in fig.data[0].hovertemplate
    labels = [[b.label for b in menu.buttons] for menu in fig.layout.updatemenus]
    assert ["validation metric", "change vs. no removal"] in labels and ["t1", "t2"] in labels
    assert fig.layout.yaxis.autorange == "reversed"
    assert len(fig.layout.shapes) == L + 1  # the diagonal cells + the all-removed cell


def test_layer_removal_heatmap_keeps_its_key_and_marks_clear_of_the_cells():
    """The key of the colour-bar lines sits below the heatmap (not over a cell), and the lines at the
    extremes (no removal on top, majority class at the bottom) lie inside the colour bar, not on its edge."""
    for relative in (False, True):
        fig = plots.layer_removal_heatmap(layer_removal_df(), relative=relative)
        ax, cbar_ax = fig.axes
        renderer = fig.canvas.get_renderer()
        (key,) = fig.legends
        assert [t.get_text() for t in key.get_texts()] == ["no removal", "majority class"]
        assert not key.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))
        low, high = sorted(cbar_ax.get_ylim())
        for line in cbar_ax.get_lines():
            y = line.get_ydata()[0]
            assert low + 0.02 * (high - low) < y < high - 0.02 * (high - low), (relative, line.get_label(), y)


def test_missing_columns_name_the_problem():
    with pytest.raises(ValueError, match="first_layer"):
        plots.layer_removal_heatmap(pd.DataFrame({"task": ["t"], "value": [0.5]}))


# --------------------------------------------------------------------------- init scale

def test_init_scale_plot():
    fig = plots.init_scale_plot(init_scale_df())
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert len(ax.get_lines()) == 2  # one line per task
    assert "initialisation" in ax.get_xlabel() and "%" in ax.get_ylabel()


def test_init_scale_plot_keeps_extra_rows_out_of_the_seed_statistics():
    """A std trained live in the widget (source "extra") is drawn as a diamond only: the mean line, the
    seed band and the seed dots stay those of the sweep."""
    df = init_scale_df(tasks=("t1",))
    extra = pd.DataFrame([dict(task="t1", init_std=1e-2, seed=5, metric="accuracy", value=0.1, source="extra")])

    def drawn(fig):
        ax = fig.axes[0]
        (line,) = ax.get_lines()
        band = ax.collections[0].get_paths()[0].vertices
        dots = [c for c in ax.collections if c.get_label() != "t1: trained live"][1]
        return line.get_ydata().tolist(), band.tolist(), dots.get_offsets().tolist()

    before = drawn(plots.init_scale_plot(df))
    fig = plots.init_scale_plot(pd.concat([df.assign(source="sweep"), extra], ignore_index=True))
    assert drawn(fig) == before
    (diamond,) = [c for c in fig.axes[0].collections if c.get_label() == "t1: trained live"]
    assert diamond.get_offsets().tolist() == [[1e-2, 10.0]]
    assert "mean of 2 seeds" in fig.axes[0].get_title()


def test_param_performance_legend_lists_not_converged_after_every_family():
    # "not converged" is no family: it goes after all of them, also after the last (Compacter++)
    df = param_performance_df().assign(converged=True)
    df.loc[df["method"].isin(["compacter++", "houlsby"]), "converged"] = False
    fig = plots.param_performance_plot(df)
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels[-1] == "not converged" and labels[-2] == plots.FAMILY_NAMES["compacter++"]


def test_init_scale_plot_interactive():
    fig = plots.init_scale_plot_interactive(init_scale_df())
    assert fig.layout.xaxis.type == "log"
    named = [t for t in fig.data if t.showlegend is not False and t.visible is not False]
    assert len(named) == 2
    assert any(t.fill == "toself" for t in fig.data)  # the seed band
    assert len(fig.layout.updatemenus) == 2  # log/linear, mean/each seed


# --------------------------------------------------------------------------- params vs performance

def test_param_performance_summary_and_plot():
    df = param_performance_df()
    s = plots.param_performance_summary(df)
    assert s.loc[s["method"] == "full", "delta"].iloc[0] == pytest.approx(0.0)
    fig = plots.param_performance_plot(df)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert len(ax.get_lines()) >= df["family"].nunique()
    fig = plots.param_performance_plot(df, x="percent", relative=False, families=["houlsby", "full"])
    assert "%" in fig.axes[0].get_xlabel()


def test_param_performance_interactive_and_tradeoff():
    df = param_performance_df(tasks=("t1", "t2"))
    fig = plots.param_performance_plot_interactive(df)
    assert fig.layout.xaxis.type == "log"
    assert sum(bool(t.visible) for t in fig.data) == df["family"].nunique()  # first task only
    assert len(fig.layout.updatemenus) == 3  # y, x, task
    fig = plots.param_performance_tradeoff(df)
    assert fig.axes[0].get_xscale() == "log"
    fig = plots.param_performance_tradeoff_interactive(df)
    assert fig.layout.xaxis.type == "log"
    sizes = np.concatenate([np.atleast_1d(t.marker.size) for t in fig.data])
    assert sizes.min() < sizes.max()  # marker size follows peak memory


def test_tradeoff_labels_do_not_overlap_when_methods_crowd_together():
    """Five methods at nearly the same budget and score: each label still gets a free place."""
    crowd = [("houlsby", 2, 1_000, 0.80), ("houlsby", 8, 1_100, 0.801), ("layernorm", None, 1_050, 0.799),
             ("compacter++", 4, 1_020, 0.8005), ("top-k", 1, 1_080, 0.7995), ("full", None, 200_000, 0.81)]
    df = pd.DataFrame([dict(task="t1", method=m, family=m, size=s, trainable=p, percent=100 * p / 200_000,
                            metric="accuracy", value=v, train_seconds=10, peak_memory_mb=500, epochs=2)
                       for m, s, p, v in crowd])
    fig = plots.param_performance_tradeoff(df)
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in fig.axes[0].texts]
    assert len(boxes) == len(crowd)
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]


def test_param_performance_table_is_relative_to_full():
    t = plots.param_performance_table(param_performance_df())
    full = t[t["family"] == "full"].iloc[0]
    assert full["time_vs_full_pct"] == pytest.approx(100) and full["memory_vs_full_pct"] == pytest.approx(100)
    assert "seconds_per_epoch" in t.columns
    assert (t["memory_vs_full_pct"] <= 100 + 1e-9).all()


# --------------------------------------------------------------------------- low resource

def test_low_resource_plot():
    fig = plots.low_resource_plot(low_resource_df())
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and len(ax.get_lines()) == 2
    fig = plots.low_resource_plot(low_resource_df(), methods=["full"], sizes=[50, 200])
    assert len(fig.axes[0].get_lines()) == 1


def test_low_resource_plot_interactive():
    fig = plots.low_resource_plot_interactive(low_resource_df(tasks=("t1", "t2")))
    assert fig.layout.xaxis.type == "log"
    assert len(fig.data) == 2 * 2 * 2  # (band + line) per method per task
    ys = fig.layout.updatemenus[0].buttons[1].args[0]["y"]
    assert len(ys) == len(fig.data)


# --------------------------------------------------------------------------- learning curves, colours

def learning_curves_df(methods=("full", "houlsby", "compacter++")):
    return pd.DataFrame([dict(method=m, step=step, epoch=step / 10, train_loss=1 / step + k, validation=0.5 + k / 10)
                         for k, m in enumerate(methods) for step in (10, 20, 30)])


def test_learning_curves_give_each_method_the_same_colour_static_and_interactive():
    curves = learning_curves_df()
    fig = plots.learning_curves_plot(curves, metric="accuracy")
    (key,) = fig.legends
    static = {t.get_text(): matplotlib.colors.to_hex(h.get_color()) for t, h in zip(key.get_texts(),
                                                                                       key.legend_handles)}
    interactive = {}
    for trace in plots.learning_curves_plot_interactive(curves, metric="accuracy").data:
        interactive.setdefault(trace.name, trace.line.color)
    assert static == interactive and set(static) == {"full", "houlsby", "compacter++"}
    assert len(set(static.values())) == 3
    # and the same colour in every other figure: a family's colour does not depend on who else is drawn
    assert static["compacter++"] == plots._colors(["compacter++", "full"])["compacter++"] \
        == plots._colors(["compacter++"])["compacter++"]
    low = plots.low_resource_plot(low_resource_df())
    drawn = {line.get_label(): matplotlib.colors.to_hex(line.get_color()) for line in low.axes[0].get_lines()}
    assert drawn[plots.FAMILY_NAMES["compacter++"]] == static["compacter++"]
    assert drawn[plots.FAMILY_NAMES["full"]] == static["full"]


# --------------------------------------------------------------------------- saving

def test_save_figure_writes_png_and_html_sharing_one_plotly_js(tmp_path, monkeypatch):
    monkeypatch.setenv("ADAPTERLAB_OUT", str(tmp_path))
    png = plots.save_figure(plots.layer_removal_heatmap(layer_removal_df()), "layer_removal_heatmap", "smoke")
    assert png.name == "layer_removal_heatmap.png" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.parent == tmp_path / "figures" / "smoke"
    pages = [plots.save_figure(plots.layer_removal_heatmap_interactive(layer_removal_df()),
                               "layer_removal_heatmap", "smoke"),
             plots.save_figure(plots.low_resource_plot_interactive(low_resource_df()), "low_resource", "smoke")]
    for page in pages:
        text = page.read_text()
        assert page.stat().st_size > 1000
        assert 'src="plotly.min.js"' in text
        assert "cdn" not in text.lower() and "https://" not in text.split("<body>")[0].lower()
    assert len(list(png.parent.glob("*.js"))) == 1  # one shared copy
    assert (png.parent / "plotly.min.js").stat().st_size > 1_000_000


def test_save_figure_writes_the_same_bytes_for_the_same_figure(tmp_path, monkeypatch):
    """Redrawing must not dirty git: plotly's div id is fixed by the figure's name and the PNG
    carries no matplotlib version stamp (nothing else in it varies)."""
    monkeypatch.setenv("ADAPTERLAB_OUT", str(tmp_path))
    first, second = [], []
    for written in (first, second):
        for name, fig in (("heatmap", plots.layer_removal_heatmap(layer_removal_df())),
                          ("heatmap", plots.layer_removal_heatmap_interactive(layer_removal_df()))):
            written.append(plots.save_figure(fig, name, "smoke").read_bytes())
        plt.close("all")
    assert first == second
    png, html = first
    assert b"Matplotlib" not in png and b"tEXtSoftware" not in png
    assert 'id="figure-heatmap"' in html.decode()


# --------------------------------------------------------------------------- widgets

def test_layer_removal_explorer_reacts_to_the_span():
    box = widgets.layer_removal_explorer(layer_removal_df(tasks=("t1", "t2")))
    info = box.children[2]
    assert "layers 0–3" in info.value
    first, last = box.children[1].children
    first.value = 2
    assert last.min == 2 and "layers 2–3" in info.value
    box.children[0].children[1].value = True  # relative
    box.children[0].children[0].value = "t2"


def test_init_scale_explorer_trains_an_extra_std_on_click():
    calls = []

    def train_extra(init_std, task, seed):
        calls.append((init_std, task, seed))
        return dict(task=task, init_std=init_std, seed=seed, metric="accuracy", value=0.5)

    box = widgets.init_scale_explorer(init_scale_df(), train_extra=train_extra)
    assert calls == []  # nothing trains until asked
    box.children[1].children[-1].click()
    assert len(calls) == 1 and (box.state["df"]["source"] == "extra").sum() == 1
    box.children[0].children[0].value = ("t1",)


def test_init_scale_explorer_shows_progress_against_the_estimate():
    box = widgets.init_scale_explorer(init_scale_df(), train_extra=lambda init_std, task, seed: dict(
        task=task, init_std=init_std, seed=seed, metric="accuracy", value=0.5), estimate_seconds=42)
    bar, status = box.children[2].children
    assert bar.max == 42 and bar.layout.visibility == "hidden"
    box.children[1].children[-1].click()
    assert "validation accuracy 50.00 %" in status.value and bar.layout.visibility == "hidden"


def test_explorer_controls_show_their_labels_and_hint_at_multiple_choice():
    boxes = [widgets.layer_removal_explorer(layer_removal_df()),
             widgets.init_scale_explorer(init_scale_df(tasks=("t1",))),
             widgets.param_performance_explorer(param_performance_df()),
             widgets.low_resource_explorer(low_resource_df())]

    def walk(widget):
        yield widget
        for child in getattr(widget, "children", ()):
            yield from walk(child)

    controls = [c for box in boxes for c in walk(box)]
    toggles = [c for c in controls if isinstance(c, widgets.w.ToggleButtons)]
    assert toggles and all(t.style.button_width == "auto" for t in toggles)  # no label cut off
    picks = [c for c in controls if isinstance(c, widgets.w.SelectMultiple)]
    assert [p.description for p in picks if p.disabled] == ["tasks"]  # a single task: nothing to pick
    hints = [c.value for c in controls if isinstance(c, widgets.w.HTML) and "ctrl/cmd-click" in c.value]
    assert len(hints) == 3  # beside the multi-selects of the three explorers that have them


def test_efficiency_table_view_is_compact():
    view = plots.param_performance_table_view(plots.param_performance_table(param_performance_df()))
    html = view.to_html()
    assert "family" not in html and "time vs. full" in html and "200,000" in html
    assert "100 %" in html


def test_init_scale_explorer_without_callback_has_no_button():
    box = widgets.init_scale_explorer(init_scale_df(seeds=(0,)))
    assert not any(getattr(c, "description", "") == "train one extra std" for row in box.children
                   for c in getattr(row, "children", ()))


def test_param_performance_and_low_resource_explorers():
    box = widgets.param_performance_explorer(param_performance_df(tasks=("t1", "t2")))
    family_pick, controls = box.children[0].children
    controls.children[0].value = "compacter"
    family_pick.value = ("houlsby", "full")
    controls.children[3].value = "t2"
    box = widgets.low_resource_explorer(low_resource_df())
    box.children[0].children[2].value = (50, 100)
    box.children[0].children[1].value = ("full",)


# --------------------------------------------------------------------------- honesty: areas, convergence

def test_tradeoff_marker_area_is_proportional_to_memory():
    df = param_performance_df()
    fig = plots.param_performance_tradeoff(df)
    points = [c for c in fig.axes[0].collections if len(c.get_sizes())]
    areas = np.array([c.get_sizes()[0] for c in points[:len(df)]])
    memory = plots.param_performance_summary(df)["peak_memory_mb"].to_numpy()
    assert areas / areas.max() == pytest.approx(memory / memory.max())  # 1.3x the memory, 1.3x the area
    assert plots._memory_sizes([1000, 1300]).tolist() == pytest.approx([400, 520])


@pytest.mark.parametrize("draw,df", [
    (plots.init_scale_plot, init_scale_df()),
    (plots.low_resource_plot, low_resource_df()),
    (plots.param_performance_plot, param_performance_df()),
    (plots.param_performance_tradeoff, param_performance_df()),
])
def test_unconverged_runs_are_marked(draw, df):
    def labels(fig):  # what the legends show
        legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
        return [t.get_text() for leg in legends for t in leg.get_texts()]

    assert "not converged" not in labels(draw(df.assign(converged=True)))
    bad = df.assign(converged=[k != 1 for k in range(len(df))])
    fig = draw(bad)
    assert labels(fig).count("not converged") == 1
    crosses = [c for ax in fig.axes for c in ax.collections if c.get_label() == "not converged"]
    assert len(crosses) == 1 and len(crosses[0].get_offsets()) == 1
