"""What a plan costs: the dry run (every planned unit of work, how many are stored) and GPU-hours from FLOPs.

    from adapterlab.experiments import costs
    costs.dry_run("paper")          # what `python -m adapterlab regenerate --dry-run` prints
    costs.plan_table("paper")       # one row per (family, model, task, method) with its GPU-hours

The dry run counts every planned family's units as the runners see them (planning.work: training runs,
notebook 08's steps), as far as the store's records let the plan be made; a stored unit's cost is the
run_seconds its record measured. The GPU-hour table covers the training runs (their run configs give
the FLOPs), a stored run costing its measured train_seconds.
"""
import math

import pandas as pd

from . import planning
from . import profiles as profiles_module
from .families import PLANNED, TRAINED
from ..methods.config import method
from .results import ResultStore


def dry_run(profile, families=PLANNED, verbose=True, file=None, root=None):
    """Print each family's planned units of work (planning.work), how many the store holds and the seconds
    their records measured, and how many are missing; return {family: units} (+ "total"). The store counted
    is <root>/data/results/<profile>/ (profiles.results_dir)."""
    p = profiles_module.resolve(profile)
    store = ResultStore(profiles_module.results_dir(p, root))
    counts = {}
    for family in families:
        units = planning.work(p, family, store)
        records = [store.get(u.key, family) for u in units]
        counts[family] = len(units)
        stored = [r for r in records if r is not None]
        timed = [r["run_seconds"] for r in stored if "run_seconds" in r]
        untimed = f", {len(stored) - len(timed)} without it" if len(timed) < len(stored) else ""
        print(f"{family}: {len(units)} units, {len(stored)} stored in {store.path(family)} ({sum(timed) / 3600:,.2f} h "
              f"of run_seconds{untimed}), {len(units) - len(stored)} missing", file=file)
        if verbose:
            for unit, record in zip(units, records):
                print(f"  {_state(record):>9}  {unit.label}", file=file)
    counts["total"] = sum(counts[f] for f in families)
    print(f"total: {counts['total']} units of work for profile {p.name!r}", file=file)
    # the training runs as a table, with their cost in GPU-hours (their run configs give the FLOPs)
    print_plan(p, [f for f in families if f in TRAINED], file=file, root=root)
    return counts


def _state(record):
    """A unit's column in the dry run: missing, the seconds its record measured, or stored (a record without them)."""
    if record is None:
        return "missing"
    return f"{record['run_seconds']:,.0f} s" if "run_seconds" in record else "stored"


# The papers' backbones: blocks per stack, width, feed-forward width, vocabulary (their configs)
SHAPES = {"bert-base-uncased": dict(encoder=12, decoder=0, d=768, ff=3072, vocab=30522),
          "t5-base": dict(encoder=12, decoder=12, d=768, ff=3072, vocab=32128)}
# No GPU was at hand to time steps, so costs come from FLOPs on an assumed GPU: an A100's dense bf16
# peak at 30% utilisation (small models and short sequences keep it far from peak)
GPU_FLOPS, UTILISATION = 312e12, 0.30
ANSWER_TOKENS = 4  # a T5 target ("entailment", "3.4") plus end-of-sequence, roughly
VALIDATION_CAP = 2000  # tasks.py: validation is 10% of GLUE's train split, at most 2,000 examples


def forward_flops(shape, tokens):
    """Matmul FLOPs of one example's forward pass: 2 per weight per token, plus attention's T^2 terms."""
    d, ff = shape["d"], shape["ff"]
    encoder = shape["encoder"] * (2 * tokens * (4 * d * d + 2 * d * ff) + 4 * tokens * tokens * d)
    decoder = shape["decoder"] * 2 * ANSWER_TOKENS * (8 * d * d + 2 * d * ff)
    head = 2 * ANSWER_TOKENS * d * shape["vocab"] if shape["decoder"] else 0
    return encoder + decoder + head


def backward_factor(config):
    """Backward FLOPs as a multiple of forward: 2 when all weights train (input and weight gradients),
    2k/L for top-k (only the top k blocks are back-propagated), else 1 (input gradients through the
    frozen stack down to the first adapter / LayerNorm; the few trained weights add little)."""
    m = method(config.method, **config.method_args)
    if m.trains == "all":
        return 2.0
    if m.trains == "top-k":
        return 2.0 * m.k / SHAPES[config.backbone]["encoder"]
    return 1.0


def gpu_seconds(config):
    """Estimated seconds of one run on the assumed GPU; None for backbones without a known shape.
    Every example is counted at max_length tokens: an upper bound (batches are length-bucketed)."""
    shape = SHAPES.get(config.backbone)
    if shape is None:
        return None
    t, task = config.train, config.task.split(":")[0]
    n_train = config.train_size or planning.train_split_size(task)
    steps = t.max_steps or math.ceil(t.epochs * math.ceil(n_train / t.batch_size))
    evaluations = math.ceil(steps / (t.eval_every or math.ceil(n_train / t.batch_size)))
    n_validation = min(VALIDATION_CAP, round(planning.train_split_size(task) / 9))  # GLUE: a tenth of train
    forward = forward_flops(shape, config.max_length)
    flops = steps * t.batch_size * forward * (1 + backward_factor(config)) + (evaluations + 1) * n_validation * forward
    return flops / (GPU_FLOPS * UTILISATION)


def plan_table(profile, families=TRAINED, root=None):
    """One row per (family, model, task, method): the grid it sweeps, seeds, runs, runs stored (in
    <root>/data/results/<profile>/, as dry_run), and GPU-hours (estimated from FLOPs; measured
    train_seconds for runs already stored)."""
    p = profiles_module.resolve(profile)
    store = ResultStore(profiles_module.results_dir(p, root))
    rows = []
    for family in families:
        for c in planning.plan_from(p, family, planning.store_lookup(store, p, family)):
            record = store.get(planning.run_key(c, p, family), family)
            seconds = record["train_seconds"] if record else gpu_seconds(c)
            setting = {"lr": c.train.lr, "epochs" if not c.train.max_steps else "steps": c.train.max_steps or c.train.epochs,
                       **c.method_args, **({"train_size": c.train_size} if c.train_size else {})}
            rows.append(dict(family=family, model=c.backbone, task=c.task, method=c.method, seed=c.train.seed,
                             setting=setting, stored=record is not None, hours=None if seconds is None else seconds / 3600))
    if not rows:  # no training family asked for (the dry run of the stream alone)
        return pd.DataFrame()
    groups = []
    for (family, model, task, name), g in pd.DataFrame(rows).groupby(["family", "model", "task", "method"], sort=False):
        names = dict.fromkeys(k for setting in g["setting"] for k in setting)  # first-seen order
        values = {k: {setting[k] for setting in g["setting"] if k in setting} for k in names}
        shown = lambda v: f"{v:g}" if isinstance(v, (int, float)) else str(v)  # noqa: E731  (prompt_init="vocab")
        grid = " ".join(f"{k}={'/'.join(shown(v) for v in sorted(vs, key=str))}" for k, vs in values.items())
        hours = g["hours"].sum() if g["hours"].notna().all() else float("nan")
        groups.append(dict(family=family, model=model, task=task, method=name, grid=grid,
                           seeds=",".join(str(s) for s in sorted(set(g["seed"]))), runs=len(g),
                           stored=int(g["stored"].sum()), gpu_hours=round(hours, 2)))
    return pd.DataFrame(groups)


def print_plan(profile, families=TRAINED, file=None, root=None):
    """The plan table and its total: what `regenerate --dry-run` shows."""
    table = plan_table(profile, families, root)
    if not len(table):
        return table
    print(table.to_string(index=False, max_colwidth=70), file=file)
    total = table["gpu_hours"].sum()
    if table["gpu_hours"].notna().all():
        print(f"estimated cost: {total:,.0f} GPU-hours for {table['runs'].sum():,} runs "
              f"(from FLOPs, every example at max_length tokens on a GPU of "
              f"{GPU_FLOPS / 1e12:.0f} TFLOP/s at {UTILISATION:.0%} utilisation, an A100's bf16 peak; "
              f"measured train_seconds for stored runs)", file=file)
    return table
