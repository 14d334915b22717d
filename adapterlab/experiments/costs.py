"""What a plan costs: the dry run (every planned unit of work, how many are stored) and the hours of its runs.

    from adapterlab.experiments import costs
    costs.dry_run("default")                            # what `python -m adapterlab regenerate --dry-run` prints
    costs.plan_table("paper", speed=costs.gpu_speed())  # one row per (family, model, task, method) with its hours

The dry run counts every planned family's units as the runners see them (planning.work: training runs,
notebook 08's steps), as far as the store's records let the plan be made; a stored unit's cost is the
run_seconds its record measured. The plan table covers the training runs. A stored run's hours are the ones
its record measured, on the machine it names (stored_hours, measured_on). A missing run's are estimated
(estimated_hours) from one measured training step of the packaged MiniLM (REFERENCE): timed on this machine
(speed_here: the doctor's step check, as study init times a study), or, for a GPU, the step the committed GPU
check measured on an H200 (gpu_speed: docs/gpu-check/doctor.json). timing.Timing.run_seconds scales that
step to each run's steps, batch and evaluations, and flops_ratio to its backbone and tokens: the length its
length-bucketed batches pad to on average (batch_tokens), as study init times a study's step.
"""
import functools
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from . import planning
from . import profiles as profiles_module
from . import families as registry
from .results import ResultStore
from .study_init import load_timed, time_training
from .timing import Timing
from ..training import doctor
from ..training import tasks as task_registry
from ..training.backbones import default_tokenizer


def dry_run(profile, families=None, verbose=True, file=None, root=None, gpu=False):
    """Print each family's planned units of work (planning.work), how many the store holds and the seconds
    their records measured, and how many are missing; then the training runs' table (print_plan), its missing
    runs estimated for this machine, or for a GPU when `gpu` (gpu_speed). Return {family: units} (+ "total").
    The store counted is <root>/data/results/<profile>/ (profiles.results_dir). `families`: Family values or
    their names (None: every registered family)."""
    p = profiles_module.resolve(profile)
    store = ResultStore(profiles_module.results_dir(p, root))
    chosen = [registry.get(f) for f in families] if families is not None else registry.registered()
    counts = {}
    for family in chosen:
        units = planning.work(p, family, store)
        records = [store.get(u.key, u.family) for u in units]  # each in its own store file (04's spans, 06's timing)
        counts[family.name] = len(units)
        stored = [r for r in records if r is not None]
        timed = [r["run_seconds"] for r in stored if "run_seconds" in r]
        untimed = f", {len(stored) - len(timed)} without it" if len(timed) < len(stored) else ""
        print(f"{family.name}: {len(units)} units, {len(stored)} stored in {store.path(family.name)} "
              f"({sum(timed) / 3600:,.2f} h "
              f"of run_seconds{untimed}), {len(units) - len(stored)} missing", file=file)
        if verbose:
            for unit, record in zip(units, records):
                print(f"  {_state(record):>9}  {unit.label}", file=file)
    counts["total"] = sum(counts[f.name] for f in chosen)
    print(f"total: {counts['total']} units of work for profile {p.name!r}", file=file)
    print_plan(p, [f for f in chosen if f.trains_runs], file=file, root=root, speed=gpu_speed() if gpu else None)
    return counts


def _state(record):
    """A unit's column in the dry run: missing, the seconds its record measured, or stored (a record without them)."""
    if record is None:
        return "missing"
    return f"{record['run_seconds']:,.0f} s" if "run_seconds" in record else "stored"


# ----------------------------------------------------------------------------- the speed an estimate rests on

REFERENCE = "default"  # the backbone every speed is measured on: packaged (so always here), and the GPU check's
CPU_SHAPE = (32, 64)  # batch x tokens of the step timed here: the default profile's
GPU_REPORT = Path(__file__).resolve().parents[2] / "docs" / "gpu-check" / "doctor.json"


@functools.lru_cache(maxsize=1)
def speed_here():
    """A training step of REFERENCE timed on this machine, with the backbone's load (study_init.time_training:
    the doctor's step check, on the device a run would use); measured once per process."""
    load_seconds = load_timed(REFERENCE, 2)[2]
    return time_training(REFERENCE, *CPU_SHAPE, load_seconds)


def gpu_speed(report=GPU_REPORT):
    """The bf16 training step of REFERENCE that a GPU check measured (`python -m adapterlab doctor --report FILE`;
    the committed one ran on an NVIDIA H200), as a timing.Timing. The report does not time the backbone's
    load, so a run's estimate leaves it out. Reports older than the step's shape in them had the doctor's
    GPU_CHECK_SHAPE."""
    path = Path(report)
    if not path.is_file():
        raise FileNotFoundError(f"no GPU report at {path}: the estimate for a GPU reads the doctor's report (the "
                                "checkout's docs/gpu-check/doctor.json, or your own: python -m adapterlab doctor "
                                "--report FILE on a GPU machine)")
    r = json.loads(path.read_text())
    passed = [c for c in r.get("gpu_checks", []) if c.get("passed") and c.get("backbone") == REFERENCE]
    check = next((c for c in passed if c["dtype"] == "bf16"), passed[0] if passed else None)
    if check is None:
        raise ValueError(f"{path} holds no passed GPU check of the {REFERENCE!r} backbone, so no step time to scale: "
                         "run python -m adapterlab doctor --report FILE on a GPU machine")
    batch, tokens = check.get("batch_size", doctor.GPU_CHECK_SHAPE[0]), check.get("seq_len", doctor.GPU_CHECK_SHAPE[1])
    return Timing(f"{r['gpu']['name']}, {check['dtype']} ({path.name})", check["step_seconds"], 0.0, batch, tokens)


# ----------------------------------------------------------------------------- one run's estimate

# Blocks per stack, width, feed-forward width and vocabulary of the backbones a profile names (their configs)
SHAPES = {"default": dict(encoder=6, decoder=0, d=384, ff=1536, vocab=30522),  # all-MiniLM-L6-v2
          "tiny": dict(encoder=2, decoder=0, d=64, ff=128, vocab=30522),
          "tiny-t5": dict(encoder=2, decoder=2, d=64, ff=128, vocab=30522),
          "bert-base-uncased": dict(encoder=12, decoder=0, d=768, ff=3072, vocab=30522),
          "t5-base": dict(encoder=12, decoder=12, d=768, ff=3072, vocab=32128)}
ANSWER_TOKENS = 4  # a T5 target ("entailment", "3.4") plus end-of-sequence, roughly
VALIDATION_CAP = 2000  # tasks.py: validation is 10% of GLUE's train split, at most 2,000 examples


def forward_flops(shape, tokens):
    """Matmul FLOPs of one example's forward pass: 2 per weight per token, plus attention's T^2 terms."""
    d, ff = shape["d"], shape["ff"]
    encoder = shape["encoder"] * (2 * tokens * (4 * d * d + 2 * d * ff) + 4 * tokens * tokens * d)
    decoder = shape["decoder"] * 2 * ANSWER_TOKENS * (8 * d * d + 2 * d * ff)
    head = 2 * ANSWER_TOKENS * d * shape["vocab"] if shape["decoder"] else 0
    return encoder + decoder + head


def flops_ratio(config, timing):
    """How many times the timed step's examples (REFERENCE at the timing's tokens) a run's examples cost: the
    ratio of their forward FLOPs, which follows the backbone and the tokens (batch_tokens) alike. None for a
    backbone SHAPES lacks (a study's own model): its runs are not estimated."""
    shape = SHAPES.get(config.backbone)
    tokens = batch_tokens(config.task, config.max_length, config.train.batch_size)
    return None if shape is None else forward_flops(shape, tokens) / forward_flops(SHAPES[REFERENCE], timing.max_length)


@functools.lru_cache(maxsize=64)
def batch_tokens(task, max_length, batch_size):
    """The tokens a run's training batches pad to on average: its train texts cut at max_length, in
    length-bucketed batches (tasks.padded_length, rounded up), under the packaged tokenizer (the WordPiece
    vocabulary of every BERT in SHAPES; a T5's differs a little). max_length for GLUE, whose texts are not
    read for an estimate (split_sizes: no download)."""
    if task.partition(":")[0] in planning.GLUE_TRAIN_SIZES:
        return max_length
    lengths = task_registry.token_lengths(task_registry.load_task(task), default_tokenizer())
    return math.ceil(task_registry.padded_length(np.minimum(lengths, max_length), batch_size))


@functools.lru_cache(maxsize=64)
def split_sizes(task):
    """{split: examples} of a task: GLUE's from its known train size without a download (validation a tenth of
    train, at most VALIDATION_CAP, as tasks.py carves it; test, the official validation set, taken as large);
    any other task's counted."""
    glue = planning.GLUE_TRAIN_SIZES.get(task.partition(":")[0])
    if glue:
        held_out = min(VALIDATION_CAP, round(glue / 9))
        return {"train": glue, "validation": held_out, "test": held_out}
    return {split: len(data) for split, data in task_registry.load_task(task).splits.items()}


def estimated_seconds(config, timing, eval_cap=None):
    """A run's seconds at `timing`'s speed: Timing.run_seconds (the backbone's load, the run's steps at its batch,
    its evaluations) with each example scaled by flops_ratio; None for a backbone of unknown shape."""
    ratio = flops_ratio(config, timing)
    return None if ratio is None else timing.run_seconds(config, split_sizes(config.task), eval_cap, scale=ratio)


def measured_seconds(record):
    """What a stored run took, as its record measured it: run_seconds (the whole run), or train_seconds (the
    training loop) in a record older than run_seconds."""
    return record["run_seconds"] if "run_seconds" in record else record["train_seconds"]


# ----------------------------------------------------------------------------- the plan as a table

def plan_table(profile, families=None, root=None, speed=None):
    """One row per (family, model, task, method): the grid it sweeps, seeds, runs, runs stored (in
    <root>/data/results/<profile>/, as dry_run), the hours the stored runs' records measured and the machines
    they name (stored_hours, measured_on), and the hours the missing runs would take (estimated_hours, NaN
    where a backbone's shape is unknown) at `speed` (a timing.Timing; None: speed_here, timed only when a
    run is missing). `families`: Family values or their names (None: every family of training runs)."""
    p = profiles_module.resolve(profile)
    store = ResultStore(profiles_module.results_dir(p, root))
    rows = []
    for family in _training_families(families):
        cap = planning.eval_size(p, family)
        for c in planning.plan_from(p, family, planning.store_lookup(store, p, family)):
            record = store.get(planning.run_key(c, p, family), family.name)
            estimate = None if record else estimated_seconds(c, speed or speed_here(), cap)
            setting = {"lr": c.train.lr, "epochs" if not c.train.max_steps else "steps": c.train.max_steps or c.train.epochs,
                       **c.method_args, **({"train_size": c.train_size} if c.train_size else {})}
            rows.append(dict(family=family.name, model=c.backbone, task=c.task, method=c.method, seed=c.train.seed,
                             setting=setting, stored=record is not None,
                             stored_hours=measured_seconds(record) / 3600 if record else 0.0,
                             machine=record.get("machine", "machine not recorded") if record else None,
                             estimated_hours=float("nan") if estimate is None else estimate / 3600))
    if not rows:  # no training family asked for (the dry run of the stream alone)
        return pd.DataFrame()
    groups = []
    for (family, model, task, name), g in pd.DataFrame(rows).groupby(["family", "model", "task", "method"], sort=False):
        names = dict.fromkeys(k for setting in g["setting"] for k in setting)  # first-seen order
        values = {k: {setting[k] for setting in g["setting"] if k in setting} for k in names}
        shown = lambda v: f"{v:g}" if isinstance(v, (int, float)) else str(v)  # noqa: E731  (prompt_init="vocab")
        grid = " ".join(f"{k}={'/'.join(shown(v) for v in sorted(vs, key=str))}" for k, vs in values.items())
        missing = g[~g["stored"]]["estimated_hours"]
        groups.append(dict(family=family, model=model, task=task, method=name, grid=grid,
                           seeds=",".join(str(s) for s in sorted(set(g["seed"]))), runs=len(g),
                           stored=int(g["stored"].sum()), stored_hours=round(g["stored_hours"].sum(), 2),
                           measured_on=", ".join(sorted(set(g["machine"].dropna()))),
                           estimated_hours=round(missing.sum(), 2) if missing.notna().all() else float("nan")))
    table = pd.DataFrame(groups)
    table.attrs["machines"] = Counter(m for m in (r["machine"] for r in rows) if m)  # runs per machine
    return table


def _training_families(families):
    """Families of training runs, as Family values: `families` (values or names), or every registered one."""
    chosen = [registry.get(f) for f in families] if families is not None else registry.registered()
    return [f for f in chosen if f.trains_runs]


def print_plan(profile, families=None, file=None, root=None, speed=None):
    """The plan table and its totals: what the stored runs took, as measured, and what the missing ones would
    take at `speed` (None: this machine's, speed_here): what `regenerate --dry-run` shows."""
    table = plan_table(profile, families, root, speed)
    if not len(table):
        return table
    print(table.to_string(index=False, max_colwidth=70), file=file)
    stored, missing = int(table["stored"].sum()), int(table["runs"].sum() - table["stored"].sum())
    if stored:
        machines = ", ".join(f"{name} {n} run(s)" for name, n in table.attrs["machines"].most_common())
        print(f"stored: {stored:,} runs, {table['stored_hours'].sum():,.1f} h as their records measured them "
              f"(run_seconds, each run whole; on {machines})", file=file)
    if missing:
        print(estimate_line(table, missing, speed or speed_here()), file=file)
    return table


def estimate_line(table, missing, timing):
    """One line: the missing runs' estimated hours and the measurement they rest on."""
    unknown = sorted(set(table[table["estimated_hours"].isna()]["model"]))
    hours = table["estimated_hours"].sum()  # NaN rows (unknown shapes) left out of the sum
    return (f"missing: {missing:,} runs, about {hours:,.1f} h on {timing.device} (a training step of the packaged "
            f"MiniLM, {timing.batch_size} x {timing.max_length} tokens, measured at {timing.step_seconds * 1000:,.1f} "
            "ms; scaled to each run's steps, batch and evaluations, and by forward FLOPs to its backbone and tokens; "
            "one run at a time, each batch at the length its texts pad to)"
            + (f"; not estimated: the runs on {', '.join(unknown)} (a backbone of unknown shape)" if unknown else ""))
