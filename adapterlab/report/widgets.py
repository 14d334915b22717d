"""Explorers for the figure notebooks: a figure definition's views, browsable.

explorer(family, table) returns, outside a live frontend (papermill, nbclient, `make site`), the
interactive plotly figure of plots.html: its buttons switch between the definition's views with no
kernel. In JupyterLab it returns ipywidgets: a toggle listing the same views, pickers that filter the
table, and the PNG renderer's image, redrawn on each change (layer removal adds a span picker; init
scale can train one more std, `train_extra`).

Why not always ipywidgets: without a frontend nothing renders them, and a cell that opens many widget
comms is where papermill once stalled for over 15 minutes (notebook 05's explorer; the known nbclient
hang, jupyter/nbclient#312: the execute_reply sits unseen on the shell socket). Headless, no widget is
created at all. live_frontend() tells the two apart: JupyterLab and Notebook 7 send the cell's id with
each execute request, papermill and nbclient do not. explorer(live=True or False) forces the choice.
"""
import html
import time

import ipywidgets as w
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from . import figures, labels, plots

_STYLE = {"description_width": "initial"}


def live_frontend():
    """True when a notebook frontend shows this kernel's output (see the module docstring)."""
    try:
        parent = get_ipython().kernel.get_parent()  # noqa: F821  (defined inside IPython only)
    except (NameError, AttributeError):
        return False
    return bool((parent or {}).get("metadata", {}).get("cellId"))


def explorer(family, table, live=None, train_extra=None, estimate_seconds=None, **options):
    """The explorer of a figure family: ipywidgets when `live` (default: live_frontend()), else the
    kernel-free plotly figure with the same views."""
    if not (live_frontend() if live is None else live):
        return plots.html(figures.define(family, table, **options))
    return _Explorer(family, table, train_extra, estimate_seconds, options).box


def _picker(column, label, values):
    """A dropdown for "task" (one task per figure), else a multi-select with everything picked."""
    shown = [(labels.method_name(v) if column in ("method", "family") else f"{v:,}" if column == "train_size"
              else str(v), v) for v in (values if column == "task" else sorted(values))]
    if label == "task":
        return w.Dropdown(options=shown, description=label, disabled=len(values) == 1, style=_STYLE)
    return w.SelectMultiple(options=shown, value=tuple(v for _, v in shown), description=label,
                            rows=min(len(values), 6), disabled=len(values) == 1, style=_STYLE)


def _filters(name):
    """The table columns a figure's explorer filters by, with the picker's label: its family's (Family.filters;
    a table of spans also gets the span sliders)."""
    family, _ = figures.entry(name)
    return family.filters if family else {}


class _Explorer:
    def __init__(self, family, table, train_extra, estimate_seconds, options):
        self.family, self.table, self.options = family, table.copy(), options
        self.view = w.ToggleButtons(description="view", style={**_STYLE, "button_width": "auto"})
        self.pickers = {c: _picker(c, label, list(dict.fromkeys(table[c])))
                        for c, label in _filters(family).items() if c in table}
        self.info, self.out = w.HTML(), w.Output()
        rows = [w.HBox([self.view]), w.HBox(list(self.pickers.values()))]
        self.spans = {"first_layer", "last_layer"} <= set(table)  # layer removal: span sliders
        if self.spans:
            layers = sorted({*table["first_layer"].astype(int), *table["last_layer"].astype(int)})
            self.first, self.last = (w.IntSlider(value=v, min=layers[0], max=layers[-1], style=_STYLE,
                                                 description=f"{d} layer removed", continuous_update=False,
                                                 layout=w.Layout(width="45%"))
                                     for v, d in ((layers[0], "first"), (layers[-1], "last")))
            rows.append(w.HBox([self.first, self.last]))
        if train_extra is not None:
            rows.append(self._trainer(train_extra, estimate_seconds))
        spans = [self.first, self.last] if self.spans else []
        for control in (self.view, *self.pickers.values(), *spans):
            control.observe(self.redraw, names="value")
        self.box = w.VBox([*rows, self.info, self.out])
        self.box.explorer = self  # .explorer.table: the table plus any rows trained live
        self.redraw()

    def selection(self):
        d = self.table
        for column, pick in self.pickers.items():
            chosen = [pick.value] if isinstance(pick, w.Dropdown) else list(pick.value)
            if not chosen:
                raise ValueError(f"select at least one of {pick.description}")
            d = d[d[column].isin(chosen) | (d.get("source", "") == "extra")]
        return d

    def redraw(self, *_):
        try:
            options = dict(self.options)
            if self.spans:
                self.last.min = self.first.value  # a span needs last >= first
                options["span"] = (self.first.value, self.last.value)
                self.info.value = self._span_text(self.selection())
            figure = figures.define(self.family, self.selection(), **options)
            names = list(figure.views)
            if list(self.view.options) != names:
                current = self.view.value
                self.view.unobserve(self.redraw, names="value")
                self.view.options = names  # selects the first view
                self.view.value = current if current in names else names[0]
                self.view.observe(self.redraw, names="value")
            fig, self.shown = plots.png(figure, [self.view.value]), figure.views[self.view.value]
            self.out.clear_output(wait=True)
            with self.out:
                display(fig)
            plt.close(fig)  # shown in the Output only, not a second time below the cell
        except Exception as exc:  # a bad selection should say so, not kill the widget
            self.out.clear_output(wait=True)
            with self.out:
                print(f"cannot draw this selection: {exc}")

    def _span_text(self, rows):
        (z, layers, full), metric, (i, j) = figures.span_grid(rows), str(rows["metric"].iloc[0]), \
            (self.first.value, self.last.value)
        value, unit, scale = z[layers.index(i), layers.index(j)], labels.metric_unit(metric), labels.SCALE
        return (f"<b>adapters removed from layers {i}–{j}</b> ({j - i + 1} of {len(layers)} layers): validation "
                f"{labels.metric_name(metric)} <b>{value * scale:.2f}{unit}</b> · change vs. no removal "
                f"{(value - full) * scale:+.2f}{labels.delta_unit(metric)} · no removal {full * scale:.2f}{unit}")

    def _trainer(self, train_extra, estimate_seconds):
        """Init scale: a std slider and a button that trains one more run; its row joins the table as an
        open diamond ("source": "extra", kept out of the seed mean). Nothing trains until clicked."""
        tasks, seeds = list(dict.fromkeys(self.table["task"])), sorted(self.table["seed"].unique())
        std = w.FloatLogSlider(value=3e-3, base=10, min=-8, max=0.5, step=0.25, description="init std",
                               readout_format=".1e", style=_STYLE, continuous_update=False)
        task = w.Dropdown(options=tasks, description="task", style=_STYLE)
        seed = w.IntText(value=int(seeds[0]), description="seed", style=_STYLE, layout=w.Layout(width="140px"))
        button, status = w.Button(description="train one extra std", icon="play", button_style="primary"), w.HTML()
        about = f", about {estimate_seconds:.0f} s" if estimate_seconds and not pd.isna(estimate_seconds) else ""

        def train(_):
            button.disabled, start = True, time.monotonic()
            status.value = f"training {task.value} with init std {std.value:.1e} (seed {seed.value}){about}…"
            try:
                new = train_extra(init_std=float(std.value), task=task.value, seed=int(seed.value))
                new = pd.DataFrame([new] if isinstance(new, dict) else new).assign(source="extra")
                self.table = pd.concat([self.table, new], ignore_index=True)
                metric = str(new["metric"].iloc[0])
                status.value = (f"init std {std.value:.1e}: validation {labels.metric_name(metric)} "
                                f"{new['value'].iloc[0] * labels.SCALE:.2f}{labels.metric_unit(metric)} "
                                f"({time.monotonic() - start:.0f} s)")
                self.redraw()
            except Exception as exc:
                status.value = f"<span style='color:#b00'>training failed: {html.escape(str(exc))}</span>"
            finally:
                button.disabled = False

        button.on_click(train)
        return w.HBox([std, task, seed, button, status])
