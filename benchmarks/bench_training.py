"""Section 1: a training step, adapterlab vs AdapterHub, on the same MiniLM (batch 32, sequence 128).

Runs in benchmarks/.venv-adapterhub (both libraries on transformers 4.57). For each method
(Houlsby, Pfeiffer, Compacter, Compacter++) we first show that adapterlab and AdapterHub with the
matched config (see common.py) compute the same function: same logits on copied weights
(common.check_logits; the run stops if they differ). Then we build the same pretrained model
twice, check that both train the same number of parameters and give the same kind of output,
and time full training steps (forward + loss, backward, AdamW step) alternating A B A B after a
warm-up.

    python benchmarks/bench_training.py [--check-only]   # --check-only: the logit checks, seconds

Prints one JSON object (the section's results) as its last line; exits non-zero if a check fails.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402
import timing  # noqa: E402


def compare(method, rounds, warmup, batch, seq):
    logits = common.check_logits(method)  # raises before any timing if the two sides differ
    batches = common.make_batches(2, batch=batch, seq=seq)
    ours = common.adapterlab_model(method)
    theirs = common.adapterhub_model(method)
    check = {**common.check_same(ours, theirs, common.make_batches(1, batch=4, seq=16, seed=1)[0]),
             "logits_on_copied_weights": logits}
    before = {n: p.detach().clone() for n, p in theirs.named_parameters() if p.requires_grad and "adapter" in n}
    result = timing.alternate(
        {"adapterlab": common.train_step_fn(ours, batches), "adapterhub": common.train_step_fn(theirs, batches)},
        warmup=warmup, rounds=rounds,
    )
    # the AdapterHub adapters really ran and learned (not silently inactive)
    after = dict(theirs.named_parameters())
    check["adapterhub_adapter_tensors_updated"] = f"{sum(not after[n].equal(b) for n, b in before.items())}/{len(before)}"
    speed = timing.speed_ratio(result, fast="adapterlab", slow="adapterhub")
    sides = result["sides"]
    return {
        "ratio": speed["ratio"],  # > 1: adapterlab trains more examples per second
        "ratio_iqr": speed["iqr"],
        "examples_per_s": {side: batch / s["median_s"] for side, s in sides.items()},
        "median_step_s": {side: s["median_s"] for side, s in sides.items()},
        "iqr_step_s": {side: s["iqr_s"] for side, s in sides.items()},
        "times_s": {side: s["times"] for side, s in sides.items()},
        "check": check,
        "config": {"adapterlab": {"method": method, **common.METHODS[method]},
                   "adapterhub": type(common.adapterhub_config(method)).__name__ + " " + json.dumps(
                       {k: v for k, v in common.adapterhub_config(method).to_dict().items()
                        if k in ("mh_adapter", "output_adapter", "reduction_factor", "non_linearity",
                                 "original_ln_before", "original_ln_after", "residual_before_ln",
                                 "phm_layer", "phm_dim", "phm_rank", "shared_phm_rule", "shared_W_phm",
                                 "factorized_phm_W", "init_weights", "scaling")})},
    }


def checks(methods):
    """Every method's logit check; prints them all, then exits non-zero if any failed."""
    out = {"versions": common.versions(), "rtol": common.LOGIT_RTOL, "perturb_std": common.PERTURB_STD, "checks": {}}
    for method in dict.fromkeys(methods):
        try:
            out["checks"][method] = common.check_logits(method)
        except AssertionError as err:
            out["checks"][method] = {"passed": False, "error": str(err)}
        r = out["checks"][method]
        print(f"{method:12s} " + ("ok " if r["passed"] else "FAILED ") + (
            f"max |logit diff| {r['max_abs_diff']:.1e} (tolerance {r['tolerance']:.0e}, adapters move the logits "
            f"by {r['adapter_effect']:.2f}), {r['adapterhub_config']} at {'+'.join(r['placement'])}"
            if "error" not in r else r["error"]), file=sys.stderr, flush=True)
    out["passed"] = all(r["passed"] for r in out["checks"].values())
    print(json.dumps(out))
    if not out["passed"]:
        sys.exit(1)


def main():
    ap = common.training_arguments()
    ap.add_argument("--methods", default="houlsby,pfeiffer,compacter,compacter++")
    ap.add_argument("--check-only", action="store_true",
                    help="only the same-logits checks (also Pfeiffer's FFN placement), no timing")
    args = ap.parse_args()
    threads = timing.set_threads()
    if args.check_only:
        checks(args.methods.split(",") + ["pfeiffer-ffn"])
        return
    out = {"threads": threads, "loadavg_start": timing.loadavg(), "batch": args.batch, "seq": args.seq, "rounds": args.rounds,
           "warmup": args.warmup, "versions": common.versions(), "methods": {}}
    for method in args.methods.split(","):
        r = compare(method, args.rounds, args.warmup, args.batch, args.seq)
        out["methods"][method] = r
        print(f"{method:12s} adapterlab {r['examples_per_s']['adapterlab']:.1f} ex/s, "
              f"adapterhub {r['examples_per_s']['adapterhub']:.1f} ex/s, ratio {r['ratio']:.3f} "
              f"(trainable {r['check']['trainable_adapterlab']} vs {r['check']['trainable_adapterhub']})",
              file=sys.stderr, flush=True)
    out["loadavg_end"] = timing.loadavg()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
