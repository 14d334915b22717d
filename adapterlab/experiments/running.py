"""Running a plan: make what the result store lacks, in plan order, and hand back the records.

    records = running.run_plan(profile, "05")       # trains only the missing runs
    records = running.plan_records(profile, "05", running.store_of(profile))   # reads, trains nothing
    record = running.run_config(profile, "05", config)   # one run more, keyed like the plan's
    record = running.run_one(config, eval_size=500)          # one run: train.run + how it was timed

A plan is a list of units of work (planning.work, work.Work) for every family alike: notebook 08's
steps as much as 06's training runs and 04's span scores. run_plan runs the ready ones here, one
after the other, through the one worker function (execute) the sweep (sweep.py) runs in parallel, and
stores what comes back the way the sweep does (store_result). The notebooks call run_plan before they
build their tables (report.tables.get reads what it stored); `fresh` becomes the store's `since` here
(store_of, results.fresh_since). Every store lives under <root>/data/results/<profile>/, root as
profiles.project_root(root) gives it; a runner claims a study's folder before it writes there
(claimed_store), a reader opens it as it is (store_of).

A unit carries all its worker needs as plain data (work.Work.spec): a training run's config names its task
and model and, for a study's own, where they lie (train.RunConfig.task_source, backbone_folder), so a worker
process, local or on Ray, has read no study file and needs none.
"""
import platform
import shutil
import tempfile
import time
from pathlib import Path

import torch
from tqdm.auto import tqdm

from . import families, planning, rules, studies, work
from . import profiles as profiles_module
from ..methods.writing import atomic_write
from ..training import train as T
from .results import ResultStore, fresh_since


def store_of(profile, fresh=False, root=None):
    """The result store of a profile, <root>/data/results/<profile>/, in which the records `fresh`
    retrains (results.fresh_since) count as missing. Opening it reads no data and checks nothing: the
    records in it were checked when they were written (claimed_store)."""
    return ResultStore(profiles_module.results_dir(profile, root), since=fresh_since(fresh))


def claimed_store(profile, fresh=False, root=None):
    """store_of for a runner that writes into it: a study's data are read and checked and its folder
    claimed first (studies.claim), so that one holding another study's records, or other data under the
    study's name, is refused before anything trains and is left as it was."""
    p = profiles_module.resolve(profile)
    studies.claim(p, profiles_module.results_dir(p, root))
    return store_of(p, fresh, root)


def machine():
    """The CPU a run was timed on (model name and the kernels torch picked for it): sessions land on
    different machines, so a from-scratch time must say where its seconds were measured."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:  # not Linux: platform's answer stands
        pass
    return f"{name} ({torch.backends.cpu.get_cpu_capability()})"


def run_one(config, eval_size=None, device="auto", progress=False, save_to=None, glue_dir=None, workers=1):
    """train.run's record for one config (evaluation sets capped at eval_size, the adapter saved to
    save_to), its convergence verdict (rules.convergence) and how it was timed: run_seconds (the whole
    run: loading, training, evaluations, test, what a from-scratch regeneration pays for it), threads
    (torch's CPU threads), workers (the runs training side by side with this one, itself included, as
    the caller knows them: each pays its own seconds, so run_seconds / workers is its share of the wall
    time) and machine."""
    start = time.perf_counter()
    record = T.run(config, device=device, progress=progress, glue_dir=glue_dir, eval_size=eval_size,
                   save_to=save_to)
    return {**record, **rules.convergence(record["curve"], record["class_entropy"]),
            "run_seconds": time.perf_counter() - start, "threads": torch.get_num_threads(),
            "workers": workers, "machine": machine()}


# ----------------------------------------------------------------------------- one unit of work

def _train(spec, needs, out):
    """The worker of a training run: run_one on the spec's config, its adapter saved to `out` when the
    family keeps it (planning.keeps_adapter), GLUE read from the spec's glue_dir (None: the hub)."""
    return run_one(T.RunConfig.from_dict(spec["config"]), spec["eval_size"], progress=spec.get("progress", False),
                   save_to=out if spec["save"] else None, glue_dir=spec.get("glue_dir"),
                   workers=spec.get("workers", 1))


def worker(step):
    """The worker of a unit's spec["step"]: worker(spec, folders of its needs' files, folder for its own files).
    A training run's is here; any other kind of unit's is its family's (Family.steps)."""
    if step == "train":
        return _train
    for family in families.registered():
        if step in family.steps:
            return family.steps[step]
    raise ValueError(f"no worker for a unit of kind {step!r}: no registered family lists it in its steps")


def pack(unit, store, **extra):
    """What a worker needs for `unit`, as plain data: its spec, the files of its needs as bytes (so a
    worker on another machine needs no shared disk) and `extra` (workers, progress, glue_dir)."""
    inputs = [{f.name: f.read_bytes() for f in work.folder(store, need).iterdir() if f.is_file()}
              for need in unit.needs]
    return {**unit.spec, "inputs": inputs, **extra}


def execute(spec):
    """The one worker function, in this process, a sweep's worker process or a Ray task: write the needs'
    files to a temporary folder, run spec["step"] (worker) on the spec alone, and return {"record", "files"}:
    the record with how it was timed (workers side by side, threads, machine) and the files the step left,
    as {name: bytes}, for the driver to store."""
    with tempfile.TemporaryDirectory() as tmp:
        needs = []
        for i, files in enumerate(spec.get("inputs", [])):
            needs.append(Path(tmp) / "needs" / str(i))
            needs[-1].mkdir(parents=True)
            for name, data in files.items():
                (needs[-1] / name).write_bytes(data)
        out = Path(tmp) / "out"
        out.mkdir()
        record = worker(spec["step"])(spec, needs, out)
        files = {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()}
    timed = {"workers": spec.get("workers", 1), "threads": torch.get_num_threads(), "machine": machine()}
    return {"record": {**record, **timed}, "files": files}


def store_result(store, unit, result):
    """The driver's one write per unit: its files (the marker last, so a folder holding the marker is
    complete), then its record."""
    if result["files"]:
        folder = work.folder(store, unit)
        for name, data in sorted(result["files"].items(), key=lambda item: item[0] == unit.marker):
            atomic_write(folder / name, data)
    store.put(unit.key, result["record"], unit.family)


def run_unit(store, unit, progress=False, glue_dir=None):
    """Run one unit here, as a sweep's worker would, and store it: its record."""
    store_result(store, unit, execute(pack(unit, store, progress=progress, glue_dir=glue_dir)))
    return store.get(unit.key, unit.family)


def drop_unneeded(store, units):
    """Delete the files of units that keep none once no missing unit reads them (work.disposable)."""
    for folder in work.disposable(units, store):
        shutil.rmtree(folder)


# ----------------------------------------------------------------------------- a plan, in this process

def run_plan(profile, family, fresh=False, progress=True, root=None, glue_dir=None):
    """Records of a family's plan, in plan order, made where the store under `root` lacks them: run the
    ready units (work.ready), store them, and ask the planner again, until nothing is ready. Asking
    again is how the learning rates chosen on stored grids add their runs, how layer removal adds its
    span scores and how a chain of steps grows. The plan's budget controls and span scores run too but
    are not among the records returned (the tables read them). `fresh` becomes one time for the whole
    call, so each unit reruns once. glue_dir: the folder of GLUE's TSV files (None: the hub). The plan that
    finds nothing left to run is the one the records are read from and the unneeded files dropped by:
    nothing was stored after it was made."""
    p, family = profiles_module.resolve(profile), families.get(family)
    store = claimed_store(p, fresh, root)
    for change in studies.record_resolved(p, store.root):  # a changed study file: say what its new runs change
        tqdm.write(f"{p.name}: changed since the last run: {change}")
    done = set()
    bar = tqdm(desc=f"{p.name}/{family.name}", disable=not progress, unit="run", total=0)
    while True:
        units = planning.work(p, family, store)
        todo = [u for u in work.ready(units, store) if u.id not in done]
        if not todo:
            break
        bar.total += len(todo)
        for unit in todo:
            bar.set_postfix_str(unit.label, refresh=False)
            run_unit(store, unit, progress, glue_dir)
            done.add(unit.id)
            bar.update()
    bar.close()
    records = unit_records(p, family, store, units)  # before any file goes: a later step's key may hash an earlier's
    drop_unneeded(store, units)
    return records


def plan_records(profile, family, store):
    """The family's own records of its plan in `store`, in plan order, read without running anything
    (budget controls left out: tables.budget_control reads them; so are the records of any other family
    the plan makes). A ValueError names what the store lacks and the runners that make it."""
    p = profiles_module.resolve(profile)
    return unit_records(p, family, store, planning.work(p, family, store))


def unit_records(profile, family, store, units):
    """plan_records of the family's plan already made: its `units` (planning.work on `store`)."""
    p, family = profiles_module.resolve(profile), families.get(family)
    if lacking := [u for u in units if store.get(u.key, u.family) is None]:
        raise ValueError(f"{store.root} lacks {len(lacking)} planned unit(s) of {family.name} (e.g. {lacking[0]}); "
                         f"make them first: running.run_plan({p.name!r}, {family.name!r}) or "
                         f"`python -m adapterlab sweep --profile {p.name} --only {family.name}`")
    return [store.get(u.key, family.name) for u in units if not u.control and u.family == family.name]


# ----------------------------------------------------------------------------- one more run

def run_config(profile, family, config, fresh=False, progress=True, keep_adapter=None, root=None):
    """The record of one training run keyed as the family's plan keys it (planning.training_unit), run
    here as a unit of work and stored when the store under `root` lacks it, or has it without the
    adapter it keeps (work.usable): a notebook's one run more (another std, a chosen method).
    keep_adapter: save the adapter (None: when the family keeps it, planning.keeps_adapter); saved_files
    finds it. `fresh` (results.fresh_since; pass the same time to several calls so that each run
    retrains once)."""
    p = profiles_module.resolve(profile)
    store = claimed_store(p, fresh, root)
    unit = planning.training_unit(p, family, config, keep_adapter=keep_adapter)
    if not work.usable(store, unit):
        run_unit(store, unit, progress)
    return store.get(unit.key, unit.family)


def saved_files(profile, family, config, root=None):
    """The folder of the files a stored run of the family left (its adapter, when it keeps one)."""
    p = profiles_module.resolve(profile)
    return work.folder(store_of(p, root=root), planning.training_unit(p, family, config))
