"""Section 3: adapter training against the hardware's limit -- and what lowers its cost.

Runs in the main venv (adapterlab's own environment). All sides use the pretrained MiniLM,
batch 32, sequence 128 (unless said otherwise), fp32, alternating after a warm-up.

  core         frozen inference (eval + inference_mode) vs training steps of Houlsby,
               Compacter++, LayerNorm-only and full fine-tuning, on the same batches.
               train_vs_inference = inference time / Houlsby step time (an examples/s fraction).
               The backward pass through frozen layers needs activation gradients only (about
               one more forward's worth of work), so about 0.5 is the ceiling.
  bf16         Houlsby and full fine-tuning steps under torch.autocast("cpu", bfloat16) vs fp32, at
               sequence 64 and 128, after checking that both compute the same function. How
               fast bf16 is depends on the CPU (AMX / AVX512-BF16 do it natively): run_all.py
               also runs this part with the AVX2 kernels forced, and records the machine.
  compile      the Houlsby step with every adapter module torch.compile'd vs eager.
  attn_dropout the Houlsby step with attention-probability dropout 0.1 (BERT's default) vs 0:
               with dropout, PyTorch's CPU SDPA falls back to the unfused "math" attention
               (softmax, mask, dropout as separate passes); without, it runs the fused kernel.
               This changes the regularisation, so it is reported, not adopted silently.
  bucketing    short, varied lengths (like tweets): every batch padded to 128 vs examples sorted
               by length and each batch padded only to its own longest example.

Prints one JSON object as its last line.
"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import torch  # noqa: E402

import common  # noqa: E402
import timing  # noqa: E402


def per_example(result, batch):
    return {side: {"median_s": s["median_s"], "iqr_s": s["iqr_s"], "examples_per_s": batch / s["median_s"]}
            for side, s in result["sides"].items()}


def core(args, batches):
    sides = {"inference": common.inference_fn(common.adapterlab_model("houlsby"), batches)}
    for method in ("houlsby", "compacter++", "layernorm", "full"):
        sides[method] = common.train_step_fn(common.adapterlab_model(method), batches)
    r = timing.alternate(sides, warmup=args.warmup, rounds=args.rounds)
    frac = {m: timing.speed_ratio(r, "inference", m) for m in ("houlsby", "compacter++", "layernorm", "full")}
    # speed_ratio(inference, m) = time(m)/time(inference); the fraction is its inverse (per round)
    t = {n: s["times"] for n, s in r["sides"].items()}
    fractions = {}
    for m in frac:
        per_round = sorted(a / b for a, b in zip(t["inference"], t[m]))
        q1, med, q3 = timing.quartiles(per_round)
        fractions[m] = {"fraction": med, "iqr": q3 - q1}
    full_vs = {m: timing.speed_ratio(r, m, "full") for m in ("houlsby", "compacter++", "layernorm")}
    return {"per_side": per_example(r, common.BATCH), "fraction_of_inference": fractions,
            "speedup_vs_full": full_vs, "times_s": {n: s["times"] for n, s in r["sides"].items()}}


BF16_METHODS, BF16_SEQS = ("houlsby", "full"), (64, 128)


def bf16_logit_error(model, batch):
    """Largest |logit| difference of bf16 autocast from fp32 on the same weights, and the bound it must
    stay under: bf16 keeps 8 significant bits, so every matmul output is rounded by up to 2^-9 ~ 0.2%
    of its size; over 6 blocks (~4 matmuls each, LayerNorms re-centring in fp32) that adds up to a few
    percent of the logits' size, so a 10% bound (of the largest logit, + 0.001 for logits near 0) passes
    any correct bf16 kernel and fails a different function."""
    model.eval()
    with torch.no_grad():
        fp32 = model(**batch).logits
        with torch.autocast("cpu", dtype=torch.bfloat16):
            bf16 = model(**batch).logits.float()
    model.train()
    return (fp32 - bf16).abs().max().item(), 0.1 * fp32.abs().max().item() + 1e-3


def bf16(args, batches):
    """bf16 autocast vs fp32 training steps (separate, identical models, alternating), per method and length."""
    out = {"batch": common.BATCH, "rounds": args.bf16_rounds, "rows": []}
    for seq in BF16_SEQS:
        data = common.make_batches(2, seq=seq)
        for method in BF16_METHODS:
            fp32_model, bf16_model = common.adapterlab_model(method), common.adapterlab_model(method)
            error, bound = bf16_logit_error(bf16_model, data[0])
            assert error <= bound, f"bf16 autocast changes {method}'s logits by {error:.3g} (> {bound:.3g})"
            r = timing.alternate({"fp32": common.train_step_fn(fp32_model, data),
                                  "bf16_autocast": common.train_step_fn(bf16_model, data, torch.bfloat16)},
                                 warmup=1, rounds=args.bf16_rounds)
            out["rows"].append({"method": method, "seq": seq, "per_side": per_example(r, common.BATCH),
                                "bf16_speedup": timing.speed_ratio(r, "bf16_autocast", "fp32"),
                                "max_abs_logit_diff": error, "logit_bound": bound})
    first = out["rows"][0]  # Houlsby at sequence 64: the headline ratio
    out["bf16_speedup"] = first["bf16_speedup"]
    out["per_side"] = first["per_side"]
    return out


def compiled(args, batches):
    import adapterlab.methods.inject as inject

    eager = common.adapterlab_model("houlsby")
    comp = common.adapterlab_model("houlsby")
    for adapter in inject.adapters(comp).values():
        adapter.compile()  # nn.Module.compile: compiles this module's forward in place
    step = common.train_step_fn(comp, batches)
    start = time.perf_counter()
    step()  # the first call compiles (forward and backward graphs)
    compile_s = time.perf_counter() - start
    r = timing.alternate({"eager": common.train_step_fn(eager, batches), "compiled_adapters": step},
                         warmup=1, rounds=args.rounds_small)
    return {"per_side": per_example(r, common.BATCH), "first_step_with_compile_s": compile_s,
            "compile_speedup": timing.speed_ratio(r, "compiled_adapters", "eager")}


def attention_dropout(args, batches):
    with_dropout = common.adapterlab_model("houlsby")
    without = common.adapterlab_model("houlsby", attention_probs_dropout_prob=0.0)
    r = timing.alternate({"attn_dropout_0.1": common.train_step_fn(with_dropout, batches),
                          "attn_dropout_0": common.train_step_fn(without, batches)},
                         warmup=1, rounds=args.rounds_small)
    return {"per_side": per_example(r, common.BATCH),
            "speedup_without_attention_dropout": timing.speed_ratio(r, "attn_dropout_0", "attn_dropout_0.1")}


def tweet_like_lengths(count, seed=0):
    """Token counts like short social-media posts: log-normal around 28 tokens, clipped to [8, 128]."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(count, generator=g)
    return [int(min(128, max(8, round(math.exp(math.log(28) + 0.45 * float(v)))))) for v in z]


def bucketing(args):
    n_batches, b = 2, common.BATCH
    lengths = tweet_like_lengths(n_batches * b)
    padded = [{k: v for k, v in common.make_batches(1, b, common.SEQ, seed=10 + i, lengths=lengths[i * b:(i + 1) * b])[0].items()}
              for i in range(n_batches)]
    ordered = sorted(lengths)
    bucketed = []
    for i in range(n_batches):
        chunk = ordered[i * b:(i + 1) * b]
        batch = common.make_batches(1, b, max(chunk), seed=20 + i, lengths=chunk)[0]
        bucketed.append(batch)
    model = common.adapterlab_model("houlsby")
    step_padded, step_bucketed = common.train_step_fn(model, padded), common.train_step_fn(model, bucketed)

    def epoch(step):
        return lambda: [step() for _ in range(n_batches)]

    r = timing.alternate({"pad_to_128": epoch(step_padded), "bucketed": epoch(step_bucketed)},
                         warmup=1, rounds=3)
    return {"per_side": per_example(r, n_batches * b),
            "lengths": {"mean": sum(lengths) / len(lengths), "max": max(lengths), "min": min(lengths)},
            "bucketing_speedup": timing.speed_ratio(r, "bucketed", "pad_to_128")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--rounds-small", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--bf16-rounds", type=int, default=4)
    ap.add_argument("--only", default="core,bf16,compile,attn_dropout,bucketing")
    args = ap.parse_args()
    threads = timing.set_threads()
    batches = common.make_batches(2)
    out = {"threads": threads, "loadavg_start": timing.loadavg(), "batch": common.BATCH, "seq": common.SEQ,
           "versions": common.versions(), "machine": common.machine()}
    parts = {"core": lambda: core(args, batches), "bf16": lambda: bf16(args, batches),
             "compile": lambda: compiled(args, batches), "attn_dropout": lambda: attention_dropout(args, batches),
             "bucketing": lambda: bucketing(args)}
    for name in args.only.split(","):
        start = time.perf_counter()
        try:
            out[name] = parts[name]()
        except Exception as error:  # one failed variant (e.g. no compiler for torch.compile) must not sink the rest
            out[name] = {"error": f"{type(error).__name__}: {error}"[:500]}
        out[name]["section_wall_s"] = time.perf_counter() - start
        print(f"{name}: {json.dumps(out[name], default=str)[:400]}", file=sys.stderr, flush=True)
    out["loadavg_end"] = timing.loadavg()
    out["train_vs_inference"] = out.get("core", {}).get("fraction_of_inference", {}).get("houlsby")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
