"""Tables: a family's stored records in, tidy DataFrames out; write() saves them.

    from adapterlab.experiments import running
    from adapterlab.report import tables
    running.run_plan(profile, "06")                # trains (and scores) what the store lacks
    result = tables.get("06", profile)             # reads the store, builds the tables
    result.table, result.grid                      # one row per run; the learning-rate grid runs
    tables.write(result, profile)                  # data/results/<profile>/<family>*.csv

get(family, profile, root) is the one way from a family to its FamilyResult: it reads the records of the
family's plan from the result store under `root` (running.plan_records, which names what the store lacks),
lets the family build its table from them (Family.build, which reads what it needs beside them: layer
removal's span scores) and adds its budget controls; it trains nothing, scores nothing and writes no file.
A family's build makes its table from records alone, with the pieces here every family shares (run_columns,
tidy_frame). write() is the one step that writes the CSVs: a family's contract columns first (Family.columns,
DESIGN.md "Result tables"), the run's columns, extras, and LAST_COLUMNS at the end.
Every table's `split` column says which split its `value` measures (Family.split).
"""
import math
from dataclasses import dataclass, field, replace

import pandas as pd

from ..experiments import families, judge, planning, rules
from ..experiments import profiles as profiles_module
from ..experiments import running
from ..training import train as T
from .labels import method_label
from ..methods.config import method
from ..experiments.results import write_csvs

# In every CSV, after its family's contract columns (Family.columns), these columns of the run a row comes from (DESIGN.md "Result tables")
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

def config_of(record):
    return T.RunConfig.from_dict(record["config"])


def method_of(config):
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


def grid_columns(trials):
    """What a reading needs to disclose a learning-rate choice (findings.choice_text), from the trial records of
    one grid: lr_grid (the rates tried, space-separated, in trial order; "" without a grid), lr_grid_validation
    (each rate's mean validation score over the trial seeds, planning.grid_means: the means the choice compared,
    in lr_grid's order, at full precision so that a one-example margin survives the CSV) and lr_grid_seeds (the
    seeds each mean averages)."""
    grids = planning.grid_means(trials)
    if len(grids) > 1:
        raise ValueError(f"grid_columns takes the trials of one grid, not of {len(grids)}; group them by "
                         "planning.grid_id first")
    means = next(iter(grids.values()), {})
    return dict(lr_grid=" ".join(f"{lr:g}" for lr in means),
                lr_grid_validation=" ".join(str(float(v)) for v in means.values()),
                lr_grid_seeds=len({r["config"]["train"]["seed"] for r in trials}))


def tidy_frame(rows, family, grid=False):
    """Rows as a family's table (a families.Family): its contract columns, run columns, extras, then
    LAST_COLUMNS; as a learning-rate grid table (`grid`): its own columns, then LAST_COLUMNS. split: the
    family's, the split of `value`."""
    frame = pd.DataFrame(rows)
    contract = list(family.columns)
    first = [] if grid else contract + [c for c in RUN_COLUMNS if c not in contract]
    if not len(frame):
        return frame if grid else pd.DataFrame(columns=first + LAST_COLUMNS)
    frame["split"] = family.split
    extra = [c for c in frame.columns if c not in first and c not in LAST_COLUMNS]
    return frame[first + extra + LAST_COLUMNS]


def group_by(records, key):
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


# ----------------------------------------------------------------------------- budget controls

def budget_control(profile, family, root=None):
    """The family's budget controls (planning.budget_controls) as they stand in the store: one row per
    control trained, with its 1x run, both scored on the validation split (budget rule 3: the test split
    decides nothing but the final verdicts). Columns: family, task, method, label, entry, arm (the entry's
    position: 0 is the reference arm), arms (the number of entries), seed, lr, steps, steps_2x, value, value_2x (validation metric of each),
    validation_correct, validation_correct_2x (their per-example bits), validation_examples, converged,
    converged_2x, split, budget_rule (the version of the rule that judges the rows: judge.budget_verdict).
    Empty when the family has no controls."""

    p, family = profiles_module.resolve(profile), families.get(family)
    if not family.control_entry or not p.settings(family).budget_control:
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
        entry = str(family.control_entry(base))
        rows.append(dict(family=family.name, task=base.task, method=base.method, label=method_label(method_of(base)),
                         entry=entry, arm=entries.index(entry), arms=len(entries), seed=base.train.seed, lr=base.train.lr,
                         steps=r1["steps"], steps_2x=r2["steps"], value=r1["validation"], value_2x=r2["validation"],
                         validation_correct=bits1["validation_correct"],
                         validation_correct_2x=bits2["validation_correct"],
                         validation_examples=bits1["validation_examples"], converged=bool(r1["converged"]),
                         converged_2x=bool(r2["converged"]), split="validation",
                         budget_rule=judge.BUDGET_RULE_VERSION))
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- a family's, and writing

def get(family, profile, root=None):
    """One family's FamilyResult (a families.Family or its name), from the store under `root`: the records of
    its plan (running.plan_records: a ValueError names what the store lacks and how to make it) made into its
    tables (from_records). Nothing trains here: running.run_plan (or the sweep) makes the records first."""
    p = profiles_module.resolve(profile)
    return from_records(family, p, running.plan_records(p, family, running.store_of(p, root=root)), root)


def from_records(family, profile, records, root=None):
    """get's FamilyResult from the records of the family's plan already read (what running.run_plan returns):
    its table built from them (Family.build, which reads what it needs beside them) and its budget controls
    added (budget_control)."""
    p, family = profiles_module.resolve(profile), families.get(family)
    return replace(family.build(p, records, root), budget=budget_control(p, family, root))


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
