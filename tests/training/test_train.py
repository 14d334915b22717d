"""The training loop and the `train` command, on the tiny backbones and synthetic tasks (seconds each)."""
import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from adapterlab.experiments import rules, running, stats
from adapterlab.training import train as T
from adapterlab.training.backbones import load_backbone
from adapterlab.methods.inject import adapt
from adapterlab.training.tasks import load_task

QUICK = dict(backbone="tiny", task="synthetic", method="full")


def quick_run(**kw):
    train = T.TrainConfig(**{"max_steps": 12, "batch_size": 16, "lr": 3e-3, **kw.pop("train", {})})
    return running.run_one(T.RunConfig(**{**QUICK, **kw, "train": train}), device="cpu")


def test_the_loop_learns_the_synthetic_task():
    record = quick_run(train={"max_steps": 150, "eval_every": 50})
    assert record["majority"] < 0.35  # three balanced-ish classes
    assert record["test"] > 0.8 and record["validation"] > 0.8
    assert [p["step"] for p in record["curve"]] == [50, 100, 150]
    assert record["curve"][-1]["train_loss"] < record["curve"][0]["train_loss"]


def test_same_seed_same_numbers_other_seed_other_numbers():
    timing = ("train_seconds", "examples_per_second", "peak_memory_mb", "latency_s", "run_seconds")  # measured
    strip = lambda r: {k: v for k, v in r.items() if k not in timing}
    a, b = quick_run(method="houlsby", method_args={"bottleneck": 8}), quick_run(method="houlsby", method_args={"bottleneck": 8})
    assert strip(a) == strip(b)
    c = quick_run(method="houlsby", method_args={"bottleneck": 8}, train={"seed": 1})
    assert c["curve"] != a["curve"]


def test_frozen_weights_are_unchanged_by_training_and_the_adapters_move():
    task = load_task("synthetic")
    torch.manual_seed(0)
    model, tokenizer = load_backbone("tiny", num_labels=task.num_labels)
    adapt(model, "houlsby", bottleneck=8, init_std=1e-2)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    T.train(model, tokenizer, task, T.TrainConfig(max_steps=10, batch_size=16), device="cpu", progress=False)
    for name, p in model.named_parameters():
        if p.requires_grad:
            assert not torch.equal(p, before[name]) or name.endswith("bias"), name
        else:
            assert torch.equal(p, before[name]), f"frozen {name} changed"


def test_record_has_what_the_figures_and_the_cli_need():
    record = quick_run(method="compacter", method_args={"bottleneck": 8, "n": 4})
    for key in ("method", "task", "backbone", "trainable", "percent", "metric", "validation", "test",
                "train_seconds", "examples_per_second", "peak_memory_mb", "curve", "config", "majority"):
        assert key in record
    assert 0 <= record["test"] <= 1 and record["peak_memory_mb"] > 0 and record["examples_per_second"] > 0
    assert set(record["latency_s"]) == {"1", "32"} and min(record["latency_s"].values()) > 0  # no LoRA: no merged
    assert record["config"]["method_args"] == {"bottleneck": 8, "n": 4}
    json.dumps(record)  # storable as it is


def test_text_to_text_t5_trains_and_scores_by_best_label_string():
    record = T.run(T.RunConfig(backbone="tiny-t5", task="synthetic-pair", method="compacter",
                               method_args={"bottleneck": 8}, train_size=64,
                               train=T.TrainConfig(max_steps=4, batch_size=16)), device="cpu", progress=False)
    assert record["metric"] == "accuracy" and 0 <= record["test"] <= 1
    assert record["by_group"]["shared"] == 4 ** 3


def test_input_limit_is_the_smaller_of_the_position_table_and_the_tokenizers_limit(tiny):
    from transformers.tokenization_utils_base import VERY_LARGE_INTEGER

    from adapterlab.training.backbones import default_tokenizer

    tokenizer = default_tokenizer()  # model_max_length 512
    assert T.input_limit(tiny("bert-cls"), tokenizer) == 64  # max_position_embeddings 64
    assert T.input_limit(tiny("roberta-cls"), tokenizer) == 62  # RoBERTa's positions start after padding_idx 1
    assert T.input_limit(tiny("t5"), tokenizer) == 512  # relative positions: the tokenizer's limit
    assert T.input_limit(load_backbone("tiny", num_labels=2)[0], tokenizer) == 512  # BERT's default table
    tokenizer.model_max_length = VERY_LARGE_INTEGER  # what transformers reports when a tokenizer sets none
    assert T.input_limit(tiny("t5"), tokenizer) is None and T.input_limit(tiny("bert-cls"), tokenizer) == 64


def test_bf16_autocast_on_cpu_runs():
    record = quick_run(method="houlsby", method_args={"bottleneck": 8}, train={"precision": "bf16", "max_steps": 4})
    assert 0 <= record["test"] <= 1


@pytest.mark.slow
def test_train_command_with_bf16_on_cpu_trains_the_same_function_in_bf16():
    """`--precision bf16` end to end on the CPU: the run records bf16, and its loss differs from the
    fp32 run's (autocast really ran) by no more than bf16 rounding explains."""
    args = ("train", "--backbone", "tiny", "--task", "synthetic", "--method", "houlsby", "--bottleneck", "8",
            "--max-steps", "4", "--batch-size", "16", "--device", "cpu", "--json")
    runs = {}
    for precision in ("fp32", "bf16"):
        p = cli(*args, "--precision", precision)
        assert p.returncode == 0, p.stderr
        runs[precision] = json.loads(p.stdout.strip().splitlines()[-1])
    assert runs["bf16"]["config"]["train"]["precision"] == "bf16"
    fp32, bf16 = (runs[p]["curve"][-1]["train_loss"] for p in ("fp32", "bf16"))
    assert fp32 != bf16  # bf16 matmuls round differently: identical losses would mean no autocast
    # bf16 keeps 8 significant bits: each matmul output is off by up to 2^-9 ~ 2e-3 of its size. The
    # tiny random model's logits are O(0.1) (loss ~ ln 3 = 1.1), so a few such roundings per layer over
    # 3 layers move the loss by ~1e-3 at most; 1e-2 leaves room and still catches a different function.
    assert abs(fp32 - bf16) < 1e-2, (fp32, bf16)


def test_fp16_on_cpu_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="fp16 autocast needs a GPU; on CPU use --precision bf16"):
        quick_run(train={"precision": "fp16", "max_steps": 2})


def test_device_selection_falls_back_to_cpu_without_a_gpu():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available() and torch.backends.mps.is_available():
        expected = "mps"
    assert T.pick_device().type == expected
    assert T.pick_device("cpu").type == "cpu"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "adapterlab", *args], capture_output=True, text=True,
                          timeout=300, env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})


def test_train_command_prints_one_json_object_last():
    p = cli("train", "--backbone", "tiny", "--task", "synthetic", "--method", "compacter++", "--bottleneck", "8",
            "--max-steps", "3", "--batch-size", "16", "--json")
    assert p.returncode == 0, p.stderr
    record = json.loads(p.stdout.strip().splitlines()[-1])
    for key in ("method", "task", "backbone", "trainable", "percent", "metric", "validation", "test",
                "train_seconds", "examples_per_second", "peak_memory_mb"):
        assert key in record
    assert record["method"] == "compacter++"


@pytest.mark.parametrize("args,message", [
    (["--method", "houlsbi"], "unknown method 'houlsbi'"),
    (["--task", "imdb"], "unknown task 'imdb'"),
    (["--method", "compacter", "--n", "3"], "not divisible by n=3"),
    (["--backbone", "bert-base-uncased"], "default"),
    (["--train-size", "999999"], "choose a train size between 1 and 2000"),
])
def test_bad_arguments_print_one_clear_line_and_exit_2(args, message):
    base = ["train", "--backbone", "tiny", "--task", "synthetic", "--max-steps", "1"]
    p = cli(*base, *args)
    assert p.returncode == 2
    lines = [line for line in p.stderr.strip().splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and message in lines[0], p.stderr
    assert "Traceback" not in p.stderr


# ----------------------------------------------------------------------------- convergence rule

N = 1000  # validation examples of the hand-made checkpoints


def checkpoint(flip_up=0, flip_down=0):
    """Correct bits of a checkpoint that, against a base at 80%, gets `flip_up` more examples right and
    `flip_down` of the base's right ones wrong: the two disagree on flip_up + flip_down examples."""
    bits = [1] * 800 + [0] * 200
    for i in range(flip_down):
        bits[i] = 0
    for i in range(800, 800 + flip_up):
        bits[i] = 1
    return bits


def curve_with_bits(*points, n=N):
    return [{"step": s, "train_loss": loss, "validation": sum(c) / n, "correct": T.correct_bits(c), "examples": n}
            for s, loss, c in points]


def last_third(bits, loss=0.4):  # two early checkpoints at the base, then the last third's best
    return curve_with_bits((60, 0.6, checkpoint()), (120, 0.5, checkpoint()), (180, loss, bits))


def test_a_flat_noisy_curve_with_a_small_se_has_converged():
    # 20 examples gained, 20 lost: gain 0, SE sqrt(40/1000/999) = 0.63 points; bound 0 + 1.645 x 0.63 = 1.04 < 1.5
    verdict = rules.convergence(last_third(checkpoint(20, 20)), 0.91)
    assert verdict["plateau_gain"] == 0 and verdict["plateau_se"] == pytest.approx(math.sqrt(40 / N / (N - 1)))
    assert verdict["converged"] and verdict["rule_version"] == rules.CONVERGENCE_RULE_VERSION == 3


def test_a_gain_of_1_2_points_with_se_0_6_is_still_rising():
    # 24 gained, 12 lost: +1.2 points, SE sqrt((36/1000 - 0.012^2)/999) = 0.60; bound 1.2 + 0.99 = 2.2 >= 1.5.
    # Rule 3 asks the interval to show that the gain is small, not that it is too small to detect.
    verdict = rules.convergence(last_third(checkpoint(24, 12)), 0.91)
    assert verdict["plateau_gain"] == pytest.approx(0.012) and verdict["plateau_se"] == pytest.approx(0.00599, abs=1e-5)
    assert not verdict["converged"]
    assert not rules.converged(0.011, 0.006, 0.4, 0.91)  # +1.1 < 2 SE = 1.2: rule 2 called this a plateau


def test_a_gain_that_cannot_be_measured_never_counts_as_converged():
    no_bits = [{"step": s, "train_loss": 0.4, "validation": 0.82} for s in (60, 120, 180)]  # flat, but no record
    assert rules.convergence(no_bits, 0.91) == {"converged": False, "final_train_loss": 0.4, "plateau_gain": 0.0,
                                            "plateau_se": None, "rule_version": 3}
    one = rules.convergence(curve_with_bits((180, 0.1, checkpoint())), 0.91)  # one evaluation shows no plateau
    assert not one["converged"] and one["plateau_gain"] is None
    assert rules.convergence([], 0.91)["final_train_loss"] is None
    assert not rules.converged(float("nan"), float("nan"), 0.4, 0.91)  # a table row without the record


def test_converged_also_needs_a_loss_under_the_class_entropy():
    flat_at_the_class_mix = last_third(checkpoint(), loss=0.92)  # gain 0, SE 0: flat, but learned nothing
    assert not rules.convergence(flat_at_the_class_mix, 0.91)["converged"]
    assert rules.convergence(flat_at_the_class_mix, None)["converged"]  # no entropy (regression): the plateau decides
    assert rules.convergence(last_third(checkpoint(), loss=0.72), 0.91)["converged"]  # 0.72 < 0.8 x 0.91 = 0.728


def test_stored_verdicts_keep_the_rule_they_were_made_under():
    assert rules.stored_rule_version({"rule_version": 3}) == 3
    assert rules.stored_rule_version({}) is None  # not recorded: unknown, not guessed


def test_each_validation_records_which_examples_it_got_right():
    record = quick_run(train={"max_steps": 40, "eval_every": 20})
    for point in record["curve"]:
        right = np.unpackbits(np.frombuffer(bytes.fromhex(point["correct"]), dtype=np.uint8))[:point["examples"]]
        assert right.sum() / point["examples"] == point["validation"]  # the same count: exact
    first, last = record["curve"]
    d, se = stats.paired_difference(first["correct"], last["correct"], first["examples"])
    assert d == pytest.approx(last["validation"] - first["validation"])
    assert record["plateau_se"] == se  # the verdict's noise is that of the two checkpoints it compares


def test_a_run_records_its_verdict_its_rule_version_and_the_class_entropy():
    record = quick_run(train={"max_steps": 60, "eval_every": 20})
    assert record["rule_version"] == rules.CONVERGENCE_RULE_VERSION
    assert record["class_entropy"] == pytest.approx(T.class_entropy(load_task("synthetic").splits["train"]["label"]))
    assert 0.9 < record["class_entropy"] < 1.1  # three classes, nearly balanced: close to ln 3
    verdict = rules.convergence(record["curve"], record["class_entropy"])
    assert {k: record[k] for k in verdict} == verdict and record["final_train_loss"] == record["curve"][-1]["train_loss"]
    assert T.class_entropy([0, 0, 0, 0]) == 0.0 and T.class_entropy([0, 1]) == pytest.approx(np.log(2))
