"""The tables of the four figure families and of notebook 08's stream: stored records in, tidy DataFrames out;
write() saves them.

    from adapterlab.experiments import running
    from adapterlab.report import tables
    running.run_plan("default", "param_performance")       # trains (and scores) what the store lacks
    result = tables.get("param_performance", "default")   # reads the store, builds the tables
    result.table, result.grid                              # one row per run; the learning-rate grid runs
    tables.write(result, "default")                        # data/results/default/param_performance*.csv

get(family, profile, root) is the one way from a family's name to its FamilyResult: it reads the
records of the family's plan from the result store under `root` (running.plan_records, which names
what the store lacks), reads what the build needs beside them (BUILDERS: layer removal's span scores,
stored by their own units of work) and builds the table; it trains nothing, scores nothing and writes
no file. The build_* functions make the tables from records alone (what `make figures` and the
reproduction check use). write() is the one step that writes the CSVs (the columns of DESIGN.md
"Result tables", extras after; the columns added since -- class_entropy, rule_version, split -- come
last so the older columns keep their bytes).
Every table's `split` column says which split its `value` measures (families.SPLITS).
"""
import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..training import latency
from ..experiments import planning, rules, stats
from ..experiments import profiles as profiles_module
from ..experiments import running
from ..training import removal
from ..training import train as T
from ..experiments.families import CLAIMS_TABLE, SPLITS
from .labels import SCALE, legend_label, method_label, method_line, method_size, variant
from . import stream as stream_report
from ..methods.config import method
from ..experiments.results import config_key, write_csvs

# Columns of the CSVs: the contract (DESIGN.md "Result tables") first, extras after.
COLUMNS = {
    "layer_removal": ["task", "first_layer", "last_layer", "metric", "value"],
    "init_scale": ["task", "init_std", "seed", "metric", "value"],
    "param_performance": ["task", "method", "size", "trainable", "percent", "metric", "value",
                          "train_seconds", "peak_memory_mb"],
    "low_resource": ["task", "method", "train_size", "seed", "metric", "value"],
}
# ... and, in every CSV, these columns of the run a row comes from (DESIGN.md "Result tables")
RUN_COLUMNS = ["seed", "lr", "steps", "final_train_loss", "converged", "plateau_gain", "plateau_se", "baseline"]
# ... and, last in every table: the label entropy the loss criterion compares with, the version of the
# convergence rule the stored verdict was made under (train.stored_rule_version), the split of `value`
LAST_COLUMNS = ["class_entropy", "rule_version", "split"]


@dataclass
class FamilyResult:
    """What a family function returns: its table (one row per run or span), the learning-rate grid runs
    with the rate chosen (None: the family chooses no rate on a grid), further tables the family writes
    beside them ({name: frame}, e.g. 06's efficiency table) and, for layer removal, the cached-against-naive
    span timings on a sample of batches."""
    family: str
    table: pd.DataFrame
    grid: pd.DataFrame | None = None
    extra: dict = field(default_factory=dict)
    timings: dict | None = None
    budget: pd.DataFrame = field(default_factory=pd.DataFrame)  # the budget controls (budget_control)


# ----------------------------------------------------------------------------- shared pieces

def _cfg(record):
    return T.RunConfig.from_dict(record["config"])


def _method(config):
    return method(config.method, **config.method_args)


def run_columns(record):
    """The RUN_COLUMNS of a record (each family sets baseline: the majority class on its split) and
    LAST_COLUMNS but split: the convergence verdict stored with the run (under its rule_version), the
    last-third gain, its SE and the final loss from the stored curve, as rules.convergence defines them."""
    c = record["config"]["train"]
    gain, se = rules.last_third_gain(record["curve"])
    return dict(seed=c["seed"], lr=c["lr"], steps=record["steps"], **example_bits(record),
                final_train_loss=record["curve"][-1]["train_loss"] if record["curve"] else None,
                converged=bool(record["converged"]), plateau_gain=gain, plateau_se=se,
                class_entropy=record.get("class_entropy"), rule_version=rules.stored_rule_version(record))


def example_bits(record):
    """Per-example correctness of the state a run tested (train.correct_bits, hex) on both splits, with the
    number of examples: what the findings' intervals resample for test-set noise (stats.two_level). The
    validation bits are those of the first best validation point, the state train keeps and tests."""
    best = max(record["curve"], key=lambda p: p["validation"]) if record.get("curve") else {}
    return dict(test_correct=record.get("test_correct"), test_examples=record.get("test_examples"),
                validation_correct=best.get("correct"), validation_examples=best.get("examples"))


def _frame(rows, family, grid=False):
    """Rows as the family's table: contract columns, run columns, extras, then LAST_COLUMNS; as a
    learning-rate grid table (`grid`): its own columns, then LAST_COLUMNS. split: that of `value`."""
    frame = pd.DataFrame(rows)
    first = [] if grid else COLUMNS[family] + [c for c in RUN_COLUMNS if c not in COLUMNS[family]]
    if not len(frame):
        return frame if grid else pd.DataFrame(columns=first + LAST_COLUMNS)
    frame["split"] = SPLITS[family]
    extra = [c for c in frame.columns if c not in first and c not in LAST_COLUMNS]
    return frame[first + extra + LAST_COLUMNS]


def _group(records, key):
    """{key(record): [records]} in first-seen order."""
    groups = {}
    for r in records:
        groups.setdefault(key(r), []).append(r)
    return groups


def epochs_run(record):
    """Passes over the train set: steps / steps per epoch, an epoch being ceil(examples / batch) steps
    as train.train counts them (the short last batch is a step)."""
    batch = record["config"]["train"]["batch_size"]
    return record["steps"] / math.ceil(record["train_examples"] / batch)


# ----------------------------------------------------------------------------- layer removal

def stored_spans(profile, records, root=None):
    """{task: span record} of the runs layer removal ablated (planning.best_runs of the family's records),
    read from the store under `root` (planning.SPANS), where their units of work (planning.span_unit)
    put them."""
    p = profiles_module.resolve(profile)
    store = running.store_of(p, root=root)
    return {task: store.get(planning.span_key(p, _cfg(best)), planning.SPANS)
            for task, best in planning.best_runs(records).items()}


def stored_held_out_spans(profile, records, root=None):
    """{task: [(RunConfig, its span record) of the scored run, then of each of its budget controls]} on
    held-out examples (planning.held_out_runs; {} when the profile holds none out), from the store under
    `root`."""
    p = profiles_module.resolve(profile)
    store = running.store_of(p, root=root)
    return {task: [(c, store.get(planning.span_key(p, c, removal.HELD_OUT), planning.SPANS)) for c in runs]
            for task, runs in planning.held_out_runs(p, store).items()}


def _span_rows(p, task, best, s):
    """One row per span of one task's span record `s` of the run `best` (its record)."""
    config = _cfg(best)
    key = planning.run_key(config, p, "layer_removal")
    bits = s.get("correct", {})  # absent from span records stored before they kept it
    correct = {(i, j): b for i, j, b in bits.get("spans", [])}
    return [dict(task=task, first_layer=i, last_layer=j, metric=s["metric"], value=value,
                 full_value=s["full"], baseline=s["majority"], drop=value - s["full"],
                 correct=correct.get((i, j)), full_correct=bits.get("full"),
                 n_removed=j - i + 1, n_layers=s["layers"], backbone=config.backbone,
                 **run_columns(best),
                 epochs=best["steps"] * config.train.batch_size / best["train_examples"],
                 eval_examples=s["eval_examples"], run_key=config_key(key))
            for i, j, value in s["spans"]]


def build_layer_removal(profile, records, spans, held_out):
    """The layer-removal table from the family's run records and {task: span record} (stored_spans).
    Houlsby Fig. 6 left/centre: the adapters of layers first..last removed, scored on validation.

    One row per span (i <= j), n(n+1)/2 rows per task for n blocks. Columns:
      task, first_layer, last_layer (0-based block indices, inclusive), metric, value
      full_value   the same model with no adapter removed (same validation examples)
      baseline     majority-class score on those validation examples
      drop         value - full_value (<= 0 when removing hurts)
      n_removed    last_layer - first_layer + 1;  n_layers: blocks in the model
      backbone, lr, steps, epochs (passes over the train set), eval_examples,
      run_key (the store key of the trained run)
      correct, full_correct  which examples the span (and the unablated model) classifies right,
                   train.correct_bits hex (empty for span records stored without them, or a metric
                   other than accuracy): differences between spans pair by example (stats.by_example)
    The all-removed cell is first_layer=0, last_layer=n_layers-1; the diagonal is single layers.
    timings: {"cached_seconds", "naive_seconds", "examples"} summed over the tasks' span records.

    `held_out` ({task: span records}, stored_held_out_spans) gives the extra table HELD_OUT_TABLE, what the
    claims read: the same columns for the spans scored on examples the run never trained on, with
    majority_correct (the majority-class predictor's bits) and, from the run's budget control, value_2x,
    full_value_2x, correct_2x, full_correct_2x and steps_2x on the same examples."""
    p = profiles_module.resolve(profile)
    best = planning.best_runs(records)
    rows = [row for task, run in best.items() for row in _span_rows(p, task, run, spans[task])]
    timings = [s["timing"] for s in spans.values() if s.get("timing")]
    return FamilyResult("layer_removal", _frame(rows, "layer_removal"),
                        extra={HELD_OUT_TABLE: held_out_table(p, best, held_out)} if held_out else {},
                        timings={k: sum(t[k] for t in timings) for k in ("cached_seconds", "naive_seconds", "examples")}
                        if timings else None)


HELD_OUT_TABLE = CLAIMS_TABLE["layer_removal"]  # the spans on held-out examples: what 04's claims read


def held_out_table(p, best, held_out):
    """The spans of each task's scored run on held-out examples (build_layer_removal's HELD_OUT_TABLE)."""
    rows = []
    for task, ((_, s), *controls) in held_out.items():
        mine = _span_rows(p, task, best[task], s)
        for row in mine:
            row["majority_correct"] = s["correct"]["majority"]
        for config, control in controls:  # budget_factor x the steps, scored on the same examples
            at_2x = {(i, j): (v, b) for (i, j, v), (_, _, b) in zip(control["spans"], control["correct"]["spans"])}
            for row in mine:
                row["value_2x"], row["correct_2x"] = at_2x[row["first_layer"], row["last_layer"]]
                row.update(full_value_2x=control["full"], full_correct_2x=control["correct"]["full"],
                           steps_2x=config.train.max_steps)
        rows += mine
    return _frame(rows, "layer_removal").assign(split=removal.HELD_OUT)


# ----------------------------------------------------------------------------- init scale

def build_init_scale(profile, records):
    """Houlsby Fig. 6 right: Houlsby adapters trained from near-identity inits of different std.
    One row per (task, init_std, seed). Columns: task, init_std, seed, metric, value (validation
    metric of the best evaluation), the RUN_COLUMNS (baseline: majority class on validation), then test,
    bottleneck, train_seconds, eval_examples, backbone."""
    cap = planning.eval_size(profile, "init_scale")
    rows = []
    for r in records:
        c = _cfg(r)
        rows.append(dict(task=r["task"], init_std=c.method_args["init_std"], metric=r["metric"],
                         value=r["validation"], **run_columns(r), baseline=r.get("majority_validation"),
                         test=r["test"], bottleneck=_method(c).bottleneck, train_seconds=r["train_seconds"],
                         eval_examples=cap, backbone=r["backbone"]))
    return FamilyResult("init_scale", _frame(rows, "init_scale"))


# ----------------------------------------------------------------------------- parameters vs performance

def build_param_performance(profile, records):
    """Houlsby Figs. 3/4 and Compacter's trade-off: every method of the profile at the learning rate
    chosen on validation from its grid (first seed), then trained with every seed at that rate.
    One row per (task, method settings, seed) at the chosen rate. Columns: task, method, size, trainable,
    percent, metric, value (test metric of the best-on-validation state), train_seconds, peak_memory_mb,
    the RUN_COLUMNS (lr: the chosen rate; baseline: majority class on test), lr_grid (the rates tried,
    space-separated), then: family (the method's plot line, labels.method_line of labels.variant: "adapters"
    for houlsby, "prompt-tuning-R" / "-T" for prompt tuning),
    label (labels.method_label: "houlsby m=64"), validation, bottleneck, n, k, epochs_run,
    seconds_per_epoch, examples_per_second, backbone, value_minus_full (value minus full fine-tuning's on
    the same task and seed; NaN without a full run).

    `size` (labels.method_size): top-k -> k; phm -> n; the other adapter methods -> the bottleneck m;
    full/layernorm/bitfit -> NaN. peak_memory_mb is CUDA's max allocated on a GPU, the process RSS on
    CPU (coarse there). grid: every grid run (task, label, lr, seed, validation, value, ..., chosen)."""
    rows, grid_rows = [], []
    choices = planning.chosen_from(profile, "param_performance", planning.records_lookup(records))
    for entry, runs in _group(records, lambda r: planning.grid_id(r["config"])).items():  # in plan order
        first_seed = runs[0]["config"]["train"]["seed"]
        trials = [r for r in runs if r["config"]["train"]["seed"] == first_seed]
        chosen = choices[entry]
        lr_grid = " ".join(f"{r['config']['train']['lr']:g}" for r in trials)
        grid_rows += [dict(task=r["task"], label=method_label(_method(_cfg(r))), method=r["method"],
                           validation=r["validation"], value=r["test"], **run_columns(r),
                           chosen=r["config"]["train"]["lr"] == chosen) for r in trials]
        rows += [_param_performance_row(r, lr_grid) for r in runs if r["config"]["train"]["lr"] == chosen]
    frame = pd.DataFrame(rows)
    if len(frame):
        full = frame[frame["method"] == "full"].groupby(["task", "seed"])["value"].mean()
        frame["value_minus_full"] = [v - full.get((t, s), np.nan) for t, s, v in
                                     zip(frame["task"], frame["seed"], frame["value"])]
    table = _frame(frame, "param_performance")
    return FamilyResult("param_performance", table, grid=_frame(grid_rows, "param_performance", grid=True),
                        extra={"param_performance_table": param_performance_table(table)} if len(table) else {})


def _param_performance_row(r, lr_grid):
    c = _cfg(r)
    m = _method(c)
    epochs = r["steps"] * c.train.batch_size / r["train_examples"]
    return dict(
        task=r["task"], method=r["method"], size=method_size(m), trainable=r["trainable"], percent=r["percent"],
        metric=r["metric"], value=r["test"], train_seconds=r["train_seconds"],
        peak_memory_mb=r["peak_memory_mb"], **run_columns(r), baseline=r["majority"], lr_grid=lr_grid,
        family=method_line(variant(m)), label=method_label(m), validation=r["validation"],
        bottleneck=m.bottleneck if m.has_adapters else None, n=m.n if m.projection == "phm" and m.has_adapters
        else None, k=m.k if m.trains == "top-k" else None, epochs_run=epochs,
        seconds_per_epoch=r["train_seconds"] / epochs, examples_per_second=r["examples_per_second"],
        backbone=r["backbone"], **{f"latency_{k}_ms": sec * 1e3 for k, sec in r.get("latency_s", {}).items()})


def param_performance_summary(df, task=None):
    """One row per (task, family, method, size): the means over seeds of the columns the efficiency table
    (param_performance_table) reads, sorted by the method lines' order (LINE_RANK) and parameters; `label`
    is the legend label."""
    missing = [c for c in ("task", "method", "trainable", "value") if c not in df.columns]
    if missing or df.empty:
        raise ValueError(f"param_performance: the table lacks column(s) {missing} or rows; pass the table of "
                         "data/results/<profile>/param_performance.csv (tables.get(\"param_performance\"))")
    d = (df if task is None else df[df["task"].astype(str) == str(task)]).copy()
    d["family"] = d["family"].fillna(d["method"]).astype(str) if "family" in d else d["method"].astype(str)
    if "size" not in d.columns:
        d["size"] = np.nan
    d["label"] = [legend_label(f, s) for f, s in zip(d["family"], d["size"])]  # the line names the variant
    keys = ["task", "family", "method", "size", "label"]
    numeric = [c for c in ("trainable", "percent", "value", "train_seconds", "peak_memory_mb", "epochs",
                           "seconds_per_epoch") if c in d] + [c for c in d if c.startswith("latency_")]
    out = d.groupby(keys, dropna=False, sort=False)[numeric].mean().reset_index()
    rank = {f: k for k, f in enumerate(LINE_RANK)}
    out["_rank"] = out["family"].map(lambda f: rank.get(f, len(rank)))
    return out.sort_values(["task", "_rank", "family", "trainable"]).drop(columns="_rank").reset_index(drop=True)


# the summary's row order: Houlsby's line first (either name), then the comparison methods
LINE_RANK = ("houlsby", "adapters", "full", "top-k", "layernorm", "bitfit", "pfeiffer", "adapter-lowrank",
             "adapterdrop", "phm", "compacter", "compacter++")


def param_performance_table(df):
    """Compacter Table 3: per method, the share of parameters trained, training time per epoch and peak
    memory, each also relative to full fine-tuning (in %; 100 = as much as full fine-tuning), and the
    serving latency at batch 1 and 32 (latency_1_ms, latency_32_ms; latency.serving_latency). A method
    that can be merged for serving (LoRA) gets a second row, "<label>, merged", with only its latencies.

    Time per epoch comes from a `seconds_per_epoch` column (or train_seconds / `epochs`); without
    either the table reports total training time (`train_seconds`), which compares the same way when
    every method trains for equally many epochs. value_x100 is the test score (split column)."""
    s = param_performance_summary(df)
    keys = ["family", "method", "size", "label"]  # the summary's, over every task
    t = s.drop(columns="task").groupby(keys, dropna=False, sort=False).mean().reset_index()
    if "seconds_per_epoch" not in t.columns and "epochs" in t.columns:
        t["seconds_per_epoch"] = t["train_seconds"] / t["epochs"]
    time_col = "seconds_per_epoch" if "seconds_per_epoch" in t.columns else "train_seconds"
    full = t[t["method"] == "full"]
    out = pd.DataFrame({"method": t["label"], "family": t["family"],
                        "trainable": t["trainable"].round().astype("Int64")})
    if "percent" in t:
        out["percent_trained"] = t["percent"]
    out["value_x100"] = t["value"] * SCALE
    for column, vs_full in ((time_col, "time_vs_full_pct"), ("peak_memory_mb", "memory_vs_full_pct")):
        if column in t:
            out[column] = t[column]
            out[vs_full] = (100 * t[column] / full[column].iloc[0]) if len(full) else np.nan
    for batch in latency.SERVING_BATCHES:
        if f"latency_{batch}_ms" in t:
            out[f"latency_{batch}_ms"] = t[f"latency_{batch}_ms"]
    out["split"] = SPLITS["param_performance"]
    if "latency_merged_1_ms" in t:  # the merged rows: the same method served with its update folded in
        can_merge = t["latency_merged_1_ms"].notna()
        merged = pd.DataFrame({"method": t.loc[can_merge, "label"] + ", merged", "family": t.loc[can_merge, "family"],
                               "trainable": out.loc[can_merge, "trainable"],
                               **{f"latency_{b}_ms": t.loc[can_merge, f"latency_merged_{b}_ms"]
                                  for b in latency.SERVING_BATCHES}, "split": out.loc[can_merge, "split"]})
        out = pd.concat([out, merged])
    return out.sort_values("trainable", ascending=False, kind="stable").reset_index(drop=True)


_TABLE_VIEW = {  # column of param_performance_table -> (header, format)
    "method": ("method", None), "trainable": ("trainable", "{:,}"), "percent_trained": ("% trained", "{:.3g}"),
    "value_x100": ("score × 100", "{:.1f}"), "seconds_per_epoch": ("s / epoch", "{:.1f}"),
    "train_seconds": ("train s", "{:.0f}"), "time_vs_full_pct": ("time vs. full", "{:.0f} %"),
    "peak_memory_mb": ("peak MB", "{:,.0f}"), "memory_vs_full_pct": ("memory vs. full", "{:.0f} %"),
    "latency_1_ms": ("latency b1 ms", "{:.1f}"), "latency_32_ms": ("latency b32 ms", "{:.0f}"),
}


def param_performance_table_view(table):
    """param_performance_table(df) for reading in a notebook: short headers, formatted numbers, no index
    (the family column is left out: the method's name says it). Returns a pandas Styler."""
    t = table[[c for c in _TABLE_VIEW if c in table]]
    t = t.rename(columns={c: _TABLE_VIEW[c][0] for c in t})
    formats = {_TABLE_VIEW[c][0]: f for c, (_, f) in _TABLE_VIEW.items() if c in table and f}
    return (t.style.format(formats, na_rep="–").hide(axis="index")
            .set_properties(subset=["method"], **{"text-align": "left", "white-space": "nowrap"}))


# ----------------------------------------------------------------------------- low resource

def build_low_resource(profile, records):
    """Compacter Fig. 4: methods trained on nested seeded subsets of growing size. One row per (task, method, train_size, seed) at the method's rate (chosen on validation when the
    profile gives it a grid). Columns: task, method, train_size, seed, metric, value (test metric of the
    state that was best on the periodic validations), the RUN_COLUMNS (baseline: majority class on test),
    then validation, label, lr_grid (the rates tried, space-separated; empty without a grid), epochs
    (passes over the subset: epochs_run), examples_seen, evaluations (validations during training),
    best_step (the step of the state kept), train_seconds, backbone. Subsets are nested: with the same
    seed, the 100 examples are among the 500, and so on. grid: the grid runs with their choice."""
    s = profiles_module.resolve(profile).low_resource
    rows, grid_rows = [], []
    choices = planning.chosen_from(profile, "low_resource", planning.records_lookup(records))
    for (task, name), runs in _group(records, lambda r: (r["task"], r["method"])).items():
        trials = [r for r in runs if s.lr_grid.get(name) and _cfg(r).train_size == s.lr_choice_size
                  and r["config"]["train"]["seed"] in s.choice_seeds()]
        chosen = choices[planning.grid_id(runs[0]["config"])]  # the first run is stage 1's: a trial, or the one rate
        lr_grid = " ".join(dict.fromkeys(f"{r['config']['train']['lr']:g}" for r in trials))
        grid_rows += [dict(task=task, method=name, train_size=_cfg(r).train_size, validation=r["validation"],
                           value=r["test"], **run_columns(r), chosen=r["config"]["train"]["lr"] == chosen)
                      for r in trials]
        for r in runs:
            if r["config"]["train"]["lr"] != chosen:
                continue
            c = _cfg(r)
            best = max(r["curve"], key=lambda point: point["validation"])  # train keeps the first best
            rows.append(dict(task=task, method=name, train_size=c.train_size, metric=r["metric"],
                             value=r["test"], **run_columns(r), baseline=r["majority"], validation=r["validation"],
                             label=method_label(_method(c)), lr_grid=lr_grid, epochs=epochs_run(r),
                             examples_seen=round(r["examples_per_second"] * r["train_seconds"]),
                             evaluations=len(r["curve"]), best_step=best["step"], train_seconds=r["train_seconds"],
                             backbone=r["backbone"]))
    frame = _frame(rows, "low_resource")
    if len(frame):  # per task, by size, then the profile's method order, then seed: how the figure reads
        order = {**{t: i for i, t in enumerate(dict.fromkeys(frame["task"]))},
                 **{m: i for i, m in enumerate(s.methods)}}
        frame = frame.sort_values(["task", "train_size", "method", "seed"], kind="stable",
                                  key=lambda col: col.map(order) if col.name in ("task", "method") else col)
        frame = frame.reset_index(drop=True)
    return FamilyResult("low_resource", frame, grid=_frame(grid_rows, "low_resource", grid=True))


# ----------------------------------------------------------------------------- budget controls

def budget_control(profile, family, root=None):
    """The family's budget controls (planning.budget_controls) as they stand in the store: one row per
    control trained, with its 1x run, both scored on the validation split (budget rule 3: the test split
    decides nothing but the final verdicts). Columns: family, task, method, label, entry, arm (the entry's
    position: 0 is the reference arm), arms (the number of entries), seed, lr, steps, steps_2x, value, value_2x (validation metric of each),
    validation_correct, validation_correct_2x (their per-example bits), validation_examples, converged,
    converged_2x, split, budget_rule (the version of the rule that judges the rows: stats.budget_verdict).
    Empty when the family has no controls."""

    p = profiles_module.resolve(profile)
    if not getattr(p.settings(family), "budget_control", ()):  # settings without control entries (the stream's)
        return pd.DataFrame()
    lookup = planning.store_lookup(running.store_of(p, root=root), p, family)
    chosen = planning.chosen_from(p, family, lookup)
    entries = [str(e) for e in p.settings(family).budget_control]
    rows = []
    for base, control in planning.budget_controls(p, family, chosen):
        r1, r2 = lookup(base), lookup(control)
        if r1 is None or r2 is None:
            continue
        bits1, bits2 = example_bits(r1), example_bits(r2)
        entry = str(planning._CONTROL_ENTRY[family](base))
        rows.append(dict(family=family, task=base.task, method=base.method, label=method_label(_method(base)),
                         entry=entry, arm=entries.index(entry), arms=len(entries), seed=base.train.seed, lr=base.train.lr,
                         steps=r1["steps"], steps_2x=r2["steps"], value=r1["validation"], value_2x=r2["validation"],
                         validation_correct=bits1["validation_correct"],
                         validation_correct_2x=bits2["validation_correct"],
                         validation_examples=bits1["validation_examples"], converged=bool(r1["converged"]),
                         converged_2x=bool(r2["converged"]), split="validation",
                         budget_rule=stats.BUDGET_RULE_VERSION))
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- a stream of tasks

def build_stream(profile, records):
    """Notebook 08's stream.csv (report/stream.py table) from the records of the stream's steps, each found by
    what it says it ran (stream_report.step_of); a ValueError names the fix when a step is not stored."""
    steps = stream_report.StepRecords(profiles_module.resolve(profile).stream, records)
    return FamilyResult("stream", stream_report.table(steps))


# ----------------------------------------------------------------------------- by name, and writing

# family -> (its build_* function, what the build reads beside the family's records: each takes (profile,
# records, root) and returns one more argument of the build, after profile and records)
BUILDERS = {"layer_removal": (build_layer_removal, [stored_spans, stored_held_out_spans]),
            "init_scale": (build_init_scale, []),
            "param_performance": (build_param_performance, []),
            "low_resource": (build_low_resource, []),
            "stream": (build_stream, [])}


def get(family, profile, root=None):
    """One family's FamilyResult by name, from the store under `root`: the records of its plan
    (running.plan_records: a ValueError names what the store lacks and how to make it), what its build
    reads beside them (BUILDERS: layer removal's span scores), the table built and its budget controls
    added (budget_control). Nothing trains here: running.run_plan (or the sweep) makes the records first."""
    if family not in BUILDERS:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(BUILDERS)}")
    p = profiles_module.resolve(profile)
    records = running.plan_records(p, family, running.store_of(p, root=root))
    build, reads = BUILDERS[family]
    return replace(build(p, records, *[read(p, records, root) for read in reads]),
                   budget=budget_control(p, family, root))


def write(result, profile, root=None):
    """Write a FamilyResult's CSVs into <root>/data/results/<profile>/: <family>.csv, <family>_lr_grid.csv
    when it has a grid, its extra tables by their names, and <family>_budget_control.csv when it has
    budget controls. Returns the paths written."""
    folder = profiles_module.results_dir(profiles_module.resolve(profile), root)
    tables = {result.family: result.table}
    if result.grid is not None:
        tables[f"{result.family}_lr_grid"] = result.grid
    tables.update(result.extra)
    if len(result.budget):
        tables[f"{result.family}_budget_control"] = result.budget
    return write_csvs(tables, folder)
