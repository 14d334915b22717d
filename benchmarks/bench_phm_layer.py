"""Section 2: one PHM layer, forward + backward on 4096 tokens.

Four sides per shape (in -> out) and n:
  dense         nn.Linear(in, out)                              -- what a PHM layer replaces
  factored      adapterlab PHMLinear, rank 1, factored path     -- never builds the (in, out) matrix
  materialized  adapterlab PHMLinear, rank 1, full-matrix path  -- builds W = sum_i A_i (x) s_i t_i, one matmul
  adapterhub    AdapterHub's PHMLayer, rank 1 (phm_rank=1, factorized_phm_W) -- rebuilds the full
                matrix with a broadcast Kronecker product + sum on every call
The rule A is the layer's own here (a shared rule costs the same per call).
Each timed call runs `repeat` forward+backward passes; sides alternate after a warm-up.
Runs in benchmarks/.venv-adapterhub. Prints one JSON object as its last line.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import timing  # noqa: E402

SHAPES = [(384, 24), (768, 24), (24, 768), (1024, 64), (384, 64)]
NS = [2, 4, 8, 12]
TOKENS = 4096


def adapterhub_phm(d_in, d_out, n):
    from adapters import CompacterConfig
    from adapters.methods.modeling import PHMLayer

    cfg = CompacterConfig(phm_dim=n, phm_rank=1, shared_phm_rule=False, factorized_phm_W=True, shared_W_phm=False)
    return PHMLayer("bench", d_in, d_out, "down", cfg)


def sides_for(d_in, d_out, n, x, repeat):
    from adapterlab.nn.layers import PHMLinear

    ours = PHMLinear(d_in, d_out, n, rank=1)
    layers = {
        "dense": (nn.Linear(d_in, d_out), None),
        "factored": (ours, ours.forward_factored),
        "materialized": (ours, ours.forward_materialized),
        "adapterhub": (adapterhub_phm(d_in, d_out, n), None),
    }

    def make(module, fn):
        fn = fn or module

        def run():
            for _ in range(repeat):
                xi = x.detach().requires_grad_(True)  # an adapter inside a network also needs dL/dx
                fn(xi).sum().backward()
                module.zero_grad(set_to_none=True)

        return run

    return {name: make(m, fn) for name, (m, fn) in layers.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=timing.THREADS)
    args = ap.parse_args()
    threads = timing.set_threads(args.threads)
    torch.manual_seed(0)
    rows = []
    for d_in, d_out in SHAPES:
        for n in NS:
            if d_in % n or d_out % n:
                continue
            x = torch.randn(TOKENS, d_in)
            r = timing.alternate(sides_for(d_in, d_out, n, x, args.repeat), warmup=args.warmup, rounds=args.rounds)
            med = {s: v["median_s"] / args.repeat for s, v in r["sides"].items()}
            row = {"in": d_in, "out": d_out, "n": n, "median_s_per_call": med,
                   "iqr_s_per_call": {s: v["iqr_s"] / args.repeat for s, v in r["sides"].items()},
                   # speed ratios (> 1: the first side is faster), medians of per-round ratios
                   "factored_vs_adapterhub": timing.speed_ratio(r, "factored", "adapterhub")["ratio"],
                   "factored_vs_materialized": timing.speed_ratio(r, "factored", "materialized")["ratio"],
                   "materialized_vs_adapterhub": timing.speed_ratio(r, "materialized", "adapterhub")["ratio"],
                   "dense_vs_factored": timing.speed_ratio(r, "dense", "factored")["ratio"]}
            rows.append(row)
            print(f"{d_in:5d}->{d_out:<4d} n={n:<2d} " + " ".join(f"{s} {t * 1e3:.3f}ms" for s, t in med.items())
                  + f"  factored/AH x{row['factored_vs_adapterhub']:.2f}", file=sys.stderr, flush=True)
    key = [r for r in rows if r["n"] == 4 and (r["in"], r["out"]) in ((384, 24), (768, 24))]
    worst = min(key, key=lambda r: r["factored_vs_adapterhub"])
    out = {"threads": threads, "loadavg_start": timing.loadavg(), "tokens": TOKENS, "repeat": args.repeat, "rounds": args.rounds, "rows": rows,
           "lphm_layer_vs_materialized": {
               "ratio": worst["factored_vs_adapterhub"], "at": f"{worst['in']}->{worst['out']}, n=4, rank 1",
               "both": {f"{r['in']}->{r['out']}": r["factored_vs_adapterhub"] for r in key},
               "median_s_per_call": worst["median_s_per_call"]}}
    out["loadavg_end"] = timing.loadavg()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
