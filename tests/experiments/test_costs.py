"""What a plan costs (experiments/costs.py, priced by experiments/estimate.py): a stored run's hours are the ones its
record measured, on the machine it names; a missing run's are a measured training step (this machine's, or the
committed H200 check's) scaled to the run's steps, batch, evaluations, backbone and tokens.
"""
import io
import json
import math
from dataclasses import replace

import numpy as np
import pytest

from adapterlab.experiments import costs, estimate, planning, profiles
from adapterlab.experiments.results import ResultStore
from adapterlab.experiments.timing import Timing
from adapterlab.training import tasks as task_registry
from adapterlab.training.backbones import default_tokenizer
from adapterlab.training.train import RunConfig, TrainConfig

TIMING = Timing("test machine", step_seconds=0.1, load_seconds=2.0, batch_size=32, max_length=64)


def config(**changes):
    train = TrainConfig(**{"max_steps": 100, "eval_every": 50, "batch_size": 32, **changes.pop("train", {})})
    return RunConfig(**{"backbone": "default", "task": "synthetic", "method": "houlsby", "max_length": 64,
                        "train": train, **changes})


def test_the_gpu_speed_is_the_committed_reports_bf16_step():
    report = json.loads(costs.GPU_REPORT.read_text())
    bf16 = next(c for c in report["gpu_checks"] if c["dtype"] == "bf16")
    speed = costs.gpu_speed()
    assert speed.step_seconds == bf16["step_seconds"] and round(speed.step_seconds * 1000, 1) == 16.4
    assert (speed.batch_size, speed.max_length) == (32, 128) and speed.load_seconds == 0.0  # the report's shape
    assert speed.device == "NVIDIA H200, bf16 (doctor.json)"


def test_a_gpu_report_without_a_passed_check_is_refused(tmp_path):
    path = tmp_path / "doctor.json"
    path.write_text(json.dumps({"gpu": {"name": "X"}, "gpu_checks": [{"dtype": "bf16", "passed": False}]}))
    with pytest.raises(ValueError, match="holds no passed GPU check of the 'default' backbone"):
        costs.gpu_speed(path)
    with pytest.raises(FileNotFoundError, match="no GPU report at"):
        costs.gpu_speed(tmp_path / "gone.json")


def test_an_estimate_is_the_timed_step_scaled_to_the_run():
    sizes = estimate.split_sizes("synthetic")
    cap = 100
    examples = 2 * min(sizes["validation"], cap) + min(sizes["test"], cap)  # 100 steps, validated every 50, tested once
    # timed at the length the run's batches pad to: the load, 100 steps of 0.1 s, each evaluated example half an
    # example's share of a step
    tokens = estimate.batch_tokens("synthetic", 64, 32)
    timing = replace(TIMING, max_length=tokens)
    expected = 2.0 + 100 * 0.1 + examples * 0.1 / 32 / 2
    assert estimate.scale(config(), timing) == 1.0
    assert estimate.run_seconds(config(), timing, cap) == pytest.approx(expected, rel=1e-12)  # float order only
    # twice the batch doubles the steps' share; full fine-tuning's backward is 1.5 times an adapter step's
    assert estimate.run_seconds(config(train={"batch_size": 64}), timing, cap) == pytest.approx(
        2.0 + (expected - 2.0 + 10.0) * estimate.scale(config(train={"batch_size": 64}), timing))
    assert estimate.run_seconds(config(method="full"), timing, cap) == pytest.approx(expected + 5.0)
    # a step timed at 64 tokens costs more than one of these short texts: the ratio of forward FLOPs
    ratio = estimate.forward_flops(estimate.SHAPES["default"], tokens) / estimate.forward_flops(estimate.SHAPES["default"], 64)
    assert tokens < 64 and estimate.scale(config(), TIMING) == ratio
    assert estimate.run_seconds(config(), TIMING, cap) == pytest.approx(2.0 + (expected - 2.0) * ratio)
    # a longer max_length costs nothing where no text reaches it; a shorter one cuts the batches
    assert estimate.scale(config(max_length=128), timing) == 1.0
    assert estimate.batch_tokens("synthetic", 8, 32) == 8
    bert = estimate.forward_flops(estimate.SHAPES["bert-base-uncased"], tokens) / estimate.forward_flops(estimate.SHAPES["default"], tokens)
    assert estimate.scale(config(backbone="bert-base-uncased"), timing) == bert and 7 < bert < 9
    # a backbone of unknown shape: no price, unless the timing measured that very backbone (study init's), which
    # scales by tokens alone
    assert estimate.run_seconds(config(backbone="someone/their-model"), timing, cap) is None
    own = replace(timing, backbone="someone/their-model")
    assert estimate.scale(config(backbone="someone/their-model", max_length=8), own) == 8 / tokens


def test_batch_tokens_is_what_the_runs_batches_pad_to():
    """The estimate's tokens: the train texts cut at max_length in length-bucketed batches, as training pads
    them; GLUE, read without a download, at max_length."""
    lengths = task_registry.token_lengths(task_registry.load_task("airline"), default_tokenizer())
    assert estimate.batch_tokens("airline", 64, 32) == math.ceil(task_registry.padded_length(np.minimum(lengths, 64), 32))
    assert np.mean(np.minimum(lengths, 64)) <= estimate.batch_tokens("airline", 64, 32) < 64
    assert estimate.batch_tokens("glue/mnli", 128, 32) == 128


def test_the_dry_run_reports_stored_hours_as_measured_and_estimates_the_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(costs, "speed_here", lambda: TIMING)
    p = profiles.get("default")
    plan = planning.plan(p, "init_scale")  # no grid: every run and budget control of 05 is planned at once
    profiles.results_dir(p, tmp_path).mkdir(parents=True)
    store = ResultStore(profiles.results_dir(p, tmp_path))
    store.put(planning.run_key(plan[0], p, "init_scale"), {"run_seconds": 7200.0, "train_seconds": 7000.0,
                                                          "machine": "Test CPU (AVX2)"}, "init_scale")
    out = io.StringIO()
    costs.dry_run(p, families=("init_scale",), verbose=False, file=out, root=tmp_path)
    text = out.getvalue()
    assert "stored: 1 runs, 2.0 h as their records measured them (run_seconds, each run whole; on Test CPU (AVX2) " \
           "1 run(s))" in text
    controls = len(planning.budget_controls(p, "init_scale"))
    cap = planning.eval_size(p, "init_scale")
    hours = sum(estimate.run_seconds(c, TIMING, cap) for c in plan[1:]) / 3600
    assert f"missing: {len(plan) - 1:,} units ({len(plan) - 1 - controls} fixed-rate runs, {controls} budget controls)" \
           f", about {hours:,.1f} h on test machine (a training step of default, 32 x 64 tokens, measured at 100.0 ms;" \
           in text
    table = costs.plan_table(p, ("init_scale",), tmp_path, TIMING)
    assert table["stored_hours"].sum() == 2.0 and table["measured_on"].tolist() == ["Test CPU (AVX2)"]
    assert hours > 0.1 and math.isclose(table["estimated_hours"].sum(), hours, abs_tol=0.005 * len(table))  # 0.01 h
    assert "gpu_hours" not in table


def test_the_dry_run_finds_each_unit_in_its_own_store_file(monkeypatch):
    """04's span scores live in their own file beside its runs': the committed default store holds all of 04's
    units (a run and its control at each of three seeds, seven scoring passes), so none is missing and nothing
    is timed."""
    if not profiles.results_dir("default").joinpath("layer_removal.jsonl").is_file():
        pytest.skip("no committed default results")
    monkeypatch.setattr(costs, "speed_here", lambda: pytest.fail("nothing is missing, so nothing is estimated"))
    out = io.StringIO()
    assert costs.dry_run("default", families=("layer_removal",), file=out)["layer_removal"] == 13
    text = out.getvalue()
    assert "layer_removal: 13 units, 13 stored in " in text and ", 0 missing" in text
    assert text.count("  stored  scoring pass: spans of ") == 7  # the scoring passes, stored without run_seconds


def test_asked_for_a_gpu_the_dry_run_estimates_on_the_committed_h200(tmp_path, monkeypatch):
    monkeypatch.setattr(costs, "speed_here", lambda: pytest.fail("a GPU estimate timed this machine"))
    out = io.StringIO()
    costs.dry_run("paper", families=("init_scale",), verbose=False, file=out, root=tmp_path, gpu=True)
    speed, p = costs.gpu_speed(), profiles.get("paper")
    cap = planning.eval_size(p, "init_scale")
    hours = sum(estimate.run_seconds(c, speed, cap) for c in planning.plan(p, "init_scale")) / 3600
    assert f"about {hours:,.1f} h on NVIDIA H200, bf16 (doctor.json) (a training step of default, 32 x 128 tokens, " \
           "measured at 16.4 ms;" in out.getvalue()
    table = costs.plan_table(p, ("init_scale",), tmp_path, speed)
    assert math.isclose(table["estimated_hours"].sum(), hours, abs_tol=0.005 * len(table))  # each rounded to 0.01 h
