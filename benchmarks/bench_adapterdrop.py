"""AdapterDrop's training speed-up: does the backward pass stop at the first adapted block?

AdapterDrop (Rücklé et al. 2021) removes the adapters of the lowest blocks. That saves time in
training only if nothing below the first adapted block trains: then autograd needs no backward
pass through those blocks (nor the embeddings). With every LayerNorm trainable (both papers'
default, and adapterlab's) the lower blocks' LayerNorms still need gradients, so the backward runs
all the way down. train_lower_layernorms=False freezes them (the AdapterDrop paper's setting).

Two models, the same seed: "adapterdrop" on the pretrained MiniLM (6 blocks; the default drops 3),
once with all LayerNorms trained and once with the lower ones frozen. They compute the same
function (checked, bit for bit, before timing); only what trains differs. Training steps are timed
alternately (timing.alternate) and summarised by medians. Runs in the main venv; prints one JSON
object as its last line.

    python benchmarks/bench_adapterdrop.py [--quick]
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import torch  # noqa: E402

import common  # noqa: E402
import timing  # noqa: E402


def models(seed=0):
    import adapterlab as al

    out = {}
    for name, lower in (("all_layernorms", True), ("lower_frozen", False)):
        model = common.base_model(seed)
        torch.manual_seed(seed)  # the same adapters on both sides
        out[name] = al.adapt(model, "adapterdrop", train_lower_layernorms=lower)
    return out


def check_same_function(sides, batch):
    """Same logits (eval mode) and a different set of trained parameters: the only difference is what trains."""
    with torch.no_grad():
        logits = [m.eval()(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
                  for m in sides.values()]
    a, b = sides.values()
    return {
        "same_logits": bool(torch.equal(*logits)),
        "trainable": {name: common.trainable(m) for name, m in sides.items()},
        "dropped_blocks": a.adapterlab_method.dropped_blocks(len(a.bert.encoder.layer)),
        "blocks": len(a.bert.encoder.layer),
    }


def run(batch=common.BATCH, seq=common.SEQ, rounds=7, warmup=2):
    threads = timing.set_threads()
    sides = models()
    batches = common.make_batches(count=2, batch=batch, seq=seq)
    check = check_same_function(sides, batches[0])
    if not check["same_logits"]:
        raise SystemExit(f"the two sides compute different functions: {check}")
    steps = {name: common.train_step_fn(model, batches) for name, model in sides.items()}
    result = timing.alternate(steps, warmup=warmup, rounds=rounds)
    return {
        "section": "adapterdrop",
        "check": check,
        "batch": batch, "seq": seq, "threads": threads, "loadavg": timing.loadavg(),
        "timing": result,
        "speedup_lower_frozen": timing.speed_ratio(result, "lower_frozen", "all_layernorms"),
        "versions": common.versions(),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small batch, 2 rounds: checks that it runs, not a timing")
    args = ap.parse_args()
    out = run(batch=8, seq=32, rounds=2, warmup=1) if args.quick else run()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
