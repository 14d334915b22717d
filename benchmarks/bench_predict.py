"""Serving vs the training loop's evaluation: is `predict` as fast as train.evaluate on the same model?

The airline task's 1,443 test tweets, the default MiniLM with an (untrained) Houlsby adapter, in one
process, batch 32, fp32 on the CPU. Two sides:
    A  evaluate   train.evaluate over tasks.batches of the pre-encoded split (the suite's own loop; the
                  tokenising is done once beforehand and not timed, as in train.train)
    B  predict    serving.predict from the raw texts: tokenise, length-bucket, pad, softmax, restore
                  order (the tokenising is timed: a served file arrives as text)
Same function first: B's predicted classes must equal the argmax of A's logits on every tweet, and its
probabilities the softmax of those logits (to 1e-5). Then the sides alternate (timing.alternate) and the
report gives the median over rounds of examples/s(B) / examples/s(A); target >= 0.9. One JSON line.

    python benchmarks/bench_predict.py [--rounds 3] [--quick]
"""
import argparse
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import torch  # noqa: E402

import common  # noqa: E402
import timing  # noqa: E402

TARGET = 0.9
BATCH = 32


def setup(limit=None):
    import adapterlab as al
    from adapterlab.training import serving, tasks
    from adapterlab.training.backbones import load_backbone

    task = tasks.load_task("airline")
    torch.manual_seed(0)
    model, tokenizer = load_backbone("default", num_labels=task.num_labels)
    al.adapt(model, "houlsby", bottleneck=64)
    model.eval()
    test = task.splits["test"] if limit is None else task.splits["test"].select(range(limit))
    encoded = tasks.encode(dataclasses.replace(task, splits={"test": test}), tokenizer, max_length=128)["test"]
    batches = tasks.batches(encoded, tokenizer, BATCH, shuffle=False)
    info = serving.describe(task, "default", max_length=128)
    return task, model, tokenizer, batches, info, test.to_pandas().drop(columns="label")  # a served file: texts


def same_function(task, model, tokenizer, batches, info, rows):
    from adapterlab.training import serving, train

    logits = torch.from_numpy(train.predict(model, batches, torch.device("cpu")))
    probabilities = serving.scores(model, tokenizer, info, rows, batch_size=BATCH, progress=False)
    table = serving.predict(model, tokenizer, info, rows, batch_size=BATCH, progress=False)
    same_labels = [task.label_names[i] for i in logits.argmax(1).tolist()] == table["label"].tolist()
    diff = (torch.softmax(logits, -1) - torch.from_numpy(probabilities)).abs().max().item()
    return {"same_labels": same_labels, "max_probability_diff": diff, "passed": same_labels and diff <= 1e-5}


def run(rounds=3, warmup=1, limit=None):
    from adapterlab.training import serving, train

    threads = timing.set_threads()
    task, model, tokenizer, batches, info, rows = setup(limit)
    check = same_function(task, model, tokenizer, batches, info, rows)
    if not check["passed"]:
        raise SystemExit(f"predict and evaluate compute different functions: {check}")
    cpu = torch.device("cpu")
    sides = {
        "evaluate": lambda: train.evaluate(model, batches, task, cpu),
        "predict": lambda: serving.predict(model, tokenizer, info, rows, batch_size=BATCH, progress=False),
    }
    result = timing.alternate(sides, warmup=warmup, rounds=rounds)
    n = len(rows)
    per_second = {name: n / side["median_s"] for name, side in result["sides"].items()}
    ratio = timing.speed_ratio(result, "predict", "evaluate")  # > 1: predict faster
    return {"section": "predict", "examples": n, "batch": BATCH, "threads": threads, "check": check,
            "examples_per_second": per_second, "predict_vs_evaluate": ratio, "target": TARGET,
            "met": ratio["ratio"] >= TARGET, "timing": result, "machine": common.machine(), "loadavg": timing.loadavg(),
            "versions": common.versions()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="200 tweets, 1 round: checks that it runs, not a timing")
    args = ap.parse_args()
    out = run(rounds=1, warmup=0, limit=200) if args.quick else run(rounds=args.rounds)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
