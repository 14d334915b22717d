"""Notebook 03, the lesson's own runs: each method trained once on the profile's first task, and an adapter swap.

    from adapterlab.families import teaching
    config = teaching.lesson_config(profile, "houlsby", "airline")   # one run of the notebook
    result = tables.get("teaching", profile)                         # its table: one row per planned run
    lines, _ = teaching.read(result.table)                           # what FINDINGS.md prints for 03

Full fine-tuning, Houlsby and Pfeiffer adapters, Compacter and Compacter++ train side by side, one run each; the
swap method (Houlsby) trains on a second task too, and the notebook swaps the two adapters on one frozen base.
The runs teach: one run per method, so the reading compares each with the majority class and with full
fine-tuning by intervals that cover test sampling only, and judges no paper claim (notebook 06 does, with
seeds). The family declares no claim and `teaches` says so.
"""
import math
from dataclasses import dataclass

import pandas as pd

from ..experiments import planning, profiles, rules, stats
from ..experiments.families import Family, register
from ..report import figures as F
from ..report import labels, provenance, tables
from ..report.findings import ci_text, pts
from ..training import tasks as task_registry

NAME = "teaching"
SPLIT = "test"  # its table's `value`: each run's test score


# ----------------------------------------------------------------------------- settings

@dataclass(frozen=True)
class Teaching:
    """Notebook 03: the methods trained side by side, and the adapter swap."""
    methods: tuple = ("full", "houlsby", "pfeiffer", "compacter", "compacter++")
    swap_method: str = "houlsby"  # trained on two tasks; 03 swaps its adapters
    second_task: str | None = None  # the swap's second task (None: the first that fits)
    eval_size: int | None = None

    def keeps_adapter(self, config):
        """The swap method's adapters are kept: 03 swaps them."""
        return config.method == self.swap_method


PROFILES = {
    "smoke": dict(methods=("full", "houlsby", "pfeiffer", "compacter", "compacter++"), swap_method="houlsby",
                  second_task="synthetic"),
    "default": dict(methods=("full", "houlsby", "pfeiffer", "compacter", "compacter++"), swap_method="houlsby",
                    second_task="synthetic"),
    "paper": dict(methods=("full", "houlsby", "pfeiffer", "compacter", "compacter++"), swap_method="houlsby",
                  second_task="glue/sst2"),
}


# ----------------------------------------------------------------------------- plan

def train_split_size(task, source=None):
    """Examples in a task's train split: GLUE's are known (no download); the local tasks load in a moment
    (`source`: the data a study's task stands for)."""
    return (planning.GLUE_TRAIN_SIZES.get(task.partition(":")[0])
            or len(task_registry.load_task(task, source=source).splits["train"]))


def lesson_config(profile, method, task, lr=None, method_args=None):
    """One run of notebook 03: the profile's training settings for `method` on `task`, on the profile's
    train size (all of a smaller train split); lr and method_args (the notebook's parameters) override."""
    p = profiles.resolve(profile)
    size = p.train_size if p.train_size is not None and p.train_size < train_split_size(
        task, p.task_sources.get(task)) else None
    return planning.config_for(p, task=task, method=method, method_args=method_args, train_size=size,
                               lr=planning.method_lr(p, method) if lr is None else lr)


def second_task(profile, requested=None):
    """The second task of 03's adapter swap: `requested` (else the profile's), unless it is the first task
    or has another number of classes; then the first of airline, synthetic, synthetic-pair that fits."""
    p = profiles.resolve(profile)
    first = p.tasks[0]
    classes = task_registry.num_labels(first, p.task_sources.get(first))
    candidates = [requested or p.settings(NAME).second_task, "airline", "synthetic", "synthetic-pair"]
    second = next((t for t in candidates if t and t != first and task_registry.num_labels(t) == classes), None)
    if second is None:  # a study's own data may have a number of classes no packaged task has
        raise ValueError(f"notebook 03's adapter swap needs a second task with {classes} classes, as {first!r} has, "
                         f"and none of {', '.join(t for t in candidates if t)} has them: set teaching second_task "
                         "to such a task, or leave notebook 03 out (--only 04,05,06,07)")
    return second


def plan(p, chosen):
    """Notebook 03 with its default parameters: every teaching method on the first task, and the swap
    method on the second task too (both adapters kept for the swap demo: Teaching.keeps_adapter)."""
    s = p.settings(NAME)
    first = p.tasks[0]
    configs = [lesson_config(p, m, first) for m in s.methods]
    for task in (first, second_task(p)):
        if (config := lesson_config(p, s.swap_method, task)) not in configs:
            configs.append(config)
    return configs


# ----------------------------------------------------------------------------- table

def build(profile, records, root=None):
    """The lesson's table from its runs' records, in plan order (the first task's runs first): one row per run.
    Columns: task, method, metric, value (the test score of the state best on validation), the run's columns
    (tables.RUN_COLUMNS, its test bits among them; baseline: the majority class on test), then trainable,
    percent (of the base model's parameters), examples_per_second, validation, train_seconds, peak_memory_mb,
    backbone."""
    rows = [dict(task=r["task"], method=r["method"], metric=r["metric"], value=r["test"], **tables.run_columns(r),
                 baseline=r["majority"], trainable=r["trainable"], percent=r["percent"],
                 examples_per_second=r["examples_per_second"], validation=r["validation"],
                 train_seconds=r["train_seconds"], peak_memory_mb=r["peak_memory_mb"], backbone=r["backbone"])
            for r in records]
    return tables.FamilyResult(NAME, tables.tidy_frame(rows, FAMILY))


# ----------------------------------------------------------------------------- figure

BACKBONE_NAMES = {"default": "MiniLM-L6", "tiny": "tiny random BERT"}


def learning_curves(records):
    """Notebook 03: training loss and validation score against the step (two views), one line per method.
    `records`: {method: its run's record}. One run per method, so no error bars; ✕ on the last point of a
    run that did not converge."""
    if not records:
        raise ValueError("learning_curves: no records; pass {method: record} of notebook 03's runs")
    first, methods, views = next(iter(records.values())), list(records), {}
    head = f"{BACKBONE_NAMES.get(first['backbone'], first['backbone'])} on {first['config']['task']}"
    bad = [m for m, r in records.items() if not r.get("converged", True)]
    for mode, key, scale, ylabel in (("training loss", "train_loss", 1, "training loss (cross-entropy)"),
                                     ("validation", "validation", labels.SCALE,
                                      labels.metric_label(first["metric"]))):
        view = F.View(f"{head}: {mode}\none run per method, no error bars"
                      + "; ✕ the last point of a run that did not converge" * bool(bad), "training step", ylabel,
                      False)
        for m, r in records.items():
            x, y = zip(*[(p["step"], p[key] * scale) for p in r["curve"] if p.get(key) is not None])
            view.series.append(F.Series(labels.method_name(m), list(x), list(y), None, list(x[-1:]) * (m in bad),
                                        list(y[-1:]) * (m in bad), *F.key_style(methods, m)))
        views[mode] = view
    return F.Figure("learning_curves", views)


def teaching_records(profile, root=None):
    """{method: record} of notebook 03's runs on its first task as the profile plans them, from the store
    under `root`: what learning_curves draws."""
    first = profiles.resolve(profile).tasks[0]
    return {r["method"]: r for r in provenance.stored_runs(profile, NAME, root) if r["task"] == first}


# ----------------------------------------------------------------------------- reading

PAPERS = {  # method -> what the papers report against full fine-tuning
    "houlsby": "within 0.4 points of full fine-tuning on GLUE with 3.6% of the parameters (Houlsby Table 1)",
    "pfeiffer": "on par with full fine-tuning, a slight degradation (Compacter Table 1)",
    "compacter": "on par with full fine-tuning with 0.073% of the parameters (Compacter Table 1)",
    "compacter++": "on par with full fine-tuning with 0.047% of the parameters (Compacter Table 1)",
}


def lesson_lines(results, majority, metric, n_test):
    """03's reading: markdown lines from its results (index method; columns 'test <metric>', 'trainable %',
    'examples/s', optionally 'test_correct' and 'converged'), the majority-class score and the number of test
    examples. 03's runs teach: one run per method, so its comparisons with full fine-tuning are shown with their
    intervals, which cover test sampling only, and judge no paper claim (06 does). Differences are paired by
    example when the results have each run's `test_correct` bits; otherwise they get the conservative unpaired SE
    of two scores (stats.scores), and the text says which."""
    test = results[f"test {metric}"]
    bits = results["test_correct"] if "test_correct" in results else pd.Series(None, index=results.index)
    lines = [f"One run per method, test {labels.metric_name(metric)} on {n_test:,} examples (one score's "
             f"sampling SE about {pts(math.sqrt(test.mean() * (1 - test.mean()) / n_test))} points); majority "
             f"class {pts(majority)}."]
    for m in test.index:
        above = stats.scores(test[m], majority, n_test, b_exact=True)
        lines.append(f"- {m}: {pts(test[m])}, {results.loc[m, 'trainable %']:.3f}% of the parameters trained; "
                     f"{ci_text(above)} points above the majority class (95% CI).")
    if "full" in test.index:
        for m in (m for m in test.index if m in PAPERS):
            paired = isinstance(bits[m], str) and isinstance(bits["full"], str)
            diff = (stats.by_example(bits["full"], bits[m], n_test) if paired else
                    stats.scores(test[m], test["full"], n_test))
            lines.append(f"- {m} minus full fine-tuning: {ci_text(diff)} points (95% CI, {diff.how}; one run "
                         f"each, so test sampling only); the papers: {PAPERS[m]}.")
        speed = results["examples/s"] / results.loc["full", "examples/s"]
        others = speed.drop("full")
        if len(others):
            lines.append(f"- training speed relative to full fine-tuning: {others.min():.2f}x to {others.max():.2f}x "
                         f"({others.idxmax()} fastest; measured, one run each): adapters save the optimizer state "
                         "and the weight gradients, but the backward pass still runs through every layer.")
    if "converged" in results:
        lines.append(f"- {int((~results['converged'].astype(bool)).sum())} of {len(results)} runs not converged "
                     f"(rule {rules.CONVERGENCE_RULE_VERSION}): these are the lesson's runs at its budget; notebook "
                     "06 judges the claims, with seeds.")
    return lines


def lesson_results(table):
    """(results, majority, metric, test examples) of the table's runs on its first task, as lesson_lines reads
    them: one row per method, the last run of a method counting."""
    first = table[table["task"] == table["task"].iloc[0]]
    runs = {m: row for m, row in zip(first["method"], first.itertuples())}
    metric = first["metric"].iloc[0]
    results = pd.DataFrame([{"method": m, f"test {metric}": r.value, "trainable %": r.percent,
                             "examples/s": r.examples_per_second, "test_correct": r.test_correct,
                             "converged": bool(r.converged)} for m, r in runs.items()]).set_index("method")
    return results, first["baseline"].iloc[0], metric, int(first["test_examples"].iloc[0])


def read(table, budget=None):
    """03's reading (Family.read): its header and lesson_lines of the runs on the first task; no verdict, since
    the lesson's runs judge no claim. The lesson has no budget controls: `budget` is read by no line."""
    results, majority, metric, n_test = lesson_results(table)
    task = table["task"].iloc[0]
    return [f"**Training adapters, {task}** (notebook 03: the lesson's runs, no claim rests on them)",
            *lesson_lines(results, majority, metric, n_test)], []


FAMILY = register(Family(
    NAME, "03_training_adapters", Teaching, PROFILES, split=SPLIT, plan=plan,
    columns=("task", "method", "metric", "value"), build=build, read=read,
    figures={"learning_curves": F.Entry(learning_curves, "teaching.jsonl",
                                        {"learning_curves": ["training loss", "validation"]},
                                        {"learning_curves": None},
                                        load=lambda profile, root, path: teaching_records(profile, root))},
    teaches=True))
