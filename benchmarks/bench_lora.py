"""Section 8: LoRA, adapterlab vs PEFT -- a training step on equal function, and serving latency.

Runs in the main venv (PEFT sits beside adapterlab there). First the two must compute the same
function: adapterlab's LoRA (r = 8, alpha = 8 on query and value, the preset) gets B ~ N(0, PERTURB_STD)
so that the update matters, A and B are copied into PEFT's LoraConfig model (same targets, r, alpha, no
dropout) built on the same MiniLM with the same 3-way head, and the logits must agree within LOGIT_RTOL;
if not, the run exits 1 before any timing. Both train the same parameters (A, B and the classifier).
Then training steps (forward + loss, backward, AdamW) alternate A B A B after a warm-up
(timing.alternate), and the serving cost is timed with adapterlab.training.latency.inference_latency at
batch 1 and 32: the base model, LoRA unmerged (the update runs beside each target) and merged (folded
into the weights: the base model's cost).

    python benchmarks/bench_lora.py [--rounds 5] [--warmup 1] [--batch 32] [--seq 128] [--latency-repeats 10]

Prints one JSON object (the section's results) as its last line.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402
import timing  # noqa: E402

import torch  # noqa: E402

LOGIT_RTOL = 1e-4  # relative to max(1, largest logit), as the AdapterHub checks (common.LOGIT_RTOL)
PERTURB_STD = 0.2  # B's noise: moves the logits by O(0.1), far above float32 rounding


def models(seed=0):
    """(adapterlab LoRA, PEFT LoRA) on the same MiniLM and head, B perturbed and copied across."""
    import peft

    import adapterlab as al
    from adapterlab.methods import lora

    cfg = al.method("lora")
    ours = common.base_model(seed)
    theirs = common.base_model(seed)  # the same seed: the same fresh head
    al.adapt(ours, cfg)
    theirs = peft.get_peft_model(theirs, peft.LoraConfig(
        task_type=peft.TaskType.SEQ_CLS, r=cfg.rank, lora_alpha=cfg.lora_alpha,
        target_modules=list(cfg.lora_targets or ("query", "value")), lora_dropout=0.0))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, update in lora.lora_layers(ours):
            update.B.normal_(0, PERTURB_STD, generator=generator)
    lora.copy_to_peft(ours, theirs)  # every layer, or a ValueError
    return ours, theirs


def check_logits(ours, theirs, batch):
    """Same logits on the same weights (else AssertionError); also how far merging moves them."""
    from adapterlab.methods import lora

    ours.eval(), theirs.eval()
    with torch.no_grad():
        a = ours(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        b = theirs(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        with lora.merged(ours):
            merged = ours(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    diff, tol = (a - b).abs().max().item(), LOGIT_RTOL * max(1.0, a.abs().max().item())
    result = {"max_abs_diff": diff, "tolerance": tol, "passed": diff <= tol,
              "max_abs_diff_merged_vs_unmerged": (a - merged).abs().max().item()}
    if not result["passed"]:
        raise AssertionError(f"adapterlab and PEFT LoRA differ by {diff:.2e} > {tol:.0e} on the same weights")
    return result


def latencies(model, batch_sizes, seq, repeats):
    """{batch size: {base, unmerged, merged}} median seconds per forward pass."""
    from adapterlab.methods import lora
    from adapterlab.training.latency import inference_latency

    out = {}
    for b in batch_sizes:
        row = {"unmerged": inference_latency(model, b, seq, repeats=repeats)}
        with lora.merged(model):
            row["merged"] = inference_latency(model, b, seq, repeats=repeats)
        out[str(b)] = row
    return out


def peft_version():
    import peft

    return peft.__version__


def main():
    ap = common.training_arguments()
    ap.add_argument("--latency-batches", default="1,32")
    ap.add_argument("--latency-repeats", type=int, default=10)
    args = ap.parse_args()
    threads = timing.set_threads()
    ours, theirs = models()
    check = {**check_logits(ours, theirs, common.make_batches(1, batch=4, seq=16, seed=1)[0]),
             "trainable_adapterlab": common.trainable(ours), "trainable_peft": common.trainable(theirs)}
    check["trainable_equal"] = check["trainable_adapterlab"] == check["trainable_peft"]
    print(f"lora same logits: max diff {check['max_abs_diff']:.1e} (tolerance {check['tolerance']:.0e}); "
          f"trainable {check['trainable_adapterlab']:,} vs {check['trainable_peft']:,}", file=sys.stderr, flush=True)
    batches = common.make_batches(2, batch=args.batch, seq=args.seq)
    result = timing.alternate({"adapterlab": common.train_step_fn(ours, batches),
                               "peft": common.train_step_fn(theirs, batches)}, warmup=args.warmup, rounds=args.rounds)
    speed = timing.speed_ratio(result, fast="adapterlab", slow="peft")
    sides = result["sides"]
    serving = latencies(ours, [int(b) for b in args.latency_batches.split(",")], args.seq, args.latency_repeats)
    out = {"threads": threads, "loadavg_start": timing.loadavg(), "batch": args.batch, "seq": args.seq,
           "rounds": args.rounds, "warmup": args.warmup, "versions": {**common.versions(), "peft": peft_version()}, "check": check,
           "ratio": speed["ratio"], "ratio_iqr": speed["iqr"],  # > 1: adapterlab trains more examples per second
           "examples_per_s": {side: args.batch / s["median_s"] for side, s in sides.items()},
           "median_step_s": {side: s["median_s"] for side, s in sides.items()},
           "times_s": {side: s["times"] for side, s in sides.items()},
           "latency_s": serving, "latency_seq": args.seq, "latency_repeats": args.latency_repeats}
    print(f"lora training: adapterlab {out['examples_per_s']['adapterlab']:.1f} ex/s, peft "
          f"{out['examples_per_s']['peft']:.1f} ex/s, ratio {speed['ratio']:.3f}; latency "
          + ", ".join(f"batch {b}: unmerged {r['unmerged'] * 1e3:.1f} ms, merged {r['merged'] * 1e3:.1f} ms"
                      for b, r in serving.items()), file=sys.stderr, flush=True)
    out["loadavg_end"] = timing.loadavg()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
