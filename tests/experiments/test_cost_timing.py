"""06's timing runs (families/param_performance.py: timing_units; experiments/timing_runs.py; training/
step_timing.py): the units its cost claims read, their order, their keys, the worker that times them in a process
of its own, and the default profile's plan, which stays as the committed records hold it until it asks for timing
runs."""
import io
import math
import os
from dataclasses import replace

import pytest

from adapterlab.experiments import costs, planning, profiles, running, timing_runs
from adapterlab.experiments.results import ResultStore
from adapterlab.families import param_performance as pp
from adapterlab.methods.config import method
from adapterlab.report import provenance
from adapterlab.report.labels import method_label
from adapterlab.training import step_timing
from adapterlab.training.train import RunConfig

DEFAULT = profiles.get("default")
EIGHT = replace(DEFAULT, param_performance=replace(DEFAULT.param_performance, timing_runs=8))
SMOKE = profiles.get("smoke")
# the cost claims' arms and full fine-tuning on the tiny model, two timing runs each
TIMED_SMOKE = replace(SMOKE, param_performance=dict(
    methods=[("full", {}), ("intrinsic-said", {}), ("prompt-tuning", dict(prompt_init="random"))], seeds=(0,),
    timing_runs=2, timing_steps=8))
ARMS = ["full", "intrinsic-said d'=1400", "prompt-tuning-R n=100"]


def label(unit):
    c = RunConfig.from_dict(unit.spec["config"])
    return method_label(method(c.method, **c.method_args))


def test_the_default_profile_plans_eight_timing_runs_an_arm_and_every_stored_key_stays():
    store = ResultStore(profiles.results_dir(DEFAULT))  # the committed records, read only
    first = planning.plan(DEFAULT, pp.NAME)[0]
    assert store.get(planning.run_key(first, DEFAULT, pp.NAME), pp.NAME) is not None
    units = planning.work(DEFAULT, pp.NAME, store)
    assert DEFAULT.param_performance.timing_runs == 8
    assert all(store.get(u.key, u.family) is not None for u in units)  # the whole plan is stored, timing runs too
    none = replace(DEFAULT, param_performance=replace(DEFAULT.param_performance, timing_runs=0))
    without = planning.work(none, pp.NAME, store)
    assert [u.id for u in units[:len(without)]] == [u.id for u in without]  # timing runs add, change nothing
    assert [u.family for u in units[len(without):]] == [pp.TIMING] * 24


def test_eight_timing_runs_of_each_arm_interleave_the_arms():
    units = pp.timing_units(EIGHT)
    assert [label(u) for u in units] == ARMS * 8  # full, SAID, PT-R, full, ...: drift falls on every arm alike
    assert [u.spec["config"]["train"]["seed"] for u in units] == [r for r in range(8) for _ in ARMS]
    assert len({u.id for u in units}) == 24 and {u.family for u in units} == {pp.TIMING}
    assert {(u.spec["steps"], u.spec["warmup"]) for u in units} == {(30, timing_runs.WARMUP)}
    claimed = {pp.arm_name(arm) for claim in pp.CLAIMS if claim.column for arm in claim.arms}
    assert claimed == {"full", "intrinsic-said", "prompt-tuning-R n=100"}  # the arms named; ARMS as labelled
    planned = {label(u): u for u in units}
    for c in planning.plan(DEFAULT, pp.NAME):  # each times its entry as the plan trains it, steps and seed aside
        unit = planned.get(method_label(method(c.method, **c.method_args)))
        if unit is not None:
            timed = RunConfig.from_dict(unit.spec["config"])
            assert (timed.backbone, timed.task, timed.train_size, timed.max_length, timed.method_args,
                    timed.train.batch_size) == (c.backbone, c.task, c.train_size, c.max_length, c.method_args,
                                                c.train.batch_size)
            assert timed.train.max_steps == 30 and timed.train.eval_every is None


def fake_timing(calls):
    def in_fresh_process(config, steps, warmup, threads=None, device="auto", glue_dir=None):
        calls.append(method_label(method(config.method, **config.method_args)))
        seconds = [1.0] * warmup + [0.5] * (steps - warmup)
        return {"step_seconds": seconds, "warmup_steps": warmup, "seconds_per_step": 0.5, "steps_per_epoch": 13,
                "seconds_per_epoch": 6.5, "peak_memory_mb": 900.0, "memory": "process RSS", "device": "cpu"}
    return in_fresh_process


def fake_training(config, eval_size=None, save_to=None, **kw):
    return {"config": config.to_dict(), "task": config.task, "validation": 0.5, "run_seconds": 1.0}


def test_timing_runs_run_in_order_once_and_resume(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(running, "run_one", fake_training)
    monkeypatch.setattr(step_timing, "in_fresh_process", fake_timing(calls))
    running.run_plan(TIMED_SMOKE, pp.NAME, progress=False, root=tmp_path)
    assert calls == ARMS * 2
    running.run_plan(TIMED_SMOKE, pp.NAME, progress=False, root=tmp_path)
    assert calls == ARMS * 2  # stored: never timed again
    table = pp.timing_table(TIMED_SMOKE, tmp_path)
    assert list(table["label"]) == ARMS * 2 and list(table["repeat"]) == [0, 0, 0, 1, 1, 1]
    assert set(table["steps_timed"]) == {8 - timing_runs.WARMUP} and set(table["seconds_per_epoch"]) == {6.5}
    assert set(table["machine"]) == {running.machine()} and set(table["workers"]) == {1}
    # the dry run finds them in their own store file; provenance counts each one's whole seconds
    out = io.StringIO()
    costs.dry_run(TIMED_SMOKE, [pp.NAME], verbose=False, file=out, root=tmp_path)
    assert out.getvalue().startswith(f"{pp.NAME}: 9 units, 9 stored")  # 3 training runs and 6 timing runs
    runs, added, planned = provenance.stored_work(TIMED_SMOKE, pp.NAME, tmp_path)
    assert len(runs) == 3 and len(added) == 6 and planned == 9
    assert provenance.scoring_seconds(added) == sum(r["run_seconds"] for r in added) > 0


def test_a_timing_run_times_its_steps_in_a_process_of_its_own(tmp_path):
    config = next(c for c in planning.plan(SMOKE, pp.NAME) if c.method == "full")
    config = replace(config, train=replace(config.train, max_steps=4, eval_every=None))
    unit = timing_runs.unit(SMOKE, pp.NAME, config, repeat=1)
    unit = replace(unit, spec={**unit.spec, "warmup": 1})  # the tiny model's 4 steps: one untimed
    record = running.execute(running.pack(unit, ResultStore(tmp_path)))["record"]
    assert record["pid"] != os.getpid()  # a fresh process: its RSS carries none of this one's
    assert len(record["step_seconds"]) == 4 and record["warmup_steps"] == 1
    assert record["seconds_per_step"] == pytest.approx(sum(record["step_seconds"][1:]) / 3, rel=1e-12)
    assert record["steps_per_epoch"] == math.ceil(SMOKE.train_size / config.train.batch_size)
    assert record["seconds_per_epoch"] == pytest.approx(record["seconds_per_step"] * record["steps_per_epoch"])
    # a process that imported torch holds well over 100 MB resident; the CPU measures RSS
    assert record["memory"] == "process RSS" and record["peak_memory_mb"] > 100
    assert record["machine"] == running.machine() and record["run_seconds"] > sum(record["step_seconds"])
    assert record["config"]["train"]["seed"] == 1


def test_a_timing_run_needs_more_steps_than_its_warm_up():
    config = planning.plan(SMOKE, pp.NAME)[0]
    with pytest.raises(ValueError, match="more steps .* than warm-up steps"):
        step_timing.time_steps(config, steps=3, warmup=3)
    short = replace(TIMED_SMOKE, param_performance=replace(TIMED_SMOKE.param_performance, timing_steps=5))
    with pytest.raises(ValueError, match="timing_steps 5 .* raise timing_steps"):
        pp.timing_units(short)
