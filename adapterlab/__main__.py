"""Command line: python -m adapterlab {train, predict, evaluate, doctor, sweep, regenerate, study}.

    python -m adapterlab train --backbone default --task airline --method houlsby \\
        --bottleneck 64 --train-size 2000 --epochs 3 --lr 1e-3 --seed 0 --json
    python -m adapterlab train --task reviews.csv --text-column review --label-column stars --output-dir stars
    python -m adapterlab predict stars --input new.csv [--output predictions.csv]
    python -m adapterlab evaluate stars --input labelled.csv [--json]
    python -m adapterlab doctor [--report doctor.json]
    python -m adapterlab sweep --profile paper [--only 04,06] [--executor local|ray] [--address auto]
        [--workers-per-gpu 2] [--fresh | --since TIME] [--out DIR]
    python -m adapterlab regenerate --profile default [--only 04,05] [--fresh] [--workers 2] [--out DIR]
    python -m adapterlab regenerate --profile paper --dry-run [--workers-per-gpu 2]
    python -m adapterlab study init --task reviews.csv --text-column review --label-column stars \\
        [--backbone default] [--only 06,07] [--max-length N] [--hours 8] --out reviews.toml
    python -m adapterlab regenerate --profile reviews.toml --only 04,05,06,07

Bad arguments print one clear line and exit with status 2, not a traceback. The command line is where
the environment is read (ADAPTERLAB_GLUE_DIR: the default of --glue-dir); the library takes arguments.
"""
import argparse
import json
import os
import sys
import textwrap

METHOD_FLAGS = ("bottleneck", "n", "rank", "k", "init_std", "drop_layers", "activation", "prompt_tokens",
                "prompt_init", "intrinsic_dim", "lora_alpha", "lora_targets")


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose epilog can be made when help is shown: train's list of tasks comes from
    tasks.py, whose imports (torch, datasets) cost seconds that no other command should pay."""

    def __init__(self, *args, epilog_from=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.epilog_from = epilog_from

    def format_help(self):
        if self.epilog_from is not None:
            self.epilog = self.epilog_from()
        return super().format_help()


def task_list():
    """The built-in tasks as help text, from the registry (tasks.TASKS), then how to give your own data."""
    from .training.tasks import TASKS

    width = max(map(len, TASKS))
    lines = [f"  {name:<{width}}  {description}" for name, description in TASKS.items()]
    own = textwrap.fill("your own data: --task FILE (.csv, .tsv, .jsonl, .parquet) or hf:NAME[:CONFIG], with "
                        "--text-column (twice for sentence pairs), --label-column and optionally --validation FILE "
                        "--test FILE (else a seeded, stratified split: test a tenth, validation a fifth or 200 rows "
                        "where the data allow); --output-dir DIR keeps the model "
                        "for `predict` and `evaluate`.", width=100)
    return "built-in tasks (--task):\n" + "\n".join(lines) + "\n\n" + own


def add_train_parser(sub):
    p = sub.add_parser("train", help="train one method on one task and report the numbers",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog_from=task_list)
    p.add_argument("--backbone", default="default", help="default | tiny | tiny-t5 | hub id | local path")
    p.add_argument("--task", default="airline",
                   help="a built-in task (listed below), a data file, or hf:NAME[:CONFIG]")
    p.add_argument("--text-column", action="extend", nargs="+", dest="text_columns", metavar="NAME",
                   help="your data: the text column (default: text); two names for sentence pairs")
    p.add_argument("--label-column", metavar="NAME", help="your data: the label column (default: label)")
    p.add_argument("--validation", metavar="FILE", help="your data: the validation file (default: carved from --task)")
    p.add_argument("--test", metavar="FILE", help="your data: the test file (default: carved from --task)")
    p.add_argument("--output-dir", metavar="DIR",
                   help="keep the trained model here (adapter, label map, columns, base, metrics) for predict")
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
    p.add_argument("--max-length", type=int,
                   help="tokens per input (default: your data: fitted to its train texts, tasks.fit_max_length; "
                        "built-in tasks: 128)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:1 | mps")
    add_glue_dir_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object as the last line")


def choose_max_length(args, task):
    """max_length for a data file: --max-length, else tasks.fit_max_length's fit to the train texts. Prints
    the length and how many train texts it cuts; a length beyond the model's limit is refused."""
    from .training.tasks import fit_max_length, load_task
    from .training.train import input_lengths

    lengths, limit = input_lengths(load_task(task), args.backbone)
    if args.max_length is None:
        max_length = fit_max_length(lengths, limit)
        how = (f"the {limit}-token limit of the model" if max_length < fit_max_length(lengths)
               else "fitted to the train texts: their 95th percentile in tokens, rounded up to a multiple of 8")
    else:
        max_length, how = args.max_length, "--max-length"
        if limit is not None and max_length > limit:
            raise ValueError(f"--max-length {max_length} is more than {args.backbone} reads ({limit} tokens): "
                             f"use at most {limit}, or leave it out to fit it to the train texts")
    cut = int((lengths > max_length).sum())
    print(f"max_length {max_length} ({how}): it cuts {cut:,} of {len(lengths):,} train texts "
          f"(the longest has {lengths.max():,} tokens)", flush=True)
    return max_length
def add_glue_dir_argument(p):
    p.add_argument("--glue-dir", default=os.environ.get("ADAPTERLAB_GLUE_DIR") or None,
                   help="local GLUE TSV directory (default: $ADAPTERLAB_GLUE_DIR, else the hub)")


def train_command(args):
    from .training import files
    from .training.train import RunConfig, TrainConfig, run

    task = files.spec(args.task, text_columns=args.text_columns, label_column=args.label_column,
                      validation=args.validation, test=args.test)
    if args.max_length is not None and args.max_length < 1:
        raise ValueError(f"--max-length must be a positive number of tokens (got {args.max_length})")
    if args.output_dir:
        from .training.serving import check_output_dir

        check_output_dir(args.output_dir)
    max_length = args.max_length or RunConfig.max_length  # a built-in task: RunConfig's fixed default
    if files.is_source(task):
        from .training.tasks import load_task

        note = load_task(task).note  # reads and checks the data before any model loads
        max_length = choose_max_length(args, task)
    method_args = {k: getattr(args, k) for k in METHOD_FLAGS if getattr(args, k) is not None}
    config = RunConfig(
        backbone=args.backbone, task=task, method=args.method, method_args=method_args,
        train_size=args.train_size, max_length=max_length,
        train=TrainConfig(epochs=args.epochs, max_steps=args.max_steps, lr=args.lr, batch_size=args.batch_size,
                          precision=args.precision, seed=args.seed),
    )
    kwargs = dict(device=args.device, progress=sys.stderr.isatty(), glue_dir=args.glue_dir)
    if args.output_dir:
        from .training.serving import train_to_dir

        record = train_to_dir(config, args.output_dir, **kwargs)
    else:
        record = run(config, **kwargs)
    print(f"{record['method']} on {record['task']} ({record['backbone']}): "
          f"{record['trainable']:,} trainable ({record['percent']:.3f}%)")
    if files.is_source(task):
        print(f"  data: {note}")
    print(f"  {record['metric']}: validation {record['validation']:.4f}, test {record['test']:.4f} "
          f"(majority class {record['majority']:.4f})")
    print(f"  {record['train_seconds']:.1f} s training, {record['examples_per_second']:.1f} examples/s, "
          f"peak memory {record['peak_memory_mb']:.0f} MB on {record['device']}")
    if args.output_dir:
        print(f"  saved to {args.output_dir}: python -m adapterlab predict {args.output_dir} --input FILE")
    if args.json:
        print(json.dumps(record))


def add_serving_arguments(p):
    p.add_argument("model_dir", metavar="DIR", help="a folder written by train --output-dir")
    p.add_argument("--input", required=True, metavar="FILE", help=".csv, .tsv, .jsonl or .parquet")
    p.add_argument("--backbone", help="load onto this base instead of the saved one (e.g. a moved model folder)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:1 | mps")


def add_predict_parser(sub):
    p = sub.add_parser("predict", help="predict the label of each row of a file with a trained model")
    add_serving_arguments(p)
    p.add_argument("--output", metavar="FILE",
                   help="write here, in the format of its extension (default: CSV on stdout): the input's "
                        "rows and columns, with label and p_<label> per class added (predicted_<name> where "
                        "the input has that name)")


def _load_for_serving(args):
    from .training import files, serving

    rows = files.read_table(args.input)  # a bad input file fails before the model loads
    model, tokenizer, info = serving.load_trained(args.model_dir, backbone=args.backbone, device=args.device)
    options = dict(batch_size=args.batch_size, precision=args.precision, where=args.input)
    return serving, model, tokenizer, info, rows, options


def predict_command(args):
    if args.output:
        from .training.files import check_format

        check_format(args.output, writing=True)  # a bad output name fails before the model loads, not after predicting
    serving, model, tokenizer, info, rows, options = _load_for_serving(args)
    table = serving.predict(model, tokenizer, info, rows, **options)
    serving.write_table(table, args.output)
    if args.output:
        print(f"{len(table)} predictions written to {args.output}", file=sys.stderr)


def add_evaluate_parser(sub):
    p = sub.add_parser("evaluate", help="score a trained model on a labelled file")
    add_serving_arguments(p)
    p.add_argument("--label-column", metavar="NAME", help="the label column (default: the one trained on)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def evaluate_command(args):
    serving, model, tokenizer, info, rows, options = _load_for_serving(args)
    scores = serving.evaluate(model, tokenizer, info, rows, label_column=args.label_column, **options)
    if args.json:
        print(json.dumps(scores))
        return
    numbers = ", ".join(f"{k} {v:.4f}" for k, v in scores.items() if k not in ("examples", "metric"))
    print(f"{args.input}: {numbers} on {scores['examples']:,} rows (task metric: {scores['metric']})")


def add_doctor_parser(sub):
    p = sub.add_parser("doctor", help="what this machine offers: device, CPU kernels, versions, offline assets; "
                                      "on CUDA a short bf16/fp16 training check")
    p.add_argument("--report", metavar="FILE", help="also write the report as JSON here")
    p.add_argument("--backbone", default="default", help="the GPU check's backbone")
    p.add_argument("--no-gpu-check", action="store_true", help="skip the GPU training check")


def doctor_command(args):
    from .training import doctor

    return doctor.main(report_path=args.report, backbone=args.backbone, gpu_check=not args.no_gpu_check)


PROFILE_HELP = "smoke | default | paper | a study file (my-study.toml: python -m adapterlab study init)"


def add_sweep_parser(sub):
    p = sub.add_parser("sweep", help="train every planned run the result store lacks (locally or on Ray)")
    p.add_argument("--profile", default="default", help=PROFILE_HELP)
    p.add_argument("--only", help="comma-separated notebook numbers or family names, e.g. 04,06")
    p.add_argument("--executor", default="local", choices=["local", "ray"],
                   help="local: one worker per GPU (on CPU: --max-parallel workers, default 1); "
                        "ray: one Ray task per run")
    p.add_argument("--address", help="ray: the cluster to join (auto, or HOST:6379); default: a local one")
    p.add_argument("--max-parallel", type=int,
                   help="at most this many runs at once (on CPU: this many workers sharing the cores)")
    p.add_argument("--retries", type=int, default=2, help="restarts of a run whose worker died")
    p.add_argument("--workers-per-gpu", type=int, default=1, metavar="K",
                   help="local: K workers on each GPU (a MiniLM run uses a fraction of one); CPU: ignored")
    p.add_argument("--fresh", action="store_true", help="retrain every run stored before the sweep began")
    p.add_argument("--since", help="resume a fresh sweep: retrain only records made before this ISO time")
    p.add_argument("--out", help="the store under this directory (DIR/data/results/<profile>/; default: the checkout's)")
    add_glue_dir_argument(p)


def sweep_command(args):
    from .experiments.results import fresh_since
    from .experiments.sweep import sweep

    if args.address and args.executor != "ray":
        raise ValueError("--address is for --executor ray")
    if args.workers_per_gpu < 1:
        raise ValueError(f"--workers-per-gpu must be at least 1 (got {args.workers_per_gpu})")
    if args.workers_per_gpu != 1 and args.executor != "local":
        raise ValueError("--workers-per-gpu is for --executor local (Ray gives each run a whole GPU)")
    if args.fresh and args.since:
        raise ValueError("--fresh and --since both say what to retrain; give one (--since resumes a fresh sweep)")
    return sweep(args.profile, only=args.only, executor=args.executor, address=args.address,
                 max_parallel=args.max_parallel, retries=args.retries, progress=sys.stderr.isatty(),
                 workers_per_gpu=args.workers_per_gpu, fresh=fresh_since(args.since or args.fresh, "--since"),
                 root=args.out, glue_dir=args.glue_dir)


def add_regenerate_parser(sub):
    p = sub.add_parser("regenerate", help="run the notebooks headless and write figures and results")
    p.add_argument("--profile", default="default", help=PROFILE_HELP)
    p.add_argument("--only", help="comma-separated notebook numbers or names, e.g. 04,05")
    p.add_argument("--fresh", action="store_true", help="ignore cached results and retrain")
    p.add_argument("--out", help="write executed notebooks, results and figures under this directory")
    p.add_argument("--dry-run", action="store_true", help="list what would run (paper: the planned runs)")
    p.add_argument("--jobs", type=int, default=1, help="independent notebooks in parallel processes")
    p.add_argument("--workers", type=int, default=1,
                   help="train the planned runs first, this many side by side (CPU: sharing the cores)")
    p.add_argument("--since", help="resume a fresh run: retrain only records made before this ISO time")
    p.add_argument("--workers-per-gpu", type=int, metavar="K",
                   help="K runs share each GPU in the sweep; with --dry-run, estimate the missing runs on a GPU "
                        "(the committed H200 check's step) instead of on this machine")
    p.add_argument("--timeout", type=int, default=3600, help="seconds allowed per cell")
    add_glue_dir_argument(p)


def regenerate_command(args):
    from .course.regenerate import regenerate

    return regenerate(profile=args.profile, only=args.only, fresh=args.fresh, out=args.out,
                      dry_run=args.dry_run, jobs=args.jobs, timeout=args.timeout, workers=args.workers,
                      since=args.since, glue_dir=args.glue_dir, workers_per_gpu=args.workers_per_gpu)


def add_study_parser(sub):
    p = sub.add_parser("study", help="a study of your own data: a TOML file that --profile takes")
    commands = p.add_subparsers(dest="study_command", required=True)
    init = commands.add_parser("init", help="write a study file for a data file, sized for this machine")
    init.add_argument("--task", required=True, metavar="FILE", help="the data: .csv, .tsv, .jsonl, .parquet or hf:NAME")
    init.add_argument("--text-column", action="extend", nargs="+", dest="text_columns", metavar="NAME", required=True,
                      help="the text column; twice for sentence pairs")
    init.add_argument("--label-column", required=True, metavar="NAME", help="the label column")
    init.add_argument("--validation", metavar="FILE", help="the validation file (default: carved from --task)")
    init.add_argument("--test", metavar="FILE", help="the test file (default: carved from --task)")
    init.add_argument("--backbone", default="default", help="default | a local model folder | a hub id")
    init.add_argument("--only", help="the figure families it studies: comma-separated notebook numbers, e.g. "
                                     "06,07 (default: 04,05,06,07)")
    init.add_argument("--max-length", type=int, metavar="N",
                      help="cut the texts at N tokens (at least 16; default: fitted to the train texts)")
    init.add_argument("--hours", type=float, default=8.0,
                      help="the time the study may take on this machine (measured here, its pilot included); "
                           "init cuts 06's methods, then 07's sizes, then the budget controls to fit; default 8")
    init.add_argument("--out", required=True, metavar="FILE.toml", help="the study file to write; its stem names it")


def study_command(args):
    from .experiments.study_init import init

    init(args.task, args.text_columns, args.label_column, args.out, backbone=args.backbone, hours=args.hours,
         validation=args.validation, test=args.test, only=args.only, max_length=args.max_length)


def main(argv=None):
    parser = Parser(prog="python -m adapterlab", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_train_parser(sub)
    add_predict_parser(sub)
    add_evaluate_parser(sub)
    add_doctor_parser(sub)
    add_sweep_parser(sub)
    add_regenerate_parser(sub)
    add_study_parser(sub)
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        commands = {"train": train_command, "predict": predict_command, "evaluate": evaluate_command,
                    "doctor": doctor_command, "sweep": sweep_command, "regenerate": regenerate_command,
                    "study": study_command}
        status = commands[args.command](args)
    except (ValueError, FileNotFoundError) as error:
        # our errors say what is wrong and how to fix it; a traceback would bury that
        print(f"error: {error}", file=sys.stderr)
        return 2
    return status or 0


if __name__ == "__main__":
    sys.exit(main())
