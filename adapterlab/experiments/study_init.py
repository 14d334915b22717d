"""A study file for a data file, sized for this machine: python -m adapterlab study init.

    python -m adapterlab study init --task reviews.csv --text-column review --label-column stars \\
        --hours 8 --out reviews.toml
    python -m adapterlab regenerate --profile reviews.toml --only 04,05,06,07

init reads the data (its classes and their balance, its size, its texts' token lengths), times a few
training steps of the backbone here (doctor.step_check, the doctor's own check) and writes a commented
study file (studies.py) with the default profile's figure families (notebooks 04-07): its methods,
learning-rate grids, init stds and budget controls, with the data's own max_length (tasks.fit_max_length),
train size and low-resource sizes. Its budget is the largest of SCALES whose estimated time fits --hours.

The estimate counts every run of the plan (planning.plan, each grid as if its choice were made) at the
step time measured at the length the data's length-bucketed batches pad to on average (tasks.padded_length),
not at max_length, which only bounds it, and the passes notebook 04 adds to score the spans of removed layers
(Family.passes: notebook 04's span scores) at the seconds per example one such pass measures here (time_scoring).
A busy machine times slow, and its study comes out smaller.
Notebooks 03 and 08 train on the packaged tasks, so a study leaves them out.
"""
import copy
import math
import os
import textwrap
import time
from dataclasses import dataclass, replace
from pathlib import Path

import datasets
import numpy as np
import torch

from . import families, planning, profiles, studies
from .studies import toml_key, toml_value
from .timing import Timing
from ..methods.inject import adapt
from ..training import doctor, files
from ..training import tasks as task_registry
from ..training.backbones import load_backbone
from ..training.removal import span_logits
from ..training.train import input_limit, pick_device


def default():
    """The default profile: every study starts from its settings."""
    return profiles.get("default")


def study_families():
    """The families a study plans (Family.study: what init writes for each), in notebook order."""
    return [f for f in families.registered() if f.study]


@dataclass(frozen=True)
class Scale:
    """How big a study is, as each family's `study` writes its settings: the task's name, the default profile's
    steps x factor, the seeds, 06's methods ("every" entry or the "core" ones), the train split's size, and the
    default profile it starts from."""
    task: str
    factor: float
    seeds: tuple
    methods: str
    n_train: int
    default: object

# The budgets tried, largest first: (the default profile's steps per run x factor, seeds, 06's methods:
# "every" entry of the default's, or its "core", the arms of its budget control). Fewer steps first, then
# fewer methods, then one seed: the seeds are what puts an interval on every comparison.
SCALES = ((1, 3, "every"), (1 / 2, 3, "every"), (1 / 4, 3, "every"), (1 / 4, 3, "core"), (1 / 8, 3, "core"),
          (1 / 8, 1, "core"))
EVAL_CAP = 2000  # larger validation/test splits are capped (a seeded subset) so evaluations stay cheap
WIDTH = 100  # of the written file's lines


# ----------------------------------------------------------------------------- the data and the machine

@dataclass(frozen=True)
class DataSummary:
    """What init learns from the data: the task as train --task names it (files.spec), its classes and
    how many train examples each has, its split sizes, the max_length its texts need and the tokens its
    length-bucketed training batches pad to on average (batch_length: what a step costs)."""
    spec: str
    classes: tuple
    counts: tuple
    sizes: dict
    max_length: int
    pairs: bool
    batch_length: int

    def balance(self):
        total = sum(self.counts)
        return ", ".join(f"{c} {n / total:.1%}" for c, n in zip(self.classes, self.counts))


def read_data(spec, model, tokenizer, batch_size) -> DataSummary:
    """Read and check the data (tasks.load_task: a missing column, a single class are refused) and summarise;
    max_length fitted to the train texts under this backbone (tasks.fit_max_length), and the length their
    batches of `batch_size` pad to once cut there (tasks.padded_length, rounded up)."""
    task = task_registry.load_task(spec)
    counts = np.bincount(np.asarray(task.splits["train"]["label"]), minlength=task.num_labels)
    lengths = task_registry.token_lengths(task, tokenizer)
    max_length = task_registry.fit_max_length(lengths, input_limit(model, tokenizer))
    batch_length = math.ceil(task_registry.padded_length(np.minimum(lengths, max_length), batch_size))
    return DataSummary(spec, tuple(task.label_names), tuple(int(n) for n in counts),
                       {split: len(data) for split, data in task.splits.items()}, max_length,
                       len(task.text_fields) == 2, batch_length)


def load_timed(backbone, num_labels):
    """(model, tokenizer, seconds to load the backbone): they measure the texts (read_data)."""
    start = time.perf_counter()
    model, tokenizer = load_backbone(backbone, num_labels=num_labels)
    return model, tokenizer, time.perf_counter() - start


def time_training(backbone, batch_size, max_length, load_seconds) -> Timing:
    """A few training steps of the doctor's check (doctor.step_check) at this batch size and length."""
    device = pick_device("auto")
    check = doctor.step_check(device, backbone=backbone, steps=6, batch_size=batch_size, seq_len=max_length)
    return Timing(str(device), check["step_seconds"], load_seconds, batch_size, max_length)


def time_scoring(model, tokenizer, batch_size, max_length, method_args):
    """Seconds per example that scoring every span of removed adapters costs (removal.span_logits, the lower
    layers' states cached, as notebook 04 scores), measured on one batch of random word pieces at the study's
    length with the scored runs' Houlsby adapter (`method_args`): the second of two passes, the first paying for kernel selection. Measured, not
    derived from the step time: how a forward pass compares with a training step varies between machines.
    `model`: the backbone init has loaded already (load_timed); a copy of it gets the adapter."""
    device = pick_device("auto")
    model = adapt(copy.deepcopy(model), "houlsby", **method_args)
    batch = doctor.fixed_batch(tokenizer, batch_size, max_length, num_labels=model.config.num_labels)
    split = datasets.Dataset.from_dict({"input_ids": batch["input_ids"].tolist(),
                                        "attention_mask": batch["attention_mask"].tolist(),
                                        "labels": batch["labels"].tolist(), "length": [max_length] * batch_size})
    sample = task_registry.batches(split, tokenizer, batch_size, shuffle=False)
    for _ in range(2):
        start = time.perf_counter()
        span_logits(model, sample, device)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds = time.perf_counter() - start
    return seconds / batch_size


# ----------------------------------------------------------------------------- the study's settings


def scaled(train, factor):
    """A family's training settings with `factor` x its max_steps, validated as many times as before."""
    evaluations = train["max_steps"] // train["eval_every"]
    every = max(1, round(train["max_steps"] * factor / evaluations))
    return {**train, "max_steps": every * evaluations, "eval_every": every}


CONTROL = "retrained at twice the steps (budget_factor), every seed: do the conclusions hold with more training?"


def profile_wide(name, backbone, summary):
    """The top-level settings: name, backbone, max_length and the default profile's rates, train size and
    evaluation sets as far as the data hold them."""
    d, sizes = default(), summary.sizes
    keys = [("name", name, f"the study's name: its records go to data/results/{name}/, its figures to figures/{name}/"),
            ("backbone", backbone, "the model: default (the packaged MiniLM), a local model folder or a hub name"),
            ("max_length", summary.max_length, "tokens per example: the 95th percentile of the train texts' "
                                               "lengths, rounded up to a multiple of 8, at least 16 (longer texts "
                                               "are cut)")]
    if sizes["train"] > d.train_size:
        keys.append(("train_size", d.train_size, "train on a seeded subset of this many examples (leave out: all)"))
    if max(sizes["validation"], sizes["test"]) > EVAL_CAP:
        keys.append(("eval_size", EVAL_CAP, "validation and test are capped at this many examples (leave out: "
                                            "the whole splits)"))
    return keys + [("method_lr", dict(d.method_lr), "the rate of a method trained without a grid (others: "
                                                    "[train] lr)")]


TASK_COMMENTS = {"data": "the data file (relative to this file) or hf:NAME[:CONFIG]",
                 "text_columns": "the text column, or two for sentence pairs", "label_column": "the label column",
                 "validation": "the validation file (leave out: carved from the data by a seeded split)",
                 "test": "the test file (leave out: carved from the data by a seeded split)",
                 "name": "the task's name in run keys, tables and figures"}


def sections(name, task, backbone, summary, scale):
    """The study as [(table or None, [(key, value, comment)])]: the default profile's settings of each family a
    study plans (study_families) at `scale` (one of SCALES) on this data. `task`: the [task] table (task_table).
    One source for the file's text (toml_text) and for checking it (studies.from_dict)."""
    factor, n_seeds, methods = scale
    d = default()
    size = Scale(task["name"], factor, tuple(range(n_seeds)), methods, summary.sizes["train"], d)
    return [(None, profile_wide(name, backbone, summary)),
            ("task", [(key, value, TASK_COMMENTS[key]) for key, value in task.items()]),
            ("train", [(key, value, "") for key, value in d.train.items()]),
            *[(f.name, f.study(d.settings(f), size)) for f in study_families()]]


def as_study(parts):
    """The study as the dict tomllib would read from its text."""
    return {key: value for table, keys in parts if table is None for key, value, _ in keys} | {
        table: {key: value for key, value, _ in keys} for table, keys in parts if table is not None}


# ----------------------------------------------------------------------------- its cost

def full_plan(profile, family):
    """Every run of a family's plan once its grids are chosen (each at its first rate: the count is the same)."""
    stage_1 = planning.plan(profile, family)
    return planning.plan(profile, family, {planning.grid_id(c): c.train.lr for c in stage_1})


def scored_examples(unit, sizes):
    """How many examples a scoring unit (Family.passes) scores: validation up to its cap; the held-out
    examples, its cap (study init sets a held-out size to what the train split leaves unseen)."""
    cap = unit.spec["eval_size"] or math.inf
    return int(min(cap, sizes["validation"])) if unit.spec["split"] == "validation" else int(cap)


def estimate(profile, summary, timing):
    """(seconds, runs, scoring passes) of the study's families on this machine: Timing.run_seconds per run, and
    Timing.span_seconds per example each scoring pass its plans add (Family.passes) scores."""
    configs = [c for family in study_families() for c in full_plan(profile, family)]
    passes = scoring_passes(profile)
    if passes and timing.span_seconds is None:
        numbers = " and ".join(f"{f.number}'s" for f in study_families() if f.passes)
        raise ValueError(f"the estimate needs the seconds of {numbers} scoring passes: time them with time_scoring")
    scoring = sum(scored_examples(u, summary.sizes) * timing.span_seconds for u in passes)
    return sum(timing.run_seconds(c, summary.sizes, profile.eval_size) for c in configs) + scoring, len(configs), \
        len(passes)


def scoring_passes(profile):
    """The scoring units the study's plans will add once their runs are stored (Family.passes)."""
    return [u for f in study_families() if f.passes for u in f.passes(profile)]


# ----------------------------------------------------------------------------- the file


def toml_text(header, parts):
    """The study file: the header as comments, then each setting with its comment above it. A table value
    too long for one line becomes a sub-table ([low_resource.lr_grid], one key a line) after its table's
    other keys (TOML puts every key of a table before its sub-tables); a long list, one entry a line."""
    lines = [line for i, paragraph in enumerate(header) for line in ["#"] * bool(i) + comment(paragraph)]
    for table, keys in parts:
        lines += ["", f"[{table}]"] if table else [""]
        later = []
        for key, value, note in keys:
            text = toml_value(value)
            if isinstance(value, dict) and len(text) > WIDTH:
                later.append((key, value, note))
                continue
            if isinstance(value, list) and len(text) > WIDTH:
                text = "[\n" + "".join(f"    {toml_value(v)},\n" for v in value) + "]"
            lines += comment(note) + [f"{toml_key(key)} = {text}"]
        for key, value, note in later:
            lines += [""] + comment(note) + [f"[{table + '.' if table else ''}{toml_key(key)}]"]
            lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()]
    return "\n".join(lines) + "\n"


def header(out, summary, timing, hours, seconds, runs, passes, scale):
    """The file's opening comment, as paragraphs: what the study is and how to run it; the data; the
    machine, the estimate and the budget."""
    factor, n_seeds, methods = scale
    kind = "sentence pairs" if summary.pairs else "texts"
    splits = ", ".join(f"{split} {n:,}" for split, n in summary.sizes.items())
    return [
        f"Study {out.stem!r}: adapters on your own data, with the default profile's figure families (notebooks "
        f"04-07). Run it: python -m adapterlab regenerate --profile {out.name} --only 04,05,06,07 (notebooks 03 "
        "and 08 train on the packaged tasks). Edit any setting: every one is checked when the study is read.",
        f"The data: {len(summary.classes)} classes ({summary.balance()} of the train split), {kind}; splits "
        f"{splits}; max_length {summary.max_length}. {validation_note(summary)[0]}",
        f"Sized for --hours {hours:g} on this machine ({timing.device}): {runs} runs and {passes} scoring "
        f"pass(es) of 04's spans, about {seconds / 3600:.2f} hours (measured {timing.step_seconds:.3f} s per "
        f"training step of {timing.batch_size} examples x {timing.max_length} tokens, the length the data's "
        f"length-bucketed batches pad to on average; {timing.span_seconds:.4f} s per example to score every "
        f"span; {timing.load_seconds:.1f} s to load the backbone). Budget: {factor:g} x the default profile's steps per run, {n_seeds} "
        f"seed(s), {'every method' if methods == 'every' else 'the core methods'} of 06.",
    ]


def validation_note(summary):
    """(a sentence for the header on the validation split's size and where it comes from, a one-line warning or
    None): validation chooses every run's learning rate and best state, and on fewer than files.VALIDATION_MIN
    examples those choices are mostly its noise (files.validation_size says how a carved one is sized)."""
    n, least = summary.sizes["validation"], files.VALIDATION_MIN
    where = ("carved from the train file: a fifth of it, or 200 examples where the data allow"
             if files.carves_validation(summary.spec) else "its own file")
    sentence = f"Validation: {n:,} examples ({where}); it chooses every run's learning rate and best state."
    if n >= least:
        return sentence, None
    return sentence + f" Fewer than {least}: those choices are noisy.", (
        f"warning: the validation split has {n:,} examples, fewer than {least}: its choices of learning rate and "
        f"best state are noisy; give --validation FILE with {least} or more examples, or more data")


def comment(text, width=WIDTH):
    """Text as comment lines of at most `width` characters."""
    return [f"# {line}" for line in textwrap.wrap(text, width - 2)]


# ----------------------------------------------------------------------------- the command

def check_out(out):
    """The study file to write: a new .toml file whose stem names the study."""
    out = Path(out)
    if out.suffix != ".toml":
        raise ValueError(f"--out {out} must end in .toml (a study file)")
    if out.exists():
        raise ValueError(f"{out} exists: choose another --out, or delete it first")
    studies.check_name(out.stem, profiles.PROFILE_NAMES, f"--out {out}: the study")
    return out


def relative(path, folder):
    """`path` as the study file will name it: relative to the study file's folder."""
    return os.path.relpath(Path(path).resolve(), Path(folder).resolve())


def task_table(task, text_columns, label_column, validation, test, folder):
    """The [task] table: the files relative to the study's folder, and a name no built-in task has."""
    table = {"data": task if task.startswith(files.HF_PREFIX) else relative(task, folder),
             "text_columns": list(text_columns), "label_column": label_column}
    table |= {key: relative(value, folder) for key, value in (("validation", validation), ("test", test)) if value}
    name = studies.task_name_for(task)
    return table | {"name": name + "-data" if name in task_registry.TASKS else name}


def init(task, text_columns, label_column, out, backbone="default", hours=8.0, validation=None, test=None,
         file=None):
    """Write a study file for a data file (see the module docstring); return its path. Prints what it
    learnt and what to run next."""
    out = check_out(out)
    if not hours > 0:
        raise ValueError(f"--hours must be a positive number of hours (got {hours})")
    spec = files.spec(task, text_columns=text_columns, label_column=label_column, validation=validation, test=test)
    if not files.is_source(spec):
        raise ValueError(f"--task {task}: a study is of your own data: give a data file ({', '.join(files.FORMATS)}) "
                         "or hf:NAME")
    classes = task_registry.load_task(spec).num_labels  # the data's errors (a missing column, one class) come first
    model, tokenizer, load_seconds = load_timed(backbone, classes)
    batch_size = default().train["batch_size"]
    summary = read_data(spec, model, tokenizer, batch_size)
    timing = time_training(backbone, batch_size, summary.batch_length, load_seconds)
    scored = scoring_passes(default())  # the adapter a scoring pass scores, as the default profile trains it
    if scored:
        timing = replace(timing, span_seconds=time_scoring(model, tokenizer, batch_size, summary.batch_length,
                                                           scored[0].spec["config"]["method_args"]))
    folder = out.parent
    table = task_table(task, text_columns, label_column, validation, test, folder)
    model = relative(backbone, folder) if Path(backbone).is_dir() else backbone
    for scale in SCALES:
        parts = sections(out.stem, table, model, summary, scale)
        profile = studies.from_dict(as_study(parts), folder, profiles.Profile, profiles.PROFILE_NAMES, str(out))
        seconds, runs, passes = estimate(profile, summary, timing)
        if seconds <= hours * 3600:
            break
    else:
        raise ValueError(f"even the smallest study takes about {seconds / 3600:.1f} hours on this machine "
                         f"({timing.device}): give --hours {math.ceil(seconds / 3600)} or more, or a smaller "
                         "--backbone")
    lines = header(out, summary, timing, hours, seconds, runs, passes, scale)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(toml_text(lines, parts), encoding="utf-8")
    print("\n".join(textwrap.wrap(" ".join(lines[1:]), WIDTH)), file=file)
    warning = validation_note(summary)[1]
    if warning:
        print(warning, file=file)
    print(f"wrote {out}; next: python -m adapterlab regenerate --profile {out} --only 04,05,06,07", file=file)
    return out
