"""Command line: python -m adapterlab {train, sweep, regenerate}.

    python -m adapterlab train --backbone default --task airline --method houlsby \\
        --bottleneck 64 --train-size 2000 --epochs 3 --lr 1e-3 --seed 0 --json
    python -m adapterlab sweep --profile paper [--only 04,06] [--executor local|ray] [--address auto]
    python -m adapterlab regenerate --profile default [--only 04,05] [--fresh] [--workers 2] [--out DIR]

Bad arguments print one clear line and exit with status 2, not a traceback.
"""
import argparse
import json
import os
import sys

METHOD_FLAGS = ("bottleneck", "n", "rank", "k", "init_std", "drop_layers", "activation", "prompt_tokens",
                "prompt_init", "intrinsic_dim", "lora_alpha", "lora_targets")


def add_train_parser(sub):
    p = sub.add_parser("train", help="train one method on one task and report the numbers")
    p.add_argument("--backbone", default="default", help="default | tiny | tiny-t5 | hub id | local path")
    p.add_argument("--task", default="airline", help="airline | synthetic | synthetic-pair | glue/<task>")
    p.add_argument("--method", default="houlsby")
    p.add_argument("--bottleneck", type=int, help="adapter size m")
    p.add_argument("--n", type=int, help="PHM n (phm, compacter, compacter++)")
    p.add_argument("--rank", type=int, help="rank of the PHM B_i / low-rank projections; LoRA's r")
    p.add_argument("--k", type=int, help="top-k: number of top blocks to train")
    p.add_argument("--init-std", type=float, help="std of the near-identity init")
    p.add_argument("--drop-layers", type=int, help="adapterdrop: blocks without adapters")
    p.add_argument("--activation", help="adapter nonlinearity (gelu, relu, swish, tanh)")
    p.add_argument("--prompt-tokens", type=int, help="prompt-tuning: number of prompt vectors")
    p.add_argument("--prompt-init", choices=["random", "vocab"], help="prompt-tuning: -R or -T initialisation")
    p.add_argument("--intrinsic-dim", type=int, help="intrinsic-said: d', the trained dimension (lambda included)")
    p.add_argument("--lora-alpha", type=float, help="lora: scale alpha (the update is alpha / rank x B A)")
    p.add_argument("--lora-targets", type=lambda s: tuple(s.split(",")),
                   help="lora: comma-separated module names to adapt, e.g. query,value")
    p.add_argument("--train-size", type=int, help="train on a seeded subset of this many examples")
    p.add_argument("--epochs", type=float, default=3)
    p.add_argument("--max-steps", type=int, help="stop after this many steps (overrides --epochs)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:1 | mps")
    p.add_argument("--glue-dir", help="local GLUE TSV directory (default: $ADAPTERLAB_GLUE_DIR, else the hub)")
    p.add_argument("--json", action="store_true", help="print one JSON object as the last line")


def train_command(args):
    from .training.train import RunConfig, TrainConfig, run

    method_args = {k: getattr(args, k) for k in METHOD_FLAGS if getattr(args, k) is not None}
    config = RunConfig(
        backbone=args.backbone, task=args.task, method=args.method, method_args=method_args,
        train_size=args.train_size, max_length=args.max_length,
        train=TrainConfig(epochs=args.epochs, max_steps=args.max_steps, lr=args.lr, batch_size=args.batch_size,
                          precision=args.precision, seed=args.seed),
    )
    record = run(config, device=args.device, progress=sys.stderr.isatty(), glue_dir=args.glue_dir)
    print(f"{record['method']} on {record['task']} ({record['backbone']}): "
          f"{record['trainable']:,} trainable ({record['percent']:.3f}%)")
    print(f"  {record['metric']}: validation {record['validation']:.4f}, test {record['test']:.4f} "
          f"(majority class {record['majority']:.4f})")
    print(f"  {record['train_seconds']:.1f} s training, {record['examples_per_second']:.1f} examples/s, "
          f"peak memory {record['peak_memory_mb']:.0f} MB on {record['device']}")
    if args.json:
        print(json.dumps(record))


def add_sweep_parser(sub):
    p = sub.add_parser("sweep", help="train every planned run the result store lacks (locally or on Ray)")
    p.add_argument("--profile", default="default", choices=["smoke", "default", "paper"])
    p.add_argument("--only", help="comma-separated notebook numbers or family names, e.g. 04,06")
    p.add_argument("--executor", default="local", choices=["local", "ray"],
                   help="local: one worker per GPU (on CPU: --max-parallel workers, default 1); "
                        "ray: one Ray task per run")
    p.add_argument("--address", help="ray: the cluster to join (auto, or HOST:6379); default: a local one")
    p.add_argument("--max-parallel", type=int,
                   help="at most this many runs at once (on CPU: this many workers sharing the cores)")
    p.add_argument("--retries", type=int, default=2, help="restarts of a run whose worker died")


def sweep_command(args):
    from .experiments.sweep import sweep

    if args.address and args.executor != "ray":
        raise ValueError("--address is for --executor ray")
    return sweep(args.profile, only=args.only, executor=args.executor, address=args.address,
                 max_parallel=args.max_parallel, retries=args.retries, progress=sys.stderr.isatty())


def add_regenerate_parser(sub):
    p = sub.add_parser("regenerate", help="run the notebooks headless and write figures and results")
    p.add_argument("--profile", default="default", choices=["smoke", "default", "paper"])
    p.add_argument("--only", help="comma-separated notebook numbers or names, e.g. 04,05")
    p.add_argument("--fresh", action="store_true", help="ignore cached results and retrain")
    p.add_argument("--out", help="write executed notebooks, results and figures under this directory")
    p.add_argument("--dry-run", action="store_true", help="list what would run (paper: the planned runs)")
    p.add_argument("--jobs", type=int, default=1, help="independent notebooks in parallel processes")
    p.add_argument("--workers", type=int, default=1,
                   help="train the planned runs first, this many side by side (CPU: sharing the cores)")
    p.add_argument("--since", help="resume a fresh run: retrain only records made before this ISO time")
    p.add_argument("--timeout", type=int, default=3600, help="seconds allowed per cell")


def regenerate_command(args):
    from .course.regenerate import regenerate

    return regenerate(profile=args.profile, only=args.only, fresh=args.fresh, out=args.out,
                      dry_run=args.dry_run, jobs=args.jobs, timeout=args.timeout, workers=args.workers,
                      since=args.since)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m adapterlab", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_train_parser(sub)
    add_sweep_parser(sub)
    add_regenerate_parser(sub)
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        commands = {"train": train_command, "sweep": sweep_command, "regenerate": regenerate_command}
        status = commands[args.command](args)
    except (ValueError, FileNotFoundError) as error:
        # our errors say what is wrong and how to fix it; a traceback would bury that
        print(f"error: {error}", file=sys.stderr)
        return 2
    return status or 0


if __name__ == "__main__":
    sys.exit(main())
