"""A study file for a data file, sized for this machine: python -m adapterlab study init.

    python -m adapterlab study init --task reviews.csv --text-column review --label-column stars \\
        --hours 8 --out reviews.toml
    python -m adapterlab regenerate --profile reviews.toml --only 04,05,06,07

init reads the data (its classes and their balance, its size, its texts' token lengths), times a few
training steps of the backbone here (doctor.step_check, the doctor's own check) and a span-scoring pass, trains
a short pilot of the reference arms to learn how many steps a run needs on this data (pilot.py), and writes a
commented study file (studies.py) with the default profile's figure families (notebooks 04-07, or those --only
names): its methods, learning-rate grids, init stds and budget controls, with the data's own max_length
(tasks.fit_max_length, or --max-length), train size and low-resource sizes, every run at the pilot's steps.

Its size is what fits --hours: the one estimate (estimate.py: every unit the plan will make, priced at the step
time measured at the length the data's length-bucketed batches pad to on average, tasks.padded_length) plus the
pilot's seconds, cut in sizing.py's order until it fits; below the smallest valid study, one line says what
would fit. A busy machine times slow, and its study comes out smaller.
Notebooks 03 and 08 train on the packaged tasks, so a study leaves them out.
"""
import copy
import math
import os
import textwrap
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path

import datasets
import numpy as np
import torch

from . import estimate, pilot as pilot_module, profiles, running, sizing, studies
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
    return sizing.study_families()


@dataclass(frozen=True)
class Scale:
    """How big a study is, as each family's `study` writes its settings: the task's name, every run's steps (at
    least the pilot's), the seeds, how far it is cut (sizing.Cut: 06's methods, 07's training sizes, the budget
    controls), the train split's size, and the default profile it starts from."""
    task: str
    steps: int
    seeds: tuple
    cut: sizing.Cut
    n_train: int
    default: object


EVAL_CAP = 2000  # larger validation/test splits are capped (a seeded subset) so evaluations stay cheap
WIDTH = 100  # of the written file's lines


# ----------------------------------------------------------------------------- the data and the machine

@dataclass(frozen=True)
class DataSummary:
    """What init learns from the data: the task as train --task names it (files.spec), its classes and
    how many train examples each has, its split sizes, the max_length its texts are cut at (--max-length, else
    `fitted`: tasks.fit_max_length), the share of the train texts each of the two cuts, and the tokens its
    length-bucketed training batches pad to on average at max_length (batch_length: what a step costs)."""
    spec: str
    classes: tuple
    counts: tuple
    sizes: dict
    max_length: int
    pairs: bool
    batch_length: int
    fitted: int
    cut_share: float
    fitted_cut_share: float

    def balance(self):
        total = sum(self.counts)
        return ", ".join(f"{c} {n / total:.1%}" for c, n in zip(self.classes, self.counts))


def read_data(spec, model, tokenizer, batch_size, max_length=None) -> DataSummary:
    """Read and check the data (tasks.load_task: a missing column, a single class are refused) and summarise;
    max_length `max_length` (refused beyond what the model reads), else fitted to the train texts under this
    backbone (tasks.fit_max_length), and the length their batches of `batch_size` pad to once cut there
    (tasks.padded_length, rounded up)."""
    task = task_registry.load_task(spec)
    counts = np.bincount(np.asarray(task.splits["train"]["label"]), minlength=task.num_labels)
    lengths = task_registry.token_lengths(task, tokenizer)
    limit = input_limit(model, tokenizer)
    if max_length is not None and limit is not None and max_length > limit:
        raise ValueError(f"--max-length {max_length} is more than this backbone reads ({limit} tokens): give at most "
                         f"{limit}, or leave it out to fit it to the texts")
    fitted = task_registry.fit_max_length(lengths, limit)
    length = max_length or fitted
    batch_length = math.ceil(task_registry.padded_length(np.minimum(lengths, length), batch_size))
    return DataSummary(spec, tuple(task.label_names), tuple(int(n) for n in counts),
                       {split: len(data) for split, data in task.splits.items()}, length,
                       len(task.text_fields) == 2, batch_length, fitted, float(np.mean(lengths > length)),
                       float(np.mean(lengths > fitted)))


def load_timed(backbone, num_labels):
    """(model, tokenizer, seconds to load the backbone): they measure the texts (read_data)."""
    start = time.perf_counter()
    model, tokenizer = load_backbone(backbone, num_labels=num_labels)
    return model, tokenizer, time.perf_counter() - start


def time_training(backbone, batch_size, max_length, load_seconds) -> Timing:
    """A few training steps of the doctor's check (doctor.step_check) at this batch size and length. The device
    is named with its model (running.machine on a CPU), so a study file says which machine set its speed."""
    device = pick_device("auto")
    check = doctor.step_check(device, backbone=backbone, steps=6, batch_size=batch_size, seq_len=max_length)
    named = str(device)
    if device.type == "cpu":
        named = f"cpu: {running.machine()}"
    elif device.type == "cuda":
        named = f"cuda: {torch.cuda.get_device_name(device)}"
    return Timing(named, check["step_seconds"], load_seconds, batch_size, max_length, backbone=backbone)


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


def at_steps(train, steps):
    """A family's training settings at `steps` per run or a few more (a whole number of evaluation intervals),
    validated as many times as the default profile's `train` is."""
    evaluations = train["max_steps"] // train["eval_every"]
    every = max(1, math.ceil(steps / evaluations))
    return {**train, "max_steps": every * evaluations, "eval_every": every}


CONTROL = "retrained at twice the steps (budget_factor), every seed: do the conclusions hold with more training?"


def control_keys(entries, scale, comment=CONTROL):
    """A family's budget-control keys as far as the study is cut (Scale.cut.controls): `entries` at every seed,
    at the first seed only (budget_control_seeds), or none."""
    if scale.cut.controls == "none":
        return [("budget_control", [], "none: cut to fit --hours (entries listed here retrain those runs at twice "
                                       "the steps, to show the conclusions hold with more training)")]
    keys = [("budget_control", entries, comment)]
    if scale.cut.controls == "first seed":
        keys.append(("budget_control_seeds", list(scale.seeds[:1]), "the seeds whose runs are controlled: the first "
                                                                    "only, cut to fit --hours"))
    return keys


def profile_wide(name, backbone, summary, max_length=None):
    """The top-level settings: name, backbone, max_length (the data's, or `max_length`) and the default profile's
    rates, train size and evaluation sets as far as the data hold them."""
    d, sizes = default(), summary.sizes
    how = (f"--max-length: it cuts {summary.cut_share:.1%} of the train texts" if summary.max_length != summary.fitted
           else "the 95th percentile of the train texts' lengths, rounded up to a multiple of 8, at least 16")
    keys = [("name", name, f"the study's name: its records go to data/results/{name}/, its figures to figures/{name}/"),
            ("backbone", backbone, "the model: default (the packaged MiniLM), a local model folder or a hub name"),
            ("max_length", max_length or summary.max_length, f"tokens per example: {how} (longer texts are cut)")]
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


def sections(name, task, backbone, summary, scale, chosen=None, max_length=None):
    """The study as [(table or None, [(key, value, comment)])]: the default profile's settings of the families
    `chosen` (None: every family a study plans, study_families) at `scale` (a Scale) on this data, its texts cut
    at `max_length` (None: the data's). `task`: the [task] table (task_table). One source for the file's text
    (toml_text) and for checking it (studies.from_dict)."""
    d = default()
    return [(None, profile_wide(name, backbone, summary, max_length)),
            ("task", [(key, value, TASK_COMMENTS[key]) for key, value in task.items()]),
            ("train", [(key, value, "") for key, value in d.train.items()]),
            *[(f.name, f.study(d.settings(f), scale)) for f in chosen or study_families()]]


SIZED_ON_COMMENTS = {
    "device": "what study init measured here, and sized this study at: the device and its model",
    "step_seconds": "one training step's seconds (a Houlsby adapter; batch_size examples of max_length tokens)",
    "load_seconds": "one load of the backbone", "batch_size": "", "max_length": "",
    "span_seconds": "one example's scoring of every span of notebook 04's layer removal", "backbone": ""}


def sized_on(timing):
    """The [sized_on] table (studies.SIZED_ON): the Timing the study was sized at, so that its page can price
    the plan at the same speed and set that estimate beside what the runs measured."""
    keys = [(f.name, getattr(timing, f.name), SIZED_ON_COMMENTS[f.name]) for f in fields(Timing)
            if getattr(timing, f.name) is not None]
    return studies.SIZED_ON, keys


def as_study(parts):
    """The study as the dict tomllib would read from its text."""
    return {key: value for table, keys in parts if table is None for key, value, _ in keys} | {
        table: {key: value for key, value, _ in keys} for table, keys in parts if table is not None}


# ----------------------------------------------------------------------------- its size

def pilot_cap(d):
    """The most steps the pilot trains: the default profile's longest run among the families a study plans."""
    return max(d.settings(f).train.get("max_steps") or 0 for f in study_families())


@dataclass(frozen=True)
class Sizer:
    """What sizing a study needs: its name, [task] table, backbone (as the file names it) and data, the machine's
    Timing, the steps every run gets (the pilot's) and the folder the study file goes to. profile() builds the
    study at a cut, price() estimates it (estimate.of: every unit its plan will make, as the dry run counts)."""
    name: str
    table: dict
    backbone: str
    summary: DataSummary
    timing: Timing
    steps: int
    folder: Path

    def parts(self, cut, chosen, max_length=None):
        scale = Scale(self.table["name"], self.steps, tuple(range(sizing.SEEDS)), cut, self.summary.sizes["train"],
                      default())
        return sections(self.name, self.table, self.backbone, self.summary, scale, chosen, max_length)

    def profile(self, cut, chosen, max_length=None):
        return studies.from_dict(as_study(self.parts(cut, chosen, max_length)), self.folder, profiles.Profile,
                                 profiles.PROFILE_NAMES, self.name)

    def price(self, cut, chosen, max_length=None):
        return estimate.of(self.profile(cut, chosen, max_length), chosen, self.timing)


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


def header(out, chosen, summary, timing, hours, found, pilot, cut, saved=None):
    """The file's opening comment, as paragraphs: what the study is and how to run it; the data and its cut;
    the machine, the estimate (`found`: estimate.Estimate, with `pilot`'s seconds) and how far the study is cut.
    `saved`: (hours at the fitted max_length, hours at this one) when --max-length cut the texts."""
    kind = "sentence pairs" if summary.pairs else "texts"
    splits = ", ".join(f"{split} {n:,}" for split, n in summary.sizes.items())
    only = sizing.numbers(chosen)
    length = f"max_length {summary.max_length} cuts {summary.cut_share:.1%} of the train texts"
    if saved:
        length += (f" (--max-length; the fitted {summary.fitted} cuts {summary.fitted_cut_share:.1%}): the study takes "
                   f"{saved[1]:.2f} h at {summary.max_length} tokens against {saved[0]:.2f} h at {summary.fitted}, so "
                   f"the cut saves {saved[0] - saved[1]:.2f} h")
    scored = (f"; {timing.span_seconds:.4f} s per example to score every span of 04"
              if timing.span_seconds is not None else "")
    return [
        f"Study {out.stem!r}: adapters on your own data, with the default profile's figure families (notebooks "
        f"{only}). Run it: python -m adapterlab regenerate --profile {out.name} --only {only} (notebooks 03 and 08 "
        "train on the packaged tasks). Edit any setting: every one is checked when the study is read.",
        f"The data: {len(summary.classes)} classes ({summary.balance()} of the train split), {kind}; splits "
        f"{splits}; {length}. {validation_note(summary)[0]}",
        f"Sized for --hours {hours:g} on this machine ({timing.device}): {found.count()} units of work "
        f"({found.by_kind()}), about {(found.seconds + pilot.seconds) / 3600:.2f} hours with the pilot (measured "
        f"{timing.step_seconds:.3f} s per training step of {timing.batch_size} examples x {timing.max_length} tokens, "
        f"the length the data's length-bucketed batches pad to on average{scored}; {timing.load_seconds:.1f} s to "
        f"load the backbone; `regenerate --dry-run` counts the same units). Steps: {pilot.text()}"
        + ("" if pilot.converged or not pilot.arms else "; runs at that cap may not converge either") + ". Seeds: "
        f"{sizing.SEEDS} per comparison. Breadth: {cut.text()} (sizing.py cuts 06's methods, then 07's sizes, then "
        "the budget controls, to fit the hours).",
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
         only=None, max_length=None, pilot=None, file=None):
    """Write a study file for a data file (see the module docstring); return its path. Prints what it learnt
    and what to run next. `only`: the families ("06,07"; None: 04-07); `max_length`: the texts' cut (None: fitted
    to them); `pilot`: a pilot.Pilot already found (None: train the pilot here)."""
    out = check_out(out)
    if not hours > 0:
        raise ValueError(f"--hours must be a positive number of hours (got {hours})")
    chosen = sizing.chosen_families(only)
    sizing.check_max_length(max_length)
    spec = files.spec(task, text_columns=text_columns, label_column=label_column, validation=validation, test=test)
    if not files.is_source(spec):
        raise ValueError(f"--task {task}: a study is of your own data: give a data file ({', '.join(files.FORMATS)}) "
                         "or hf:NAME")
    classes = task_registry.load_task(spec).num_labels  # the data's errors (a missing column, one class) come first
    model, tokenizer, load_seconds = load_timed(backbone, classes)
    batch_size = default().train["batch_size"]
    summary = read_data(spec, model, tokenizer, batch_size, max_length)
    timing = time_training(backbone, batch_size, summary.batch_length, load_seconds)
    folder = out.parent
    table = task_table(task, text_columns, label_column, validation, test, folder)
    named = relative(backbone, folder) if Path(backbone).is_dir() else backbone
    sizer = Sizer(out.stem, table, named, summary, timing, pilot_cap(default()), folder)
    first = sizer.profile(sizing.CUTS[0], study_families())
    scored = [u for f in chosen if f.passes for u in f.passes(first, None)  # the adapter a scoring pass scores
              if estimate.added_kind(u) == "scoring pass"]
    if scored:
        timing = replace(timing, span_seconds=time_scoring(model, tokenizer, batch_size, summary.batch_length,
                                                           scored[0].spec["config"]["method_args"]))
    if pilot is None:
        pilot = pilot_module.run(pilot_module.configs(first, study_families(), sizer.steps), eval_size=first.eval_size)
    sizer = replace(sizer, timing=timing, steps=pilot.steps)
    cut, _ = sizing.fit(lambda c: sizer.price(c, chosen).seconds, hours, pilot.seconds)
    if cut is None:
        raise ValueError(sizing.refusal(lambda c, fs, length: sizer.price(c, fs, length).seconds, hours, chosen,
                                        summary.max_length, pilot.seconds))
    found = sizer.price(cut, chosen)
    saved = None
    if summary.max_length != summary.fitted:
        saved = ((sizer.price(cut, chosen, summary.fitted).seconds + pilot.seconds) / 3600,
                 (found.seconds + pilot.seconds) / 3600)
    lines = header(out, chosen, summary, timing, hours, found, pilot, cut, saved)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(toml_text(lines, [*sizer.parts(cut, chosen), sized_on(timing)]), encoding="utf-8")
    print("\n".join(textwrap.wrap(" ".join(lines[1:]), WIDTH)), file=file)
    warning = validation_note(summary)[1]
    if warning:
        print(warning, file=file)
    print(f"wrote {out}; next: python -m adapterlab regenerate --profile {out} --only {sizing.numbers(chosen)}",
          file=file)
    return out
