"""The workers of the stream of tasks (notebook 08): what each of its steps computes, from the step's key alone.

Three learners keep up with tasks that arrive one at a time on one backbone:

  sequential  one model fine-tuned on each new task in turn, from its previous weights, with a new head per task
              (run_sequential);
  adapters    one frozen base; per task a Houlsby adapter + LayerNorms + head, saved with save_adapter
              (run_adapter) and swapped in with load_adapter to be tested again after every arrival (run_recall);
  copies      one fully fine-tuned model per task: the sequential learner's first step on that task alone.

run_serving times what switching the served task costs either way. A worker gets the step's key (a dict of the
settings that determine the step, as adapterlab/families/stream.py plans it) and the folders of the files it
reads and writes, and returns the step's record. Whether a training step converged is the study's rule
(experiments/rules.py), which the family's step adds to the record: this layer trains and measures.

The hashes (sha256 of the frozen base's weights, of each adapter file, of the test logits) are the evidence
of exact recall: the same base and the same file must give bit-identical logits after any later arrival.
"""
import hashlib
import statistics
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from ..methods.inject import adapt
from ..methods.saving import ADAPTER_CONFIG, ADAPTER_WEIGHTS, load_adapter, save_adapter
from . import tasks as task_registry
from . import train as T
from .backbones import load_backbone

MODEL_FILE = "model.safetensors"  # a sequential/copy step's weights: "body.<name>" + "head.<task>.<name>"


@dataclass(frozen=True)
class StepSetup:
    """What a step's key fixes of its model, data and training: enough to redo its evaluation. The family's
    settings have the same fields, so either can be passed where a setup is read (Evaluator)."""
    backbone: str
    train_size: int | None = None  # examples per task (a seeded subset of its train split; None: all)
    max_length: int = 128
    eval_size: int | None = None  # validation/test examples per task (a seeded subset; None: all)
    bottleneck: int = 64  # Houlsby adapter size m
    train: dict = field(default_factory=dict)  # TrainConfig fields


def setup_of(key):
    """The StepSetup a step key fixes; a key made before one of its fields existed takes that field's default."""
    return StepSetup(backbone=key["backbone"], train_size=key.get("train_size"), max_length=key.get("max_length", 128),
                     eval_size=key.get("eval_size"), bottleneck=key.get("bottleneck", 64),
                     train=dict(key.get("train", {})))


# ----------------------------------------------------------------------------- hashing

def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def frozen_sha256(model):
    """sha256 of every frozen parameter (name, dtype, shape, bytes), in name order: the shared base."""
    h = hashlib.sha256()
    for name, p in sorted(model.named_parameters()):
        if not p.requires_grad:
            t = p.detach().cpu().contiguous()
            h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
            h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


# ----------------------------------------------------------------------------- evaluation

def task_split(s, name, seed):
    return T.cap_eval(task_registry.load_task(name, train_size=s.train_size, seed=seed), s.eval_size)


class Evaluator:
    """Encoded test splits of the stream's tasks (capped as the setup `s` says), tested on demand."""

    def __init__(self, s, tokenizer, tasks, seed):
        self.device = T.pick_device("auto")
        self.tasks, self.batches = {}, {}
        for name in tasks:
            task = task_split(s, name, seed)
            test_only = replace(task, splits={"test": task.splits["test"]})
            encoded = task_registry.encode(test_only, tokenizer, max_length=s.max_length)["test"]
            self.tasks[name] = task
            self.batches[name] = task_registry.batches(encoded, tokenizer, s.train.get("batch_size", 32), shuffle=False)

    def __call__(self, model, name):
        """{"accuracy", "correct", "classes", "logits_sha256", "examples"} of `model` on `name`'s test split."""
        task, batches = self.tasks[name], self.batches[name]
        logits = T.predict(model.to(self.device), batches, self.device)
        labels = np.asarray(batches.split["labels"])
        classes = logits.argmax(axis=1)
        logits_bytes = np.ascontiguousarray(logits, dtype=np.float32).tobytes()
        return {"accuracy": float(task.compute_metrics(logits, labels)["accuracy"]),
                "correct": T.correct_bits(classes == labels), "classes": classes.astype(np.uint8).tobytes().hex(),
                "logits_sha256": hashlib.sha256(logits_bytes).hexdigest(), "examples": int(len(labels))}


def _backbone(s):
    """The stream's backbone with a head for the tweet labels (every stream task has them)."""
    return load_backbone(s.backbone, num_labels=len(task_registry.TWEET_LABELS))


def _train_on(s, key, model, tokenizer, task, progress):
    """Train `model` on `task` at the step's rate and seed: the fields every training step records (the
    family judges its convergence from the curve and the class entropy)."""
    split = task_split(s, task, key["seed"])
    config = T.TrainConfig(**{**s.train, "lr": key["lr"], "seed": key["seed"]})
    result = T.train(model, tokenizer, split, config, max_length=s.max_length, progress=progress)
    return {"validation": result["validation"], "curve": result["curve"], "steps": result["steps"],
            "class_entropy": T.class_entropy(split.splits["train"]["label"]), "train_seconds": result["train_seconds"]}


# ----------------------------------------------------------------------------- learner 1 (and 3): full fine-tuning

class Heads:
    """The per-task classification heads of one fine-tuned body (BERT-family: model.classifier)."""

    def __init__(self, model):
        if not hasattr(model, "classifier"):
            raise ValueError(f"{type(model).__name__} has no `classifier` head; the stream needs a "
                             "BERT-family sequence classifier (backbones 'default', 'tiny' or a BERT hub id)")
        self.model, self.saved = model, {}

    def keep(self, task):
        self.saved[task] = {n: p.detach().clone() for n, p in self.model.classifier.named_parameters()}

    def use(self, task):
        """Put `task`'s head on the model; a ValueError naming the fix when this body never learnt it."""
        if task not in self.saved:
            raise ValueError(f"no head for task {task!r}: this model was trained on {list(self.saved) or 'nothing'}. "
                             "Train it on that task first (its step in stream.steps), or evaluate one of those")
        with torch.no_grad():
            for n, p in self.model.classifier.named_parameters():
                p.copy_(self.saved[task][n])


def save_model(model, heads, path):
    """Body + every head as one safetensors file: what a fine-tuned copy (one head) stores."""
    tensors = {f"body.{n}": p.detach().cpu().contiguous() for n, p in model.named_parameters()
               if not n.startswith("classifier.")}
    for task, params in heads.saved.items():
        tensors.update({f"head.{task}.{n}": p.cpu().contiguous() for n, p in params.items()})
    save_file(tensors, str(path))
    return Path(path).stat().st_size


def load_model(model, heads, path):
    tensors = load_file(str(path))
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, t in tensors.items():
            if name.startswith("body."):
                params[name.removeprefix("body.")].copy_(t)
    for name, t in tensors.items():
        if name.startswith("head."):  # "head.<task>.<weight|bias>"; task names hold no dots
            task, _, param = name.removeprefix("head.").rpartition(".")
            heads.saved.setdefault(task, {})[param] = t.clone()


def run_sequential(key, previous=None, out=None, progress=False):
    """One arrival for the sequential learner: from `previous` (the folder of the step before; None:
    the pretrained model), train key["tasks"][-1] with a new head, test every task so far."""
    s, seed, tasks = setup_of(key), key["seed"], key["tasks"]
    start = time.perf_counter()
    torch.manual_seed(seed)  # the new head starts from this seed, as in train.build
    model, tokenizer = _backbone(s)
    heads = Heads(model)
    if len(tasks) > 1:
        if previous is None or not (Path(previous) / MODEL_FILE).exists():
            raise ValueError(f"the sequential step {' > '.join(tasks)} needs the weights after "
                             f"{' > '.join(tasks[:-1])}; run that step first (it comes first in stream.steps)")
        load_model(model, heads, Path(previous) / MODEL_FILE)
    adapt(model, "full")
    new = tasks[-1]
    trained = _train_on(s, key, model, tokenizer, new, progress)
    heads.keep(new)
    evaluate = Evaluator(s, tokenizer, tasks, seed)
    tests = {}
    for task in tasks:
        heads.use(task)
        tests[task] = evaluate(model, task)
    heads.use(new)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(out) if out is not None else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        model_bytes = save_model(model, heads, folder / MODEL_FILE)
    return {"step": "sequential", "tasks": tasks, "seed": seed, "tests": tests, "model_bytes": model_bytes,
            **trained, "run_seconds": time.perf_counter() - start}


# ----------------------------------------------------------------------------- learner 2: adapters

def run_adapter(key, out, progress=False):
    """Train one task's Houlsby adapter (+ LayerNorms + head) on the frozen base, save it to `out`, test it."""
    s, seed, task_name = setup_of(key), key["seed"], key["task"]
    start = time.perf_counter()
    torch.manual_seed(seed)
    model, tokenizer = _backbone(s)
    adapt(model, "houlsby", bottleneck=s.bottleneck)
    base_before = frozen_sha256(model)
    trained = _train_on(s, key, model, tokenizer, task_name, progress)
    base_after = frozen_sha256(model)
    out = Path(out)
    save_adapter(model, out)
    test = Evaluator(s, tokenizer, [task_name], seed)(model, task_name)
    files = (ADAPTER_WEIGHTS, ADAPTER_CONFIG)
    return {"step": "adapter", "task": task_name, "seed": seed, "test": test,
            "base_sha256_before": base_before, "base_sha256_after": base_after,
            "adapter_sha256": {n: sha256_file(out / n) for n in files},
            "adapter_bytes": sum((out / n).stat().st_size for n in files),
            "trainable": sum(p.numel() for p in model.parameters() if p.requires_grad),
            **trained, "run_seconds": time.perf_counter() - start}


def run_recall(key, adapter_dirs, out=None, progress=False):
    """The adapters learner over one order: one loaded base; after each arrival, every adapter seen so
    far is swapped in from its file and tested. At the end: the frozen base's hash and the adapter
    files' hashes again, and the base's size on disk (saved once here) for the storage bill."""
    s, seed, order = setup_of(key), key["seed"], key["order"]
    start = time.perf_counter()
    model, tokenizer = _backbone(s)
    evaluate = Evaluator(s, tokenizer, order, seed)
    files_before = {t: sha256_file(Path(adapter_dirs[t]) / ADAPTER_WEIGHTS) for t in order}
    tests, base_hashes = [], []
    for time_step in range(len(order)):
        column = {}
        for task in order[:time_step + 1]:
            load_adapter(model, adapter_dirs[task])  # adapts the base on the first call, swaps afterwards
            column[task] = evaluate(model, task)
        tests.append(column)
        base_hashes.append(frozen_sha256(model))
    files_after = {t: sha256_file(Path(adapter_dirs[t]) / ADAPTER_WEIGHTS) for t in order}
    with tempfile.TemporaryDirectory() as tmp:
        base = {n: p.detach().cpu().contiguous() for n, p in model.named_parameters() if not p.requires_grad}
        save_file(base, str(Path(tmp) / "base.safetensors"))
        base_bytes = (Path(tmp) / "base.safetensors").stat().st_size
    return {"step": "recall", "order": order, "seed": seed, "tests": tests, "base_sha256": base_hashes,
            "adapter_sha256_before": files_before, "adapter_sha256_after": files_after, "base_bytes": base_bytes,
            "run_seconds": time.perf_counter() - start}


# ----------------------------------------------------------------------------- serving cost

def run_serving(key, progress=False):
    """Seconds to switch the served task: load_adapter of another task's adapter onto a loaded base
    (median of swap_repeats) vs loading another task's fine-tuned model from disk (median of
    load_repeats). The files are made here, of the stream's shapes: the time depends on their size and
    format, not on the trained values. Files are read from the OS page cache in both cases (each is
    read once before timing), so this times the swap itself, not the disk."""
    from transformers.utils import logging as hf_logging

    s = setup_of(key)
    start = time.perf_counter()  # the whole step (making the files too): its share of a from-scratch run
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # a "Loading weights" bar per timed load would drown the notebook
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            adapters, models = [], []
            for i in range(2):  # two tasks to switch between
                torch.manual_seed(i)
                model, _ = _backbone(s)
                model.save_pretrained(tmp / f"model{i}")
                adapt(model, "houlsby", bottleneck=s.bottleneck)
                adapters.append(save_adapter(model, tmp / f"adapter{i}"))
                models.append(tmp / f"model{i}")
            base, _ = _backbone(s)
            load_adapter(base, adapters[0])  # adapt once; every timed call below is a swap
            model_class = type(base)
            for folder in models:
                model_class.from_pretrained(folder)  # warm the page cache

            def timed(load, repeats):
                seconds = []
                for i in range(repeats):
                    t0 = time.perf_counter()
                    load((i + 1) % 2)
                    seconds.append(time.perf_counter() - t0)
                return seconds

            swaps = timed(lambda i: load_adapter(base, adapters[i]), key["swap_repeats"])
            loads = timed(lambda i: model_class.from_pretrained(models[i]).eval(), key["load_repeats"])
            model_bytes = sum(f.stat().st_size for f in models[0].iterdir())
            adapter_bytes = sum(f.stat().st_size for f in Path(adapters[0]).iterdir())
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    return {"step": "serving", "swap_seconds": swaps, "load_seconds": loads,
            "swap_median": statistics.median(swaps), "load_median": statistics.median(loads),
            "model_bytes": model_bytes, "adapter_bytes": adapter_bytes, "threads": torch.get_num_threads(),
            "run_seconds": time.perf_counter() - start}
