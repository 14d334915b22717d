"""ipywidgets explorers for the figure notebooks (04-07), one per figure family.

Each function takes the family's tidy DataFrame (as adapterlab.experiments
returns it) and returns a widget (a VBox) that redraws the static figure from
adapterlab.plots as you change the controls:

    layer_removal_explorer(df)          task, metric / change toggle, span picker
    init_scale_explorer(df, train_extra=None, estimate_seconds=None)
                                        tasks and seeds; optionally train one extra std live
                                        (the returned box's .state["df"] holds the rows so far)
    param_performance_explorer(df)      method families, Houlsby / Compacter view, axes
    low_resource_explorer(df)           task, methods, training sizes

They never block: building one draws the initial state once and returns, so
notebooks run headless under papermill (the widget is simply displayed; the
saved PNG/HTML figures are what survive such a run). Outside a kernel the
figures are rendered and closed, which is what the tests do.
"""
import html
import threading
import time

import ipywidgets as w
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from . import plots

_WIDE = w.Layout(width="auto")
_STYLE = {"description_width": "initial"}
_TOGGLE_STYLE = {**_STYLE, "button_width": "auto"}  # ToggleButtons: each button as wide as its label


def _multi(options, description, rows=6):
    """A multi-select with everything picked; options are values or (label, value) pairs. Greyed out when
    there is only one option, like the task dropdowns."""
    values = [o[1] if isinstance(o, tuple) else o for o in options]
    return w.SelectMultiple(options=options, value=tuple(values), description=description,
                            rows=min(len(options), rows), disabled=len(options) == 1, style=_STYLE)


def _hint(*picks):
    """The note beside the multi-selects (empty when none of them offers a choice)."""
    several = any(len(p.options) > 1 for p in picks)
    return w.HTML("<small>ctrl/cmd-click to pick several,<br>shift-click for a range</small>" if several else "")


def _show(out, fig):
    """Replace what `out` shows with `fig`, then close fig (so the inline backend does not show it twice)."""
    out.clear_output(wait=True)
    with out:
        display(fig)
    plt.close(fig)


def _error(out, exc):
    out.clear_output(wait=True)
    with out:
        print(f"cannot draw this selection: {exc}")


def _fmt(metric, value, relative=False):
    if value is None or pd.isna(value):
        return "n/a"
    if relative:
        return f"{value * plots.SCALE:+.2f}{plots._delta_unit(metric)}"
    return f"{value * plots.SCALE:.2f}{plots._unit(metric)}"


# --------------------------------------------------------------------------- layer removal


def layer_removal_explorer(df):
    """Heatmap explorer: pick the task, switch metric / change vs. no removal, and choose a span with
    the first/last layer sliders; the span is outlined in the heatmap and its numbers printed above it."""
    tasks = plots._tasks(df)
    first_grid = plots.layer_removal_grid(df, tasks[0])
    task = w.Dropdown(options=tasks, value=tasks[0], description="task", disabled=len(tasks) == 1, style=_STYLE)
    mode = w.ToggleButtons(options=[("validation metric", False), ("change vs. no removal", True)], value=False,
                           description="colour", style=_TOGGLE_STYLE)
    layers = first_grid.layers
    first = w.IntSlider(value=layers[0], min=layers[0], max=layers[-1], description="first layer removed",
                        style=_STYLE, continuous_update=False, layout=w.Layout(width="45%"))
    last = w.IntSlider(value=layers[-1], min=layers[0], max=layers[-1], description="last layer removed",
                       style=_STYLE, continuous_update=False, layout=w.Layout(width="45%"))
    info = w.HTML()
    out = w.Output()

    def redraw(*_):
        try:
            g = plots.layer_removal_grid(df, task.value)
            lo, hi = g.layers[0], g.layers[-1]
            first.min, first.max = lo, hi  # the order matters little: min <= max always holds here
            last.max = hi
            last.min = first.value  # a span needs last >= first
            value, change = g.span(first.value, last.value)
            n = last.value - first.value + 1
            parts = [f"<b>adapters removed from layers {first.value}–{last.value}</b> "
                     f"({n} of {len(g.layers)} layers):",
                     f"validation {plots._METRIC_NAMES.get(g.metric, g.metric)} <b>{_fmt(g.metric, value)}</b>",
                     f"change vs. no removal {_fmt(g.metric, change, True)}"]
            if g.no_removal is not None:
                parts.append(f"no removal {_fmt(g.metric, g.no_removal)}")
            if g.majority is not None:
                parts.append(f"majority class {_fmt(g.metric, g.majority)}")
            info.value = parts[0] + " " + " · ".join(parts[1:])
            _show(out, plots.layer_removal_heatmap(df, task=task.value, relative=mode.value,
                                                   span=(first.value, last.value)))
        except Exception as exc:  # a bad selection should say so, not kill the widget
            _error(out, exc)

    for control in (task, mode, first, last):
        control.observe(redraw, names="value")
    redraw()
    return w.VBox([w.HBox([task, mode]), w.HBox([first, last]), info, out])


# --------------------------------------------------------------------------- init scale


def init_scale_explorer(df, train_extra=None, estimate_seconds=None):
    """Init-scale explorer: choose tasks and seeds. With `train_extra`, also a std slider and a button
    "train one extra std": it calls train_extra(init_std=..., task=..., seed=...), which should train
    (or read from the result store) and return the new row(s) as a dict or DataFrame with the
    init_scale columns; they are added to the plot as open diamonds (kept out of the seed mean and band).
    While it trains, a progress bar runs against `estimate_seconds` (e.g. the median train_seconds of the
    sweep's runs) and the seconds so far are shown. Nothing trains until clicked."""
    if estimate_seconds is not None and pd.isna(estimate_seconds):
        estimate_seconds = None  # e.g. the median of an empty column
    state = {"df": df.copy()}
    if "source" not in state["df"]:
        state["df"]["source"] = "sweep"
    tasks = plots._tasks(df)
    seeds = sorted(int(s) for s in df["seed"].unique()) if "seed" in df else []
    task_pick, seed_pick = _multi(tasks, "tasks", rows=4), _multi(seeds, "seeds", rows=4)
    out = w.Output()

    def redraw(*_):
        try:
            if not task_pick.value or (seeds and not seed_pick.value):
                raise ValueError("select at least one task and one seed")
            fig = plots.init_scale_plot(state["df"], tasks=list(task_pick.value),
                                        seeds=list(seed_pick.value) if seeds else None)
            _show(out, fig)
        except Exception as exc:
            _error(out, exc)

    task_pick.observe(redraw, names="value")
    seed_pick.observe(redraw, names="value")
    rows = [w.HBox([task_pick, seed_pick, _hint(task_pick, seed_pick)])]
    if train_extra is not None:
        status = w.HTML()
        bar = w.FloatProgress(min=0, max=estimate_seconds or 1, bar_style="info", layout=w.Layout(visibility="hidden"))
        std = w.FloatLogSlider(value=3e-3, base=10, min=-8, max=0.5, step=0.25, description="init std",
                               readout_format=".1e", style=_STYLE, continuous_update=False)
        extra_task = w.Dropdown(options=tasks, value=tasks[0], description="task", style=_STYLE)
        extra_seed = w.IntText(value=int(seeds[0]) if seeds else 0, description="seed", style=_STYLE,
                               layout=w.Layout(width="140px"))
        button = w.Button(description="train one extra std", icon="play", button_style="primary",
                          layout=_WIDE)

        def train(_):
            button.disabled = True
            what = f"training {extra_task.value} with init std {std.value:.1e} (seed {extra_seed.value})"
            if estimate_seconds:
                what += f", about {estimate_seconds:.0f} s (the median of the sweep's runs)"
                bar.value, bar.layout.visibility = 0, "visible"
            status.value = what + "…"
            start, done = time.monotonic(), threading.Event()

            def tick():  # the kernel is busy training: a thread moves the bar and the clock
                while not done.wait(1):
                    bar.value = min(time.monotonic() - start, bar.max)
                    status.value = f"{what}: {time.monotonic() - start:.0f} s so far…"

            ticker = threading.Thread(target=tick, daemon=True)
            ticker.start()
            try:
                try:
                    new = train_extra(init_std=float(std.value), task=extra_task.value, seed=int(extra_seed.value))
                finally:  # stop the clock before the status says how it went
                    done.set()
                    ticker.join()
                    bar.layout.visibility = "hidden"
                new = pd.DataFrame([new]) if isinstance(new, dict) else pd.DataFrame(new)
                new["source"] = "extra"
                state["df"] = pd.concat([state["df"], new], ignore_index=True)
                if "seed" in new and int(extra_seed.value) not in seed_pick.options:
                    seed_pick.options = sorted({*seed_pick.options, int(extra_seed.value)})
                    seed_pick.value, seed_pick.disabled = tuple(seed_pick.options), False
                metric = new["metric"].iloc[0] if "metric" in new else "value"
                status.value = (f"init std {std.value:.1e}: validation "
                                f"{plots._METRIC_NAMES.get(metric, metric)} {_fmt(metric, new['value'].iloc[0])} "
                                f"({time.monotonic() - start:.0f} s)")
                redraw()
            except Exception as exc:
                status.value = f"<span style='color:#b00'>training failed: {html.escape(str(exc))}</span>"
            finally:
                button.disabled = False

        button.on_click(train)
        rows += [w.HBox([std, extra_task, extra_seed, button]), w.HBox([bar, status])]
    redraw()
    box = w.VBox([*rows, out])
    box.state = state  # state["df"]: the sweep plus any rows trained live
    return box


# --------------------------------------------------------------------------- parameters vs performance


def param_performance_explorer(df):
    """Parameters-vs-performance explorer: toggle method families, switch between the Houlsby view
    (parameters vs. score minus full fine-tuning) and the Compacter view (percent trained vs. score,
    marker area = memory), pick the x axis (trainable parameters / percent) and y (relative / absolute),
    and the task when there are several. The efficiency table below follows the family selection."""
    fams = list(dict.fromkeys(plots.param_performance_summary(df)["family"]))
    tasks = plots._tasks(df)
    family_pick = _multi([(plots.FAMILY_NAMES.get(f, f), f) for f in fams], "method families", rows=12)
    view = w.ToggleButtons(options=[("parameters vs. score (Houlsby)", "houlsby"),
                                    ("% trained, memory (Compacter)", "compacter")],
                           value="houlsby", description="view", style=_TOGGLE_STYLE)
    x_axis = w.ToggleButtons(options=[("trainable parameters", "trainable"), ("% trained", "percent")],
                             value="trainable", description="x axis", style=_TOGGLE_STYLE)
    y_axis = w.ToggleButtons(options=[("minus full fine-tuning", True), ("absolute score", False)], value=True,
                             description="y axis", style=_TOGGLE_STYLE)
    task = w.Dropdown(options=["all tasks", *tasks] if len(tasks) > 1 else tasks, description="task",
                      disabled=len(tasks) == 1, style=_STYLE)
    out, table = w.Output(), w.Output(layout=w.Layout(max_width="100%", overflow="auto"))

    def redraw(*_):
        x_axis.disabled = y_axis.disabled = view.value == "compacter"
        try:
            if not family_pick.value:
                raise ValueError("select at least one method family")
            d = df if task.value == "all tasks" else df[df["task"].astype(str) == task.value]
            if view.value == "houlsby":
                fig = plots.param_performance_plot(d, x=x_axis.value, relative=y_axis.value,
                                                   families=list(family_pick.value))
            else:
                fig = plots.param_performance_tradeoff(d, families=list(family_pick.value))
            _show(out, fig)
            t = plots.param_performance_table(d)
            table.clear_output(wait=True)
            with table:
                display(plots.param_performance_table_view(t[t["family"].isin(family_pick.value)]))
        except Exception as exc:
            _error(out, exc)

    for control in (family_pick, view, x_axis, y_axis, task):
        control.observe(redraw, names="value")
    redraw()
    return w.VBox([w.HBox([family_pick, w.VBox([view, x_axis, y_axis, task, _hint(family_pick)])]), out, table])


# --------------------------------------------------------------------------- low resource


def low_resource_explorer(df):
    """Low-resource explorer: pick the task, the methods and the training-set sizes to draw."""
    tasks = plots._tasks(df)
    methods = list(dict.fromkeys(df["method"].astype(str)))
    sizes = sorted(int(s) for s in df["train_size"].unique())
    task = w.Dropdown(options=tasks, description="task", disabled=len(tasks) == 1, style=_STYLE)
    method_pick = _multi([(plots.FAMILY_NAMES.get(m, m), m) for m in methods], "methods")
    size_pick = _multi([(f"{s:,}", s) for s in sizes], "training sizes")
    out = w.Output()

    def redraw(*_):
        try:
            if not method_pick.value or not size_pick.value:
                raise ValueError("select at least one method and one size")
            _show(out, plots.low_resource_plot(df, methods=list(method_pick.value), sizes=list(size_pick.value),
                                               tasks=[task.value]))
        except Exception as exc:
            _error(out, exc)

    for control in (task, method_pick, size_pick):
        control.observe(redraw, names="value")
    redraw()
    return w.VBox([w.HBox([task, method_pick, size_pick, _hint(method_pick, size_pick)]), out])
