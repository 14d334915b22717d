"""What a plan costs: the dry run (every unit of work its plan will make, how many are stored) and its hours.

    from adapterlab.experiments import costs
    costs.dry_run("default")                            # what `python -m adapterlab regenerate --dry-run` prints
    costs.plan_table("paper", speed=costs.gpu_speed())  # one row per (family, model, task, method) with its hours

The dry run counts and prices the units with the one estimate (estimate.py), the one study init sizes a study
with: every unit the plan will make (grid trials, the runs at the rates validation chooses, budget controls,
scoring passes, notebook 08's steps), a choice not made yet stood in for. A stored unit's cost is the
run_seconds its record measured, on the machine it names (stored_hours, measured_on); a missing unit's is
estimated from one measured training step of the packaged MiniLM (REFERENCE): timed on this machine (speed_here:
the doctor's step check and a span-scoring pass, as study init times a study), or, for a GPU, the step the
committed GPU check measured on an H200 (gpu_speed: docs/gpu-check/doctor.json), scaled by estimate.seconds to
each unit's steps, batch, evaluations, backbone and tokens.
"""
import functools
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pandas as pd

from . import estimate
from . import profiles as profiles_module
from . import families as registry
from .results import ResultStore
from .study_init import load_timed, time_scoring, time_training
from .timing import Timing
from ..training import doctor
from ..training.train import RunConfig


def dry_run(profile, families=None, verbose=True, file=None, root=None, gpu=False):
    """Print each family's units of work (estimate.units: every unit its plan will make), how many the store
    holds and the seconds their records measured, and how many are missing; then the training runs' table and
    the missing units' estimate (print_plan), for this machine, or for a GPU when `gpu` (gpu_speed). Return
    {family: units} (+ "total"). The store counted is <root>/data/results/<profile>/ (profiles.results_dir).
    `families`: Family values or their names (None: every registered family)."""
    p = profiles_module.resolve(profile)
    store = ResultStore(profiles_module.results_dir(p, root))
    chosen = [registry.get(f) for f in families] if families is not None else registry.registered()
    counts, planned = {}, {}
    for family in chosen:
        planned[family.name] = units = estimate.units(p, family, store)
        records = [store.get(u.unit.key, u.unit.family) for u in units]
        counts[family.name] = len(units)
        stored = [r for r in records if r is not None]
        timed = [r["run_seconds"] for r in stored if "run_seconds" in r]
        untimed = f", {len(stored) - len(timed)} without it" if len(timed) < len(stored) else ""
        kinds = estimate.Estimate(units, 0.0).by_kind()
        print(f"{family.name}: {len(units)} units, {len(stored)} stored in {store.path(family.name)} "
              f"({sum(timed) / 3600:,.2f} h of run_seconds{untimed}), {len(units) - len(stored)} missing"
              + (f" (in all: {kinds})" if kinds else ""), file=file)
        if verbose:
            for unit, record in zip(units, records):
                print(f"  {_state(record):>9}  {unit.kind}: {unit.unit.label}", file=file)
    counts["total"] = sum(counts[f.name] for f in chosen)
    print(f"total: {counts['total']} units of work for profile {p.name!r}", file=file)
    print_plan(p, chosen, file=file, root=root, speed=gpu_speed() if gpu else None, planned=planned)
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
SCORED_ADAPTER = {"bottleneck": 64}  # the Houlsby adapter a span-scoring pass is timed with (its size barely counts)


@functools.lru_cache(maxsize=1)
def speed_here():
    """A training step of REFERENCE timed on this machine, with the backbone's load (study_init.time_training:
    the doctor's step check, on the device a run would use) and a span-scoring pass (study_init.time_scoring);
    measured once per process."""
    model, tokenizer, load_seconds = load_timed(REFERENCE, 2)
    timing = time_training(REFERENCE, *CPU_SHAPE, load_seconds)
    return replace(timing, span_seconds=time_scoring(model, tokenizer, *CPU_SHAPE, SCORED_ADAPTER))


def gpu_speed(report=GPU_REPORT):
    """The bf16 training step of REFERENCE that a GPU check measured (`python -m adapterlab doctor --report FILE`;
    the committed one ran on an NVIDIA H200), as a timing.Timing. The report does not time the backbone's
    load, so a run's estimate leaves it out, nor a scoring pass, which goes unpriced. Reports older than the
    step's shape in them had the doctor's GPU_CHECK_SHAPE."""
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
    return Timing(f"{r['gpu']['name']}, {check['dtype']} ({path.name})", check["step_seconds"], 0.0, batch, tokens,
                  backbone=REFERENCE)


# ----------------------------------------------------------------------------- a stored run's hours

def measured_seconds(record):
    """What a stored run took, as its record measured it: run_seconds (the whole run), or train_seconds (the
    training loop) in a record older than run_seconds."""
    return record["run_seconds"] if "run_seconds" in record else record["train_seconds"]


# ----------------------------------------------------------------------------- the plan as a table

def plan_table(profile, families=None, root=None, speed=None, planned=None):
    """One row per (family, model, task, method) of the training runs estimate.units lists: the grid it sweeps,
    seeds, runs, runs stored (in <root>/data/results/<profile>/, as dry_run), the hours the stored runs' records
    measured and the machines they name (stored_hours, measured_on), and the hours the missing runs would take
    (estimated_hours, NaN where a run has no price) at `speed` (a timing.Timing; None: speed_here, timed only
    when a run is missing). `families`: Family values or their names (None: every family of training runs);
    `planned`: {family name: estimate.units}, when the caller has them."""
    p = profiles_module.resolve(profile)
    store = ResultStore(profiles_module.results_dir(p, root))
    rows = []
    for family in _training_families(families):
        units = planned[family.name] if planned else estimate.units(p, family, store)
        for u in units:
            if u.kind == "scoring pass":
                continue
            c = RunConfig.from_dict(u.unit.spec["config"])
            record = store.get(u.unit.key, family.name) if u.stored else None
            seconds = None if record else estimate.seconds(u, speed or speed_here())
            setting = {"lr": c.train.lr, "epochs" if not c.train.max_steps else "steps": c.train.max_steps or c.train.epochs,
                       **c.method_args, **({"train_size": c.train_size} if c.train_size else {})}
            rows.append(dict(family=family.name, model=c.backbone, task=c.task, method=c.method, seed=c.train.seed,
                             setting=setting, stored=record is not None,
                             stored_hours=measured_seconds(record) / 3600 if record else 0.0,
                             machine=record.get("machine", "machine not recorded") if record else None,
                             estimated_hours=float("nan") if seconds is None else seconds / 3600))
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


def print_plan(profile, families=None, file=None, root=None, speed=None, planned=None):
    """The plan table and its totals: what the stored runs took, as measured, and what every missing unit would
    take at `speed` (None: this machine's, speed_here): what `regenerate --dry-run` shows. `planned`: {family
    name: estimate.units}, when the caller has them."""
    p = profiles_module.resolve(profile)
    chosen = [registry.get(f) for f in families] if families is not None else registry.registered()
    planned = planned or {f.name: estimate.units(p, f, ResultStore(profiles_module.results_dir(p, root)))
                          for f in chosen}
    table = plan_table(p, chosen, root, speed, planned)
    if len(table):
        print(table.to_string(index=False, max_colwidth=70), file=file)
    stored = int(table["stored"].sum()) if len(table) else 0
    if stored:
        machines = ", ".join(f"{name} {n} run(s)" for name, n in table.attrs["machines"].most_common())
        print(f"stored: {stored:,} runs, {table['stored_hours'].sum():,.1f} h as their records measured them "
              f"(run_seconds, each run whole; on {machines})", file=file)
    units = [u for f in chosen for u in planned[f.name]]
    if any(not u.stored for u in units):
        timing = speed or speed_here()
        priced = [(u, estimate.seconds(u, timing)) for u in units if not u.stored]
        found = estimate.Estimate(units, sum(s for _, s in priced if s is not None),
                                  [u for u, s in priced if s is None])
        print(estimate_line(found, timing), file=file)
    return table


def estimate_line(found, timing):
    """One line: the missing units by kind, their estimated hours and the measurement they rest on."""
    unpriced = estimate.Estimate(found.unpriced, 0.0).by_kind()
    scoring = (f"; each scored example {timing.span_seconds * 1000:,.2f} ms, measured" if timing.span_seconds
               else "")
    return (f"missing: {len(found.missing):,} units ({found.by_kind(missing=True)}), about {found.seconds / 3600:,.1f} h "
            f"on {timing.device} (a training step of {timing.backbone}, {timing.batch_size} x {timing.max_length} "
            f"tokens, measured at {timing.step_seconds * 1000:,.1f} ms{scoring}; scaled to each unit's steps, batch "
            "and evaluations, and by forward FLOPs to its backbone and tokens; one unit at a time, each batch at the "
            "length its texts pad to; estimate.py)"
            + (f"; not priced: {unpriced} (a backbone of unknown shape, a scoring pass no speed timed, or "
               "steps of a family's own)" if unpriced else ""))
