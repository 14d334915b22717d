"""Keep a trained model and serve it: a folder that `predict` and `evaluate` load.

    python -m adapterlab train --task reviews.csv --text-column review --label-column stars --output-dir stars
    python -m adapterlab predict stars --input new.csv --output predictions.csv
    python -m adapterlab evaluate stars --input labelled.csv --json

    model, tokenizer, info = load_trained("stars")
    table = predict(model, tokenizer, info, rows)          # rows + columns label, p_<label> per class

The folder (train_to_dir or save_trained write it; it appears whole or not at all):
    adapter.safetensors, adapter.json   what the method trained (saving.save_adapter: the adapters and head,
                                        or every changed weight for full / top-k / layernorm / bitfit)
    serving.json    what predicting needs: the base model (portable_backbone) and its fingerprint, the method,
                    the label names (class id i = label_names[i]), the user's text and label columns,
                    max_length, and the task's metrics
    metrics.json    the training run's record (validation and test numbers, curve, timings), if any

Only the adapter is saved, not the base: loading builds the base by name again (the packaged MiniLM,
the seeded tiny BERT, a hub id or a folder) on the loading machine, and load_adapter refuses a base that is
not the one trained on.
"""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm
from transformers import DataCollatorWithPadding

from . import files
from .backbones import BackboneUnavailable, load_backbone
from .tasks import MODEL_INPUTS, Task, load_task
from .train import autocast, pick_device, run
from ..methods.writing import atomic_write
from ..methods.saving import base_fingerprint, load_adapter, save_adapter

SERVING, METRICS = "serving.json", "metrics.json"
FORMAT = 2  # serving.json's layout; a later layout bumps it
LONG_FILE = 5000  # rows: from here on a progress bar shows even when stderr is not a terminal
BATCH_SIZE = 32  # as training's evaluation batches: the same batches, the same numbers


# ---------------------------------------------------------------- writing the folder

def check_output_dir(output_dir) -> Path:
    """The folder to publish into: new, or an empty one (refused before any training starts)."""
    target = Path(output_dir)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ValueError(f"--output-dir {target} already exists and is not empty: remove it or choose a new folder")
    return target


@contextlib.contextmanager
def staged(output_dir):
    """Yield a temp folder beside `output_dir`; rename it into place when the block succeeds, delete it when
    it fails, so a reader never finds a half-written model folder."""
    target = check_output_dir(output_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.partial-"))
    try:
        yield tmp
        tmp.chmod(0o755)  # mkdtemp makes 0700; a model folder is meant to be shared
        tmp.rename(target)  # atomic; replaces an empty folder
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


RELATIVE = ("./", "../")  # how a recorded base folder starts; a hub id never does


def portable_backbone(backbone: str, output_dir) -> str:
    """How serving.json names the base, so that the folder serves on another machine: a name (default,
    tiny, a hub id) as given, resolved where it is loaded; a local model folder by its path from the saved
    folder, starting with ./ or ../, so the two can move together. Never the training machine's absolute
    path."""
    if backbone == "default" or not Path(backbone).is_dir():
        return backbone
    relative = Path(os.path.relpath(Path(backbone).resolve(), Path(output_dir).resolve())).as_posix()
    return relative if relative.startswith(RELATIVE) else f"./{relative}"


def located_backbone(recorded: str, folder) -> str:
    """The base a saved folder names (portable_backbone), found on this machine."""
    if not recorded.startswith(RELATIVE):
        return recorded
    path = Path(folder) / recorded
    if not path.is_dir():
        raise FileNotFoundError(f"{folder} was trained on the model folder {recorded} (a path from {folder}), "
                                "which is not here: give the base model's folder with --backbone PATH")
    return str(path)


def _task_name(name: str) -> str:
    """The task's name without the training machine's folders: a data file by its file name."""
    return Path(name).name if files.is_source(name) and not name.startswith(files.HF_PREFIX) else name


def describe(task: Task, backbone: str, max_length: int = 128) -> dict:
    """What serving needs to know about a task and its base (serving.json without the model's part). The
    text and label columns are the task's, so evaluate reads the user's own file as training read it."""
    return {"format": FORMAT, "backbone": backbone, "task": _task_name(task.name),
            "kind": task.kind, "text_columns": list(task.text_fields), "label_column": task.label_column,
            "label_names": task.label_names, "metric": task.metric, "extra_metrics": list(task.extra_metrics),
            "max_length": max_length}


def _check_servable(model):
    if getattr(model.config, "is_encoder_decoder", False):
        raise ValueError("serving covers classifiers and regressors; text-to-text (T5) models are not served: "
                         "train on an encoder backbone (default, tiny, or a BERT-family model)")


def _write(folder, model, info, metrics):
    info = {**info, "base_fingerprint": base_fingerprint(model), "method": model.adapterlab_method.to_dict()}
    atomic_write(folder / SERVING, json.dumps(info, indent=2) + "\n")
    if metrics is not None:
        atomic_write(folder / METRICS, json.dumps(metrics, indent=1) + "\n")


def save_trained(model, task: Task, output_dir, backbone: str, max_length: int = 128, metrics=None) -> Path:
    """Save an adapted, trained model (e.g. after transformers.Trainer) as a folder predict can load.
    `backbone` is the name the base was loaded by; `max_length` the one its inputs were encoded with."""
    _check_servable(model)
    with staged(output_dir) as tmp:
        save_adapter(model, tmp)
        _write(tmp, model, describe(task, portable_backbone(backbone, output_dir), max_length), metrics)
    return Path(output_dir)


def train_to_dir(config, output_dir, device="auto", progress=True, glue_dir=None) -> dict:
    """train.run with the trained model kept in `output_dir`; returns the run's record.

    The folder is staged and loaded back (a fresh base + the saved adapter) before it is published:
    what appears under `output_dir` is known to load."""
    check_output_dir(output_dir)  # before the training, not after it
    if config.backbone == "tiny-t5":
        raise ValueError("--output-dir serves classifiers: tiny-t5 is text-to-text; use --backbone tiny")
    task = load_task(config.task, glue_dir=glue_dir, source=config.task_source)  # cached: run() reads it again
    with staged(output_dir) as tmp:
        record = run(config, device=device, progress=progress, glue_dir=glue_dir, save_to=tmp)
        model, _ = load_backbone(config.backbone, num_labels=task.num_labels, task_kind=task.kind,
                                 folder=config.backbone_folder)
        _check_servable(model)
        load_adapter(model, tmp)
        _write(tmp, model, describe(task, portable_backbone(config.backbone, output_dir), config.max_length), record)
    return record


# ---------------------------------------------------------------- loading it

def read_info(folder) -> dict:
    folder = Path(folder)
    if not (folder / SERVING).is_file():
        saved = " It holds an adapter only: save with serving.save_trained." if (folder / "adapter.json").exists() else ""
        raise FileNotFoundError(f"no trained model at {folder} (no {SERVING}).{saved} Train one with "
                                f"`python -m adapterlab train ... --output-dir {folder}`")
    return json.loads((folder / SERVING).read_text())


def load_trained(folder, backbone=None, device="cpu"):
    """(model, tokenizer, info): the base (`backbone`, default: the one trained on) + the saved adapter, in
    eval mode on `device`. A different base is refused by load_adapter, naming what differs."""
    info = read_info(folder)
    name = backbone or located_backbone(info["backbone"], folder)
    num_labels = 1 if info["label_names"] is None else len(info["label_names"])
    try:
        model, tokenizer = load_backbone(name, num_labels=num_labels, task_kind=info["kind"])
    except BackboneUnavailable as error:
        if backbone:
            raise
        raise BackboneUnavailable(f"{error} To serve {folder}, give a copy of its base with --backbone PATH.") from None
    load_adapter(model, folder)
    device = pick_device(device) if isinstance(device, str) else device
    return model.to(device).eval(), tokenizer, info


# ---------------------------------------------------------------- predicting

def length_buckets(lengths, batch_size):
    """Batches of row indices sorted by token length (little padding per batch); the caller restores order."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


@torch.no_grad()
def scores(model, tokenizer, info, rows: pd.DataFrame, batch_size=BATCH_SIZE, precision="fp32", progress=None,
           where="the input"):
    """Per row, in the input's order: class probabilities (n, classes), or scores (n,) for regression."""
    columns = info["text_columns"]
    files.check_columns(rows, columns, where, "text", fix=f"The model reads the column(s) it was trained on "
                        f"({', '.join(columns)}): rename the input's column to match")
    text = files.texts(rows, columns, where)
    encoded = tokenizer(*[text[c].tolist() for c in columns], truncation=True, max_length=info["max_length"])
    keys = [k for k in MODEL_INPUTS if k in encoded]
    collate = DataCollatorWithPadding(tokenizer)  # as training's evaluation batches pad
    device = next(model.parameters()).device
    show = progress if progress is not None else sys.stderr.isatty() or len(text) >= LONG_FILE
    bar = tqdm(total=len(text), unit="row", desc="predict", disable=not show, leave=False)
    model.eval()
    out = [None] * len(text)
    for index in length_buckets([len(ids) for ids in encoded["input_ids"]], batch_size):
        batch = collate([{k: encoded[k][i] for k in keys} for i in index])
        with autocast(device, precision):
            logits = model(**{k: v.to(device) for k, v in batch.items()}).logits.float()
        values = logits[:, 0] if info["kind"] == "regression" else torch.softmax(logits, dim=-1)
        for i, value in zip(index, values.cpu().numpy()):
            out[i] = value
        bar.update(len(index))
    bar.close()
    return np.stack(out)


PREDICTED = "predicted_"  # the prefix of an added column whose name the input already uses


def added_name(name: str, taken) -> str:
    """`name` for a column predict adds, or predicted_<name> while a column of that name is `taken`."""
    while name in taken:
        name = PREDICTED + name
    return name


def predict(model, tokenizer, info, rows: pd.DataFrame, **kwargs) -> pd.DataFrame:
    """The input's rows, every column kept, with the predicted `label` and `p_<label>` per class added
    (regression: `score`); an added column whose name the input already has is named predicted_<name>."""
    values = scores(model, tokenizer, info, rows, **kwargs)
    if info["kind"] == "regression":
        added = {"score": values}
    else:
        names = info["label_names"]
        added = {"label": [names[i] for i in values.argmax(axis=1)],
                 **{f"p_{name}": values[:, i] for i, name in enumerate(names)}}
    table = rows.copy()
    for name, column in added.items():
        table[added_name(name, table.columns)] = column
    return table


def evaluate(model, tokenizer, info, rows: pd.DataFrame, label_column=None, where="the input", **kwargs) -> dict:
    """Score a labelled table: accuracy (classification) and the task's metrics, with the row count."""
    column = label_column or info["label_column"]
    files.check_columns(rows, [column], where, "label")
    if info["kind"] == "regression":
        labels = pd.to_numeric(rows[column]).to_numpy(dtype=float)
    else:
        labels = files.label_ids(files.label_texts(rows, column, where), info["label_names"], where, column)
    values = scores(model, tokenizer, info, rows, where=where, **kwargs)
    task = Task(info["task"], tuple(info["text_columns"]), info["label_names"], info["metric"], {}, "",
                tuple(info["extra_metrics"]))
    metrics = task.compute_metrics(values[:, None] if values.ndim == 1 else values, labels)
    if task.kind == "classification" and "accuracy" not in metrics:
        metrics = {"accuracy": float(np.mean(values.argmax(axis=1) == labels)), **metrics}
    return {"examples": len(labels), "metric": task.metric, **metrics}


# ---------------------------------------------------------------- files in and out

def write_table(table: pd.DataFrame, path=None):
    """Write by the extension (.csv, .tsv, .jsonl, .parquet), atomically; None: CSV on stdout."""
    if path is None:
        table.to_csv(sys.stdout, index=False)
        return None
    suffix = files.check_format(path, writing=True)
    if suffix == ".parquet":
        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False)
        data = buffer.getvalue()
    elif suffix == ".jsonl":
        data = table.to_json(orient="records", lines=True, force_ascii=False)
    else:
        data = table.to_csv(index=False, sep="\t" if suffix == ".tsv" else ",")
    return atomic_write(path, data)
