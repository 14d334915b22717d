"""Houlsby's online setting: tasks arrive one at a time, and three learners keep up with them.

    from adapterlab.report import tables
    result = tables.get("stream", "smoke")     # runs every step the store lacks, as for any family
    result.table                               # stream.csv: each learner's test of each task after each arrival

Houlsby et al. motivate adapters by a stream of tasks (a cloud service's customers): one frozen base
model and a few task-specific parameters per task give "perfect memory" of earlier tasks and a model
that grows by a few percent per task. The three learners (LEARNERS):

  sequential  one model fine-tuned on each new task in turn, starting from its previous weights, with a
              new classification head per task (earlier heads are kept, the body moves on);
  adapters    one frozen base; per task a Houlsby adapter + LayerNorms + head, saved with save_adapter
              and swapped in (load_adapter) to evaluate that task;
  copies      one fully fine-tuned model per task: the accuracy upper bound, a whole model per task.

The family's plan is a list of steps, each a unit of work (work.Work) that the suite's runners run
like any training run (running.run_plan in process, the sweep in parallel) and store under family
"stream", keyed by everything that determines it; an interrupted run resumes and the notebook
redraws from the store:

  sequential(prefix, seed)  train the last task of `prefix` from the weights after prefix[:-1] (from
                            the pretrained model when the prefix has one task), then test every task of
                            the prefix with its own head. One step per arrival.
  adapter(task, seed)       train one task's adapter on the frozen base; save it; test it; hash the
                            frozen base before and after and the saved files.
  recall(order, seed)       one loaded base: after each arrival swap in every adapter seen so far and
                            test it; at the end re-hash the base and the adapter files (exact recall).
  serving                   seconds to switch task: swap an adapter on a loaded base vs load a model.

Work shared between learners, computed once (the store key is the same):
  - the per-task copy of task X is the sequential step with prefix (X,): fine-tuning the pretrained
    model on X alone. So the copies' matrix costs no training beyond one such step per task, and the
    first task's copy IS the sequential learner after task 1;
  - every order starts with the same task, so the orders share their first sequential step;
  - adapters do not depend on the order (each trains on the same frozen base): one adapter step per
    (task, seed) serves every order; only the cheap recall step (evaluation) runs per order.
A copy never changes after its training, so its column entries after arrival are its own test score
(no re-evaluation needed); the adapters are re-evaluated at every time step on purpose: that is the
measurement behind "perfect memory".

Weights a later step needs (the sequential model after each arrival, the adapters) are kept under
data/results/<profile>/stream_files/<step key>/ (not committed: a MiniLM copy is ~90 MB; a model goes
once the next arrival is stored); the records keep every number the notebook draws, including
the file sizes for the storage bill, and each says which step it is (`step`, its tasks, task or order,
and its seed), so stream.csv is built from the records alone (report/stream.py). A sequential step
whose predecessor's weights are gone reruns the predecessor first (its record is replaced).
"""
import hashlib
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from . import profiles as profiles_module
from . import rules
from .profiles import StreamSettings
from ..training import tasks as task_registry
from ..training import train as T
from ..training.backbones import load_backbone
from ..methods.inject import adapt
from ..methods.saving import ADAPTER_CONFIG, ADAPTER_WEIGHTS, load_adapter, save_adapter
from .work import Work

FAMILY = "stream"
LEARNERS = ("sequential", "adapters", "copies")
FILES = "stream_files"  # the store's folder of the steps' weights (work.folder), not committed
MODEL_FILE = "model.safetensors"  # a sequential/copy step's weights: "body.<name>" + "head.<task>.<name>"
# Bump when a change alters what a stored step computes, so old records stop matching.
STREAM_VERSION = 2  # 2: every training step records its convergence verdict


# ----------------------------------------------------------------------------- settings

def settings(profile):
    """The stream settings of a profile (profiles.StreamSettings, its `stream` setting)."""
    return profiles_module.resolve(profile).stream


def check_settings(s):
    """Refuse settings the stream cannot run: unknown tasks, orders that do not share the first task."""
    for task in s.tasks:
        if task.startswith(task_registry.TWEET_TASK_PREFIX):
            task_registry.tweet_task(task)  # an unknown domain: the error lists the domains
        if task.partition(":")[0] not in task_registry.TASKS:
            raise ValueError(f"unknown task {task!r} in the stream's orders; choose from {', '.join(task_registry.TASKS)}")
    firsts = {order[0] for order in s.orders}
    if len(firsts) != 1:
        raise ValueError(f"every order must start with the same task (they start with {sorted(firsts)}); "
                         "put the same first task at the head of each order")
    if any(len(set(order)) != len(order) for order in s.orders):
        raise ValueError("a task appears twice in one order; list each task once per order")
    return s


# ----------------------------------------------------------------------------- steps

def _label(kind, key):
    what = {"sequential": lambda k: " > ".join(k["tasks"]), "adapter": lambda k: k["task"],
            "recall": lambda k: " > ".join(k["order"]), "serving": lambda k: ""}[kind](key)
    seed = f" seed {key['seed']}" if "seed" in key else ""
    return f"{kind} {what}{seed}".replace("  ", " ")


def _step(kind, key, needs=(), marker=None, kept=True):
    """A step as a unit of work (work.Work): its key is also what its worker computes it from."""
    return Work(FAMILY, key, {"step": kind, "key": key}, tuple(needs), marker, kept, files_in=FILES,
                label=_label(kind, key))


def _setup(s):
    """What every step of a profile shares (part of each key)."""
    return {"backbone": s.backbone, "train_size": s.train_size, "max_length": s.max_length,
            "eval_size": s.eval_size, "train": dict(s.train), "stream_version": STREAM_VERSION}


def sequential_step(s, prefix, seed):
    """Its model file is read by the next arrival only: dropped once that one is stored (kept=False)."""
    prefix = tuple(prefix)
    needs = (sequential_step(s, prefix[:-1], seed),) if len(prefix) > 1 else ()
    return _step("sequential", {"step": "sequential", "tasks": list(prefix), "seed": seed, "lr": s.full_lr,
                                **_setup(s)}, needs, marker=MODEL_FILE, kept=False)


def adapter_step(s, task, seed):
    return _step("adapter", {"step": "adapter", "task": task, "seed": seed, "lr": s.adapter_lr,
                             "bottleneck": s.bottleneck, **_setup(s)}, marker=ADAPTER_CONFIG)


def recall_step(s, order, seed, adapter_hashes=None):
    """adapter_hashes ({task: sha256 of its adapter file}) join the key once the adapters are stored: a
    retrained adapter (new file) then needs a new recall, never an old one's verdict."""
    needs = tuple(adapter_step(s, t, seed) for t in order)
    return _step("recall", {"step": "recall", "order": list(order), "seed": seed, "bottleneck": s.bottleneck,
                            "adapters": adapter_hashes, **_setup(s)}, needs)


def serving_step(s):
    return _step("serving", {"step": "serving", "backbone": s.backbone, "bottleneck": s.bottleneck,
                             "swap_repeats": s.swap_repeats, "load_repeats": s.load_repeats,
                             "stream_version": STREAM_VERSION})


def steps(profile, store=None):
    """Every step of a profile's stream (its units of work, planning.work), in an order that runs: a
    step after the steps it needs. With a store, recall steps carry the stored adapters' file hashes
    (see recall_step)."""
    s = check_settings(settings(profile))
    out = []
    for seed in s.seeds:
        for task in s.tasks:
            out += [sequential_step(s, (task,), seed), adapter_step(s, task, seed)]  # copies + adapters
        for order in s.orders:
            out += [sequential_step(s, order[:k], seed) for k in range(2, len(order) + 1)]
        for order in s.orders:
            hashes = None
            if store is not None:
                records = [store.get(adapter_step(s, t, seed).key, FAMILY) for t in order]
                if all(records):
                    hashes = {t: r["adapter_sha256"][ADAPTER_WEIGHTS] for t, r in zip(order, records)}
            out.append(recall_step(s, order, seed, hashes))
    out.append(serving_step(s))
    return list({step.id: step for step in out}.values())  # shared steps once


# ----------------------------------------------------------------------------- hashing and files

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
    """Encoded test splits of the stream's tasks (capped as the settings say), tested on demand."""

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
    """Train `model` on `task` at the step's rate and seed: the fields every training step records,
    its convergence verdict under the project's rule (rules.convergence) among them."""
    split = task_split(s, task, key["seed"])
    config = T.TrainConfig(**{**s.train, "lr": key["lr"], "seed": key["seed"]})
    result = T.train(model, tokenizer, split, config, max_length=s.max_length, progress=progress)
    entropy = T.class_entropy(split.splits["train"]["label"])
    return {"validation": result["validation"], "curve": result["curve"], "steps": result["steps"],
            **rules.convergence(result["curve"], entropy), "class_entropy": entropy,
            "train_seconds": result["train_seconds"]}


def _key_settings(key):
    """The StreamSettings fields a step key fixes (enough to rebuild its evaluation)."""
    return StreamSettings(orders=(), backbone=key["backbone"], train_size=key.get("train_size"),
                          max_length=key.get("max_length", 128), eval_size=key.get("eval_size"),
                          bottleneck=key.get("bottleneck", 64), train=dict(key.get("train", {})))


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
    s, seed, tasks = _key_settings(key), key["seed"], key["tasks"]
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
    s, seed, task_name = _key_settings(key), key["seed"], key["task"]
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
    s, seed, order = _key_settings(key), key["seed"], key["order"]
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

    s = _key_settings(key)
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


# ----------------------------------------------------------------------------- the steps' workers

# step -> its worker, called by running.execute with the step's spec, the folders of the files of its
# needs (in the order of step.needs) and the folder for its own files
STEPS = {
    "sequential": lambda spec, needs, out: run_sequential(spec["key"], needs[0] if needs else None, out),
    "adapter": lambda spec, needs, out: run_adapter(spec["key"], out),
    "recall": lambda spec, needs, out: run_recall(spec["key"], dict(zip(spec["key"]["order"], needs))),
    "serving": lambda spec, needs, out: run_serving(spec["key"]),
}


# ----------------------------------------------------------------------------- names

def order_name(order):
    return " > ".join(short_name(t) for t in order)


def short_name(task):
    return task.removeprefix(task_registry.TWEET_TASK_PREFIX)
