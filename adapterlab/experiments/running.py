"""Running a plan: train what the result store lacks, in plan order, and hand back the records.

    records = running.run_plan(profile, "init_scale")      # trains only the missing runs
    record = running.run_one(config, eval_size=500)         # one run: train.run + how it was timed

run_plan makes the learning-rate choices the way planning.py asks: plan stage 1, train it, choose
on its records (planning.choose_lrs), plan again with the choices, train what is new. The sweep
(sweep.py) does the same in parallel; the notebooks call this through tables.py.
"""
import os
import platform
import time
from pathlib import Path

import torch
from tqdm.auto import tqdm

from . import planning, rules
from . import profiles as profiles_module
from ..training import train as T
from .results import WORKERS_ENV, ResultStore, config_key


def store_of(profile):
    """The result store of a profile: data/results/<profile>/."""
    return ResultStore(profiles_module.results_dir(profiles_module.resolve(profile)))


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


def run_one(config, eval_size=None, device="auto", progress=False, save_to=None, glue_dir=None):
    """train.run's record for one config (evaluation sets capped at eval_size, the adapter saved to
    save_to), its convergence verdict (rules.convergence) and how it was timed: run_seconds (the whole
    run: loading, training, evaluations, test, what a from-scratch regeneration pays for it), threads (torch's CPU threads), workers (runs side by
    side, each paying its own seconds: run_seconds / workers is its share of the wall time) and machine."""
    start = time.perf_counter()
    record = T.run(config, device=device, progress=progress, glue_dir=glue_dir, eval_size=eval_size,
                   save_to=save_to)
    return {**record, **rules.convergence(record["curve"], record["class_entropy"]),
            "run_seconds": time.perf_counter() - start, "threads": torch.get_num_threads(),
            "workers": int(os.environ.get(WORKERS_ENV, 1)), "machine": machine()}


def run_all(profile, family, configs, fresh=False, progress=True):
    """Records for configs through the store (in order); trains only what is missing (or all if
    fresh). A run whose adapter the family keeps (planning.keeps_adapter) saves it in
    store.checkpoint_dir(key)."""
    p = profiles_module.resolve(profile)
    store, cap = store_of(p), planning.eval_size(p, family)
    records = []
    bar = tqdm(configs, desc=f"{p.name}/{family}", disable=not progress, unit="run")
    for config in bar:
        key = planning.run_key(config, p, family)
        bar.set_postfix_str(f"{config.task} {config.method}", refresh=False)
        save_to = store.checkpoint_dir(key) if planning.keeps_adapter(p, family, config) else None
        record = store.get_or_run(
            key, lambda: run_one(config, cap, progress=progress, save_to=save_to), family=family, fresh=fresh)
        records.append(record)
    bar.close()
    return records


def run_plan(profile, family, fresh=False, progress=True):
    """Records of a family's plan, in plan order: stage 1 (grids and fixed-rate runs), the learning
    rates chosen on its records, then the runs those choices add. The plan's budget controls train too
    but are not among the records returned (their table: tables.budget_control)."""
    p = profiles_module.resolve(profile)
    key = lambda c: config_key(planning.run_key(c, p, family))  # noqa: E731
    stage1 = planning.plan(p, family)
    done = {key(c): r for c, r in zip(stage1, run_all(p, family, stage1, fresh, progress))}
    chosen = planning.choose_lrs(list(done.values()))
    configs = planning.plan(p, family, chosen)
    todo = [c for c in configs if key(c) not in done]
    done.update({key(c): r for c, r in zip(todo, run_all(p, family, todo, fresh, progress))})
    controls = {key(control) for _, control in planning.budget_controls(p, family, chosen)}
    return [done[key(c)] for c in configs if key(c) not in controls]
