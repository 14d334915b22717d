"""Section 4: layer-removal heatmap evaluation -- cached prefix vs the naive loop over all spans.

The heatmap removes the adapters of blocks first..last (every contiguous span) and scores each
variant. The naive loop runs the whole network once per span; the cached one
(removal.span_logits(cached=True)) computes the states entering every block once per batch
and shares the blocks below `first` and the disabled run from `first` upward across spans
(6 blocks: 62 block evaluations per batch instead of 132, so at most about 2.1x).

The model: the pretrained MiniLM with Houlsby adapters (m=64) drawn at init std 0.1, so that
removing a span really changes the logits (at the usual 1e-2 the adapters are near-identity and
any two spans would agree trivially). Data: the first validation tweets of the airline task,
length-bucketed as the notebook does. Both ways must give the same logits for every span before
anything is timed. Runs in the main venv. Prints one JSON object as its last line.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import common  # noqa: E402
import timing  # noqa: E402


def run(examples=256, batch_size=32, rounds=3, warmup=1):
    import adapterlab as al
    from dataclasses import replace

    from transformers import AutoTokenizer

    from adapterlab.training import removal, tasks, train

    torch.manual_seed(0)
    model = common.base_model()
    al.adapt(model, "houlsby", bottleneck=64, init_std=0.1)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(common.model_path())
    task = train.cap_eval(tasks.load_task("airline"), examples)
    task = replace(task, splits={"validation": task.splits["validation"]})  # encode only what we evaluate
    encoded = tasks.encode(task, tokenizer, max_length=128)["validation"]
    batches = tasks.batches(encoded, tokenizer, batch_size, shuffle=False)

    cached, _, n_layers = removal.span_logits(model, batches, cached=True)
    naive, _, _ = removal.span_logits(model, batches, cached=False)
    max_diff = max(float(np.abs(cached[s] - naive[s]).max()) for s in naive)
    changed = float(np.abs(cached[(0, n_layers - 1)] - cached[None]).max())
    if max_diff > 1e-4:
        raise AssertionError(f"cached and naive span logits differ by {max_diff}")

    r = timing.alternate({"cached": lambda: removal.span_logits(model, batches, cached=True),
                          "naive": lambda: removal.span_logits(model, batches, cached=False)},
                         warmup=warmup, rounds=rounds)
    ratio = timing.speed_ratio(r, "cached", "naive")
    spans = n_layers * (n_layers + 1) // 2
    block_evals = removal.span_block_evaluations(n_layers)
    return {
        "examples": int(len(encoded)), "batch_size": batch_size, "layers": n_layers, "spans": spans,
        "max_abs_logit_diff_cached_vs_naive": max_diff,
        "max_abs_logit_change_all_removed": changed,
        "block_evaluations_per_batch": block_evals,
        "median_s": {side: v["median_s"] for side, v in r["sides"].items()},
        "iqr_s": {side: v["iqr_s"] for side, v in r["sides"].items()},
        "heatmap_vs_naive": {**ratio, "note": "time(naive) / time(cached), all spans + no removal"},
        "loadavg": timing.loadavg(),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    threads = timing.set_threads()
    out = run(args.examples, rounds=args.rounds)
    out["threads"] = threads
    print(json.dumps(out))


if __name__ == "__main__":
    main()
