"""Section 5: peak memory of a training step -- full fine-tuning vs Houlsby vs Compacter++ (CPU).

Each method runs in a fresh process (so one method's freed memory cannot hide another's peak):
load the model, make the batches, note the resident memory, reset the kernel's peak-RSS mark,
run 3 training steps (batch 32, sequence 128; the first creates gradients and optimizer state),
and read the peak. "training_peak_mb" = peak - memory before the first step: activations kept
for backward, gradients and AdamW state -- what the method itself costs.
The step-time ratios for the same methods come from bench_limits.py's alternated core run.
Runs in the main venv. Prints one JSON object as its last line.
"""
import argparse
import gc
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import timing  # noqa: E402

METHODS = ("full", "houlsby", "compacter++")


def measure_one(method, steps=3):
    import common

    timing.set_threads()
    model = common.adapterlab_model(method)
    step = common.train_step_fn(model, common.make_batches(2))
    gc.collect()
    before = timing.rss_mb()
    timing.reset_peak_rss()
    for _ in range(steps):
        step()
    peak = timing.rss_mb("VmHWM")
    return {"method": method, "rss_before_mb": before, "peak_rss_mb": peak, "training_peak_mb": peak - before,
            "trainable": common.trainable(model)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", help="measure this method in this process and print its JSON")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure_one(args.one)))
        return
    rows = {}
    for method in METHODS:
        proc = subprocess.run([sys.executable, __file__, "--one", method], capture_output=True, text=True, check=True)
        rows[method] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{method}: {rows[method]}", file=sys.stderr, flush=True)
    full = rows["full"]["training_peak_mb"]
    out = {"threads": timing.THREADS, "device": "cpu", "methods": rows,
           "saving_vs_full": {m: 1 - rows[m]["training_peak_mb"] / full for m in METHODS if m != "full"},
           "gpu": "no GPU in this run: the GPU columns are left for a machine with one"}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
