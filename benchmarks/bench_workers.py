"""Section 7: one run on every core vs. one run per core -- the sweep's CPU workers (sweep.LocalExecutor).

The default profile's step (MiniLM-L6, batch 32 of airline tweets, ~30 tokens after length bucketing)
is too small for torch's intra-op threads to keep two cores busy. So we compare the machine's
throughput, in training examples per second, of
    A  one process with all THREADS threads, and
    B  THREADS processes with one thread each, side by side (their timed windows must overlap),
all training the same Houlsby m=64 model from the same seed on the same batches: the same function
(checked: the loss of the first step, a pure forward pass, agrees across the sides to 1e-5 relative;
only the order of float sums differs with the thread count). Sides alternate A B A B ..., each round
in fresh processes, and the report gives the median over rounds of B/A. Prints one JSON line.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import timing  # noqa: E402

STEPS, WARMUP = 30, 3


def one_worker(threads, seed=0):
    """Train WARMUP + STEPS steps; time the last STEPS. Returns examples/s, the window and the losses."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    timing.set_threads(threads)
    import torch

    from adapterlab.training import tasks as task_registry
    from adapterlab.training.train import RunConfig, build, model_inputs

    model, tokenizer, task = build(RunConfig(method="houlsby", method_args=dict(bottleneck=64), train_size=2000,
                                             max_length=64))
    encoded = task_registry.encode(task, tokenizer, max_length=64)
    batches = list(task_registry.batches(encoded["train"], tokenizer, 32, shuffle=True, seed=seed))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    model.train()
    losses, examples = [], 0
    for i, batch in enumerate(batches[:WARMUP + STEPS]):
        if i == WARMUP:
            start = time.time()
        loss = model(**model_inputs(batch, torch.device("cpu"))).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        examples += len(batch["index"]) if i >= WARMUP else 0
    end = time.time()
    return {"threads": torch.get_num_threads(), "examples_per_second": examples / (end - start),
            "start": start, "end": end, "losses": losses}


def side(workers, threads):
    """Run `workers` processes of `threads` threads at once; their outputs."""
    procs = [subprocess.Popen([sys.executable, __file__, "--one", str(threads)], stdout=subprocess.PIPE, text=True)
             for _ in range(workers)]
    outs = []
    for proc in procs:
        stdout, _ = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"a worker failed (exit {proc.returncode})")
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    return outs


def overlap(outs):
    """The fraction of the shortest timed window during which every worker was timing."""
    shared = min(o["end"] for o in outs) - max(o["start"] for o in outs)
    return max(0.0, shared) / min(o["end"] - o["start"] for o in outs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", type=int, help="(internal) one worker with this many threads; prints its JSON")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_worker(args.one)))
        return
    cores = timing.THREADS
    rounds, reference = [], None
    for _ in range(args.rounds):
        a = side(1, cores)
        b = side(cores, 1)
        reference = reference or a[0]["losses"][0]
        first = [o["losses"][0] for o in a + b]
        same = all(abs(x - reference) <= 1e-5 * abs(reference) for x in first)
        rounds.append({"one_run_all_threads": a[0]["examples_per_second"],
                       "one_run_per_core": sum(o["examples_per_second"] for o in b),
                       "overlap": overlap(b), "same_first_loss": same})
        print(rounds[-1], file=sys.stderr, flush=True)
    if not all(r["same_first_loss"] for r in rounds):
        raise SystemExit("the sides did not compute the same first loss: not the same function, nothing to compare")
    ratios = [r["one_run_per_core"] / r["one_run_all_threads"] for r in rounds]
    print(json.dumps({"cores": cores, "rounds": rounds, "per_core_vs_all_threads": statistics.median(ratios),
                      "ratios": ratios, "min_overlap": min(r["overlap"] for r in rounds)}))


if __name__ == "__main__":
    main()
