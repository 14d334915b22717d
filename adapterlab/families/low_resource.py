"""Notebook 07, Compacter Fig. 4: the methods on nested seeded subsets of the training data, 100 to 4,000 examples.

A method with a learning-rate grid runs each rate at one size (lr_choice_size) with a few seeds; the rate with
the best mean validation score then trains every size and seed. The claim: Compacter++ above full fine-tuning
in the low-resource setting, judged at each training size on the test split, paired by seed.
"""
import math
from dataclasses import dataclass, field

import numpy as np

from ..experiments import planning, rules
from ..experiments.families import HOW_MUCH_DATA, Family, register
from ..experiments.study_init import CONTROL, control_keys
from ..report.tables import FamilyResult, config_of, epochs_run, grid_columns, group_by, method_of, run_columns, tidy_frame
from ..report.figures import Figure, View, check_columns, key_style, majority_line, noise_text, per_task, seed_series
from ..experiments.planning import GLUE_TRAIN_SIZES, config_for, grid_id, method_lr
from ..report.findings import at_grid_end, budget_rows, by_seed, choice_text, ci_text, controls, held_by_controls, judge, pts, runs_of, seeds_text, unconverged, verdict_lines
from ..report.labels import method_label
from ..experiments.profiles import DEFAULT_LR_GRID, GLUE_TASKS, Common, resolve
from ..report import figures as F
from ..report import labels
from ..report.claims import accuracy_claim

NAME = "low_resource"
SPLIT = "test"  # the test score of the state that was best on validation, tested once
LOW_RESOURCE = ("Compacter++ above T5-base fine-tuning in the low-resource setting (Compacter Fig. 4, GLUE "
                "subsampled to 100-4,000)")


# ----------------------------------------------------------------------------- settings

@dataclass(frozen=True)
class LowResource(Common):
    """Notebook 07 (Compacter Fig. 4): methods on nested seeded subsets of growing size.

    Schedule per size: epochs[size] (the paper's), else steps (a number, or {size | "default": steps}).
    A method with a grid runs each rate at lr_choice_size with each of lr_choice_seeds (default: the first
    seed); every size and seed then trains at the rate with the best mean validation over those seeds."""

    def choice_seeds(self):
        return tuple(self.lr_choice_seeds) if self.lr_choice_seeds else tuple(self.seeds[:1])

    def seeds_of(self, method_name):
        return tuple(self.method_seeds.get(method_name, self.seeds))
    sizes: tuple = ()
    methods: tuple = ()
    seeds: tuple = (0,)
    method_args: dict = field(default_factory=dict)  # method -> its settings
    lr_grid: dict = field(default_factory=dict)
    lr_choice_size: int | None = None
    lr_choice_seeds: tuple | None = None  # seeds each grid rate trains with (None: the first seed); mean decides
    method_seeds: dict = field(default_factory=dict)  # method -> its seeds (others: `seeds`)
    method_lr: dict = field(default_factory=dict)
    epochs: dict | None = None  # size -> epochs
    steps: int | dict | None = None  # used when epochs is None
    evaluations: int = 10  # validations per run (eval_every = steps / evaluations)
    backbone: str | None = None

    def grids(self):
        """[(setting, learning-rate grid)] a study checks: each needs two rates or more."""
        return [(f"lr_grid {name}", grid) for name, grid in self.lr_grid.items()]



PROFILES = {
    "smoke": dict(sizes=(50, 100, 200), methods=("compacter++", "full"), seeds=(0, 1),
                      method_args={"compacter++": dict(bottleneck=16)},
                      lr_grid={"compacter++": (3e-3, 1e-2)}, lr_choice_size=100,
                      epochs={50: 4, 100: 2, 200: 1}, evaluations=2),
    # Compacter Fig. 4 scaled down: the same steps at every size, rates chosen on two seeds' mean validation
    "default": dict(sizes=(100, 500, 1000, 2000, 4000), methods=("compacter++", "full", "houlsby"),
                      lr_grid={**{m: DEFAULT_LR_GRID[m] for m in ("full", "houlsby")},
                               "full": (1e-5, *DEFAULT_LR_GRID["full"]), "compacter++": (1e-3, 3e-3, 1e-2, 3e-2)},
                      lr_choice_size=1000, lr_choice_seeds=(0, 1), seeds=(0, 1, 2, 3, 4),  # the power design's
                      method_seeds={"houlsby": (0,)},  # Houlsby is our addition to the figure: one seed
                      steps=375, evaluations=6,  # three epochs of the largest subset
                      budget_control=(("full", 4000), ("compacter++", 4000))),
    # Compacter §5.6 / Fig. 4: T5-base fine-tuning vs Compacter++ on GLUE subsets of 100..4000 examples,
    # 1000/200/100/50/25 epochs (2,500 steps at every size), batch 40, a checkpoint every 250 steps and the
    # best on validation; sizes larger than a task's train split (RTE, MRPC at 4000) are left out
    "paper": dict(backbone="t5-base", tasks=GLUE_TASKS, sizes=(100, 500, 1000, 2000, 4000),
                      methods=("compacter++", "full"), seeds=(0, 1, 2),
                      method_args={"compacter++": dict(n=4, bottleneck=24)},
                      epochs={100: 1000, 500: 200, 1000: 100, 2000: 50, 4000: 25},
                      train=dict(batch_size=40, warmup=500, eval_every=250)),
}


# ----------------------------------------------------------------------------- plan

def schedule(s, size):
    """(epochs, max_steps) for one train size: s.epochs[size] (paper) or s.steps[size | "default"]."""
    if s.epochs is not None:
        return s.epochs[size], None
    steps = s.steps
    return 1, (steps.get(size, steps.get("default")) if isinstance(steps, dict) else steps)


def plan(p, chosen):
    """Every (size, method, seed) run. A method with a grid (s.lr_grid[method]) first runs each rate of
    it at one size (s.lr_choice_size) with each seed of s.choice_seeds(); with a choice for that grid (the
    best mean validation over those seeds), every size and seed (s.seeds_of(method)) at the chosen rate --
    the paper reports, per task, the hyper-parameters that were best on validation. A method without a
    grid: its one rate (method_lr) at once."""
    s = p.settings(NAME)
    out = []
    for task in s.tasks or p.tasks:
        sizes = [size for size in s.sizes if size <= GLUE_TRAIN_SIZES.get(task, math.inf)]  # RTE: 2,241

        def config(name, size, lr, seed):
            epochs, max_steps = schedule(s, size)
            batch = s.train.get("batch_size", p.train.get("batch_size", 32))
            total = max_steps or math.ceil(epochs * math.ceil(size / batch))
            # evaluate about s.evaluations times per run, not once per (tiny) epoch
            eval_every = max(1, math.ceil(total / s.evaluations))
            return config_for(
                p, task=task, method=name, method_args=s.method_args.get(name, {}), backbone=s.backbone,
                train_size=size, lr=lr, seed=seed, epochs=epochs, max_steps=max_steps, eval_every=eval_every,
                family_train=s.train)

        for name in s.methods:
            grid = s.lr_grid.get(name)
            if grid and s.lr_choice_size not in sizes:
                raise ValueError(f"low_resource has a learning-rate grid for {name!r} but its lr_choice_size "
                                 f"{s.lr_choice_size!r} is not one of its sizes {tuple(sizes)} for {task}; "
                                 "set lr_choice_size to the size at which the grid runs")
            if grid:
                trials = [config(name, s.lr_choice_size, lr, seed) for lr in grid for seed in s.choice_seeds()]
                out += trials
                lr = chosen.get(grid_id(trials[0]))
            else:
                lr, trials = method_lr(p, name, s), []
            if lr is not None:
                out += [c for size in sizes for seed in s.seeds_of(name)
                        if (c := config(name, size, lr, seed)) not in trials]
    return out



# ----------------------------------------------------------------------------- table

def build(profile, records, root=None):
    """Compacter Fig. 4: methods trained on nested seeded subsets of growing size. One row per (task, method, train_size, seed) at the method's rate (chosen on validation when the
    profile gives it a grid). Columns: task, method, train_size, seed, metric, value (test metric of the
    state that was best on the periodic validations), the RUN_COLUMNS (baseline: majority class on test),
    then validation, label, lr_grid, lr_grid_validation, lr_grid_seeds (the rates tried, space-separated,
    and what their choice compared: tables.grid_columns; empty without a grid), epochs
    (passes over the subset: epochs_run), examples_seen, evaluations (validations during training),
    best_step (the step of the state kept), train_seconds, backbone. Subsets are nested: with the same
    seed, the 100 examples are among the 500, and so on. grid: the grid runs with their choice."""
    s = resolve(profile).settings(NAME)
    rows, grid_rows = [], []
    choices = planning.chosen_from(profile, NAME, planning.records_lookup(records))
    for (task, name), runs in group_by(records, lambda r: (r["task"], r["method"])).items():
        trials = [r for r in runs if s.lr_grid.get(name) and config_of(r).train_size == s.lr_choice_size
                  and r["config"]["train"]["seed"] in s.choice_seeds()]
        chosen = choices[planning.grid_id(runs[0]["config"])]  # the first run is stage 1's: a trial, or the one rate
        grid = grid_columns(trials)
        grid_rows += [dict(task=task, method=name, train_size=config_of(r).train_size, validation=r["validation"],
                           value=r["test"], **run_columns(r), chosen=r["config"]["train"]["lr"] == chosen)
                      for r in trials]
        for r in runs:
            if r["config"]["train"]["lr"] != chosen:
                continue
            c = config_of(r)
            best = max(r["curve"], key=lambda point: point["validation"])  # train keeps the first best
            rows.append(dict(task=task, method=name, train_size=c.train_size, metric=r["metric"],
                             value=r["test"], **run_columns(r), baseline=r["majority"], validation=r["validation"],
                             label=method_label(method_of(c)), **grid, epochs=epochs_run(r),
                             examples_seen=round(r["examples_per_second"] * r["train_seconds"]),
                             evaluations=len(r["curve"]), best_step=best["step"], train_seconds=r["train_seconds"],
                             backbone=r["backbone"]))
    frame = tidy_frame(rows, FAMILY)
    if len(frame):  # per task, by size, then the profile's method order, then seed: how the figure reads
        order = {**{t: i for i, t in enumerate(dict.fromkeys(frame["task"]))},
                 **{m: i for i, m in enumerate(s.methods)}}
        frame = frame.sort_values(["task", "train_size", "method", "seed"], kind="stable",
                                  key=lambda col: col.map(order) if col.name in ("task", "method") else col)
        frame = frame.reset_index(drop=True)
    return FamilyResult(NAME, frame, grid=tidy_frame(grid_rows, FAMILY, grid=True))


# ----------------------------------------------------------------------------- figure

def figure(df):
    """Compacter Fig. 4: the test score against the number of training examples, one line per method
    (seed mean, 95% CI); a second view shows each method minus full fine-tuning, paired by seed."""
    check_columns(df, ["task", "method", "train_size", "seed", "value"], NAME)
    split, views = SPLIT, {}
    for t, rows, prefix in per_task(df):
        full = rows[rows["method"] == "full"].set_index(["train_size", "seed"])["value"]
        rows["delta"] = rows["value"] - [full.get((n, s), np.nan) for n, s in zip(rows["train_size"], rows["seed"])]
        metric, methods = str(rows["metric"].iloc[0]), list(dict.fromkeys(rows["method"].astype(str)))
        for mode, y in (("score", "value"), ("minus full fine-tuning", "delta")):
            rel = y == "delta"
            views[prefix + mode] = View(
                f"Low-resource setting: {split} score vs. training set size ({t})"
                + ", minus full fine-tuning (paired by seed)" * rel + f"\n{noise_text(rows)}",
                "training examples (log scale)", f"{split} " + labels.metric_label(metric, rel)
                + " vs. full fine-tuning" * rel, xticks=sorted(int(n) for n in rows["train_size"].unique()), task=t,
                series=[seed_series(labels.method_name(m), rows[rows["method"] == m], "train_size", y, key_style(methods, m))
                        for m in methods if not (rel and m == "full")],
                hlines=[("full fine-tuning", 0.0, key_style(methods, "full")[0])] if rel else majority_line(rows))
    return Figure("low_resource", views)


# ----------------------------------------------------------------------------- claims and reading

# Compacter++ against full fine-tuning at each training size, paired by seed
CLAIMS = (
    # 07: Compacter++ against full fine-tuning at each training size, paired by seed
    accuracy_claim(NAME, "{task}: Compacter++ above full fine-tuning at {size:,} examples", ">", "compacter++",
                   "full", LOW_RESOURCE, per="train_size", arms=("compacter++", "full")),
)


def read(df, budget=None):
    """07's reading: per size, each method and its paired difference to full; verdicts on Compacter's Fig. 4."""
    lines, found = [], []
    for task, d in df.groupby("task", sort=False):
        lines.append(f"**Low resource, {task}** (test accuracy, {seeds_text(d)} seed(s), every method on the same seeded "
                     f"subset, so differences are paired by seed; {unconverged(d)}; majority class "
                     f"{pts(d['baseline'].iloc[0])}):")
        if "lr" in d:
            rates = ", ".join(f"{m} {'/'.join(f'{lr:g}' for lr in g['lr'].unique())}" + choice_text(g)
                              for m, g in d.groupby("method", sort=False))
            lines.append(f"- learning rates: {rates}.")
        own = controls(budget_rows(budget, task))
        for size, g in d.groupby("train_size"):
            size = int(size)
            means = ", ".join(f"{m} {pts(v['value'].mean())}" for m, v in g.groupby("method", sort=False))
            vs = "; ".join(f"{m} − full {ci_text(by_seed(g, m, 'full', 'method'))}"
                           for m in g["method"].unique() if m != "full" and "full" in set(g["method"]))
            lines.append(f"- {size:,} examples: {means}" + (f"; paired by seed: {vs}" if vs else "") + ".")
            for claim in CLAIMS:
                if {claim.a, claim.b} <= set(g["method"]):
                    found.append(judge(claim, [by_seed(g, claim.a, claim.b, "method", claim.split)],
                                       held=held_by_controls(own, [((claim.a, size), (claim.b, size))]),
                                       grid_end=at_grid_end(g[g["method"].isin((claim.a, claim.b))], "method"),
                                       runs=runs_of(g, (claim.a, claim.b), "method", claim.split),
                                       task=task, size=size))
        unconverged_runs = ~d["converged"].astype(bool)
        if unconverged_runs.any():
            per = ", ".join(f"{m} {unconverged_runs[g.index].sum()} of {len(g)}"
                            for m, g in d.groupby("method", sort=False))
            lines.append(f"- not converged (rule {rules.CONVERGENCE_RULE_VERSION}), by method: {per}; a gap that "
                         "involves such runs is the gap at this budget, not at convergence.")
    return lines + verdict_lines(found), found


# ----------------------------------------------------------------------------- study init

def sizes_for(default, n_train):
    """The default profile's sizes that the train split holds; fewer than three: 1/8, 1/4, 1/2 and all of it."""
    sizes = tuple(s for s in default.settings(NAME).sizes if s <= n_train)
    return sizes if len(sizes) >= 3 else tuple(sorted({max(1, n_train // d) for d in (8, 4, 2, 1)}))


def study(s, scale):
    """What `study init` writes for 07: the default profile's settings `s` at the study's scale: the sizes the data
    hold (sizes_for), the smallest ones only when the study is cut (Scale.cut.sizes), and steps enough for the
    pilot and for the largest size to be seen whole (steps x batch >= size)."""
    sizes, seeds = sizes_for(scale.default, scale.n_train), scale.seeds
    sizes = sizes[:scale.cut.sizes] if scale.cut.sizes else sizes
    batch = s.train.get("batch_size", scale.default.train["batch_size"])
    steps = max(s.evaluations, scale.steps, math.ceil(sizes[-1] / batch))
    return [("sizes", list(sizes), "notebook 07: nested seeded subsets of the train split, none larger than it"),
            ("methods", list(s.methods), "the methods compared at every size"),
            ("seeds", list(seeds), "each size and method trains with each seed (method_seeds: a method's own)"),
            ("method_seeds", {m: list(v) for m, v in s.method_seeds.items()}, ""),
            ("lr_grid", {m: list(g) for m, g in s.lr_grid.items()}, "tried at lr_choice_size with each of "
                                                                    "lr_choice_seeds; the best mean validation wins"),
            ("lr_choice_size", sizes[len(sizes) // 2], ""),
            ("lr_choice_seeds", list(seeds[:2]), ""),
            ("steps", steps, "steps at every size: at least what the pilot found a run needs here, and enough for "
                             "every size to be seen whole (steps x batch_size >= size)"),
            ("evaluations", s.evaluations, "validations per run"),
            *control_keys([[m, sizes[-1]] for m, _ in s.budget_control], scale, CONTROL + " At the largest size")]


FAMILY = register(Family(
    NAME, "07_low_resource", LowResource, PROFILES, split=SPLIT, plan=plan,
    control_entry=lambda c: (c.method, c.train_size),  # a budget_control entry names (method, train size)
    columns=("task", "method", "train_size", "seed", "metric", "value"), build=build, read=read, claims=CLAIMS,
    figures={"low_resource": F.Entry(figure, "low_resource.csv", {"low_resource": ["score"]}, {"low_resource": None})},
    filters={"task": "task", "method": "methods", "train_size": "training sizes"}, study=study,
    answers=HOW_MUCH_DATA))
