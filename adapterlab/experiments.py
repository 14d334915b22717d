"""The four figure experiments: one function per figure family, each returning a tidy DataFrame.

    import adapterlab.experiments as ex
    df = ex.layer_removal("smoke")        # Houlsby Fig. 6 left/centre
    df = ex.init_scale("smoke")           # Houlsby Fig. 6 right
    df = ex.param_performance("smoke")    # Houlsby Figs. 3/4, Compacter's trade-off
    df = ex.low_resource("smoke")         # Compacter Fig. 4
    ex.dry_run("paper")                   # what the paper profile would train, and how much

Every function takes `profile` (a name, a Profile, or None for $ADAPTERLAB_PROFILE),
`fresh` (recompute instead of reading the result store) and `progress` (a tqdm bar
over the family's runs). Each training run goes through the result store in
data/results/<profile>/<family>.jsonl, keyed by its full config, so a second call
redraws without training. Each function also writes data/results/<profile>/<family>.csv
(the columns of DESIGN.md "Result tables", plus extra columns documented per function).

`plan(profile, family)` lists a family's training runs as train.RunConfig objects (also for
"teaching": notebook 03's runs, which have no figure family but train in sweeps too); the
store keys are `run_key(config, profile)` (the RunConfig dict, the method it resolves to and
CODE_VERSION, plus "eval_size" when the profile caps evaluation sets).
"""
import math
import os
import platform
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
from tqdm.auto import tqdm

from . import profiles as profiles_module
from . import tasks as task_registry
from . import train as T
from .backbones import load_backbone
from .inject import ADAPTER_CONFIG, adapters_disabled, load_adapter, save_adapter
from .methods import method
from .params import count_parameters
from .results import WORKERS_ENV, ResultStore, config_key

FAMILIES = ("layer_removal", "init_scale", "param_performance", "low_resource")
PLANNED = ("teaching", *FAMILIES)  # the families with a plan of runs (03's teaching runs: no figure family)
SPANS_FAMILY = "layer_removal_spans"  # store family of the span evaluations (no training)

# Columns of the CSVs: the contract (DESIGN.md "Result tables") first, extras after.
COLUMNS = {
    "layer_removal": ["task", "first_layer", "last_layer", "metric", "value"],
    "init_scale": ["task", "init_std", "seed", "metric", "value"],
    "param_performance": ["task", "method", "size", "trainable", "percent", "metric", "value",
                          "train_seconds", "peak_memory_mb"],
    "low_resource": ["task", "method", "train_size", "seed", "metric", "value"],
}
# ... and, in every CSV, these columns of the run a row comes from (DESIGN.md "Result tables")
RUN_COLUMNS = ["seed", "lr", "steps", "final_train_loss", "converged", "plateau_gain", "plateau_se", "baseline"]

# param_performance: which line of the trade-off plot a method belongs to
METHOD_FAMILY = {"houlsby": "adapters"}

# Train-split sizes of the GLUE tasks as tasks.py splits them (official train minus the
# validation carved from it: 10%, at most 2,000). Used by plan() to leave out low-resource
# sizes a task cannot provide, without loading the data.
GLUE_TRAIN_SIZES = {"glue/cola": 7696, "glue/sst2": 65349, "glue/mrpc": 3301, "glue/qqp": 361846,
                    "glue/stsb": 5174, "glue/mnli": 390702, "glue/mnli-mm": 390702, "glue/qnli": 102743,
                    "glue/rte": 2241}


# ----------------------------------------------------------------------------- profiles, configs

def _profile(profile):
    return profile if isinstance(profile, profiles_module.Profile) else profiles_module.get(profile)


def _store(profile):
    return ResultStore(profiles_module.results_dir(profile))


def _method_lr(profile, method_name, family_settings=None):
    """The learning rate of a method in this profile: the family's own "method_lr" (a short budget
    may need larger steps), else profile.method_lr[method], else train["lr"]."""
    lrs = {**profile.method_lr, **(family_settings or {}).get("method_lr", {})}
    return lrs.get(method_name, profile.train.get("lr", T.TrainConfig.lr))


def _run_config(profile, *, task, method, method_args=None, backbone=None, train_size="profile",
                family_train=None, **train_overrides):
    """A RunConfig with the profile's defaults; train_overrides, then the family's own "train"
    settings (family_train), replace TrainConfig fields."""
    train = {**profile.train, **train_overrides, **(family_train or {})}
    return T.RunConfig(
        backbone=backbone or profile.backbone, task=task, method=method, method_args=dict(method_args or {}),
        train_size=profile.train_size if train_size == "profile" else train_size,
        max_length=profile.max_length, train=T.TrainConfig(**train),
    )


def eval_size(profile, family):
    """How many validation/test examples a family evaluates on (None: all): the family's
    own "eval_size" setting, else the profile's."""
    p = _profile(profile)
    return getattr(p, family, {}).get("eval_size", p.eval_size)


# Bump when a change alters what an already-stored run would compute (where adapters sit, how they
# start, how training runs), so that old records stop matching instead of being reused silently.
# 2: BERT adapters after the sublayer's dropout; the authors' PHM init; convergence-recording training loop
CODE_VERSION = 2


def run_key(config, profile=None, family=None):
    """The result-store config of a run: the RunConfig as a dict, the full method it resolves to (so a
    changed preset default changes the key), the CODE_VERSION, plus "eval_size" when the profile (or the
    family's settings) caps the evaluation sets."""
    d = config.to_dict()
    d["method_config"] = method(config.method, **config.method_args).to_dict()
    d["code_version"] = CODE_VERSION
    cap = eval_size(profile, family) if family else _profile(profile).eval_size
    if cap is not None:
        d["eval_size"] = cap
    return d


def _layer_removal_plan(p):
    s = p.layer_removal
    lrs = s.get("lrs", (_method_lr(p, "houlsby"),))
    epochs = s.get("epochs", (p.train.get("epochs", 3),))
    return [
        _run_config(p, task=task, method="houlsby", method_args=s.get("method_args", {}), lr=lr, epochs=e,
                    family_train=s.get("train"))
        for task in s.get("tasks", p.tasks) for lr in lrs for e in epochs
    ]


def _init_scale_plan(p):
    s = p.init_scale
    return [
        _run_config(p, task=task, method="houlsby", method_args={**s.get("method_args", {}), "init_std": std},
                    lr=_method_lr(p, "houlsby"), seed=seed, epochs=_task_epochs(s, task, p.train.get("epochs", 3)),
                    family_train=s.get("train"))
        for task in s.get("tasks", p.tasks) for std in s["stds"] for seed in s.get("seeds", (0,))
    ]


def _task_epochs(s, task, default):
    epochs = s.get("epochs")
    if isinstance(epochs, dict):
        return epochs.get(task, epochs.get("default", default))
    return epochs if epochs is not None else default


def choose_lr(records):
    """The learning rate of the grid run (records at one seed) with the best validation score; the
    smaller rate on a tie. None while a grid run is missing."""
    if not records or any(r is None for r in records):
        return None
    best = max(records, key=lambda r: (r["validation"], -r["config"]["train"]["lr"]))
    return best["config"]["train"]["lr"]


def _param_performance_plan(p):
    """The runs of each settings group: s["groups"] (a list of dicts, each overriding the family's
    settings; the paper plans Houlsby's BERT panels and Compacter's T5 table this way), else s itself."""
    s = p.param_performance
    groups = [{**{k: v for k, v in s.items() if k != "groups"}, **g} for g in s["groups"]] if "groups" in s else [s]
    return [config for group in groups for config in _param_performance_group(p, group)]


def _param_performance_group(p, s):
    """Every method entry at each rate of its grid (s["lr_grid"][method], or the entry's own "lrs") with
    the first seed; then, once those runs are in the store, the other seeds at the rate chosen on
    validation (choose_lr). Without a grid: the method's one rate (_method_lr) for every seed."""
    seeds = s.get("seeds", (0,))
    store = _store(p)
    out = []
    for task in s.get("tasks", p.tasks):
        for entry in s["methods"]:  # (method, method_args) or (method, method_args, TrainConfig overrides)
            name, args, own = (*entry, {})[:3]
            own = dict(own)
            grid = own.pop("lrs", s.get("lr_grid", {}).get(name))

            def config(lr, seed):
                return _run_config(
                    p, task=task, method=name, method_args=args, backbone=s.get("backbone"),
                    train_size=s.get("train_size", "profile"), lr=lr, seed=seed,
                    epochs=_task_epochs(s, task, p.train.get("epochs", 3)),
                    family_train={**(s.get("train") or {}), **own})

            if not grid:
                out += [config(_method_lr(p, name, s), seed) for seed in seeds]
                continue
            trials = [config(lr, seeds[0]) for lr in grid]
            out += trials
            chosen = choose_lr([store.get(run_key(c, p, "param_performance"), "param_performance") for c in trials])
            if chosen is not None:
                out += [config(chosen, seed) for seed in seeds[1:]]
    return out


def _low_resource_schedule(s, size):
    """(epochs, max_steps) for one train size: s["epochs"][size] (paper) or s["steps"][size|"default"]."""
    if "epochs" in s:
        return s["epochs"][size], None
    steps = s["steps"]
    return 1, (steps.get(size, steps.get("default")) if isinstance(steps, dict) else steps)


def _low_resource_plan(p):
    """Every (size, method, seed) run. A method with a grid (s["lr_grid"][method]) first runs each rate of
    it at one size (s["lr_choice_size"]) with the first seed; once those are stored, every size and seed
    at the rate chosen on validation (choose_lr) -- the paper reports, per task, the hyper-parameters that
    were best on validation. A method without a grid: its one rate (_method_lr) at once."""
    s = p.low_resource
    seeds, store, out = s.get("seeds", (0,)), _store(p), []
    for task in s.get("tasks", p.tasks):
        sizes = [size for size in s["sizes"] if size <= GLUE_TRAIN_SIZES.get(task, math.inf)]  # RTE: 2,241

        def config(name, size, lr, seed):
            epochs, max_steps = _low_resource_schedule(s, size)
            batch = s.get("train", {}).get("batch_size", p.train.get("batch_size", 32))
            total = max_steps or math.ceil(epochs * math.ceil(size / batch))
            # evaluate about s["evaluations"] times per run, not once per (tiny) epoch
            eval_every = max(1, math.ceil(total / s.get("evaluations", 10)))
            return _run_config(
                p, task=task, method=name, method_args=s.get("method_args", {}).get(name, {}),
                backbone=s.get("backbone"), train_size=size, lr=lr, seed=seed, epochs=epochs, max_steps=max_steps,
                eval_every=eval_every, family_train=s.get("train"))

        for name in s["methods"]:
            grid = s.get("lr_grid", {}).get(name)
            if grid and s.get("lr_choice_size") not in sizes:
                raise ValueError(f"low_resource has a learning-rate grid for {name!r} but its lr_choice_size "
                                 f"{s.get('lr_choice_size')!r} is not one of its sizes {tuple(sizes)} for {task}; "
                                 "set lr_choice_size to the size at which the grid runs")
            if grid:
                trials = [config(name, s["lr_choice_size"], lr, seeds[0]) for lr in grid]
                out += trials
                lr = choose_lr([store.get(run_key(c, p, "low_resource"), "low_resource") for c in trials])
            else:
                lr, trials = _method_lr(p, name, s), []
            if lr is not None:
                out += [c for size in sizes for seed in seeds if (c := config(name, size, lr, seed)) not in trials]
    return out


def train_split_size(task):
    """Examples in a task's train split: GLUE's are known (no download); the local tasks load in a moment."""
    return GLUE_TRAIN_SIZES.get(task.partition(":")[0]) or len(task_registry.load_task(task).splits["train"])


def teaching_config(profile, method, task, lr=None, method_args=None):
    """One run of notebook 03: the profile's training settings for `method` on `task`, on the profile's
    train size (all of a smaller train split); lr and method_args (the notebook's parameters) override."""
    p = _profile(profile)
    size = p.train_size if p.train_size is not None and p.train_size < train_split_size(task) else None
    return _run_config(p, task=task, method=method, method_args=method_args, train_size=size,
                       lr=_method_lr(p, method) if lr is None else lr)


def teaching_second_task(profile, requested=None):
    """The second task of 03's adapter swap: `requested` (else the profile's), unless it is the first task
    or has another number of classes; then the first of airline, synthetic, synthetic-pair that fits."""
    p = _profile(profile)
    first = p.tasks[0]
    classes = task_registry.num_labels(first)
    candidates = [requested or p.teaching.get("second_task"), "airline", "synthetic", "synthetic-pair"]
    return next(t for t in candidates if t and t != first and task_registry.num_labels(t) == classes)


def _teaching_plan(p):
    """Notebook 03 with its default parameters: every teaching method on the first task, and the swap
    method on the second task too (both adapters kept for the swap demo: keeps_adapter)."""
    first, swap = p.tasks[0], p.teaching["swap_method"]
    configs = [teaching_config(p, m, first) for m in p.teaching["methods"]]
    for task in (first, teaching_second_task(p)):
        if (config := teaching_config(p, swap, task)) not in configs:
            configs.append(config)
    return configs


def keeps_adapter(profile, family, config):
    """Whether a run's trained adapter is saved beside its record: 04 scores its spans from it, 03 swaps it."""
    swap = _profile(profile).teaching["swap_method"]
    return family == "layer_removal" or (family == "teaching" and config.method == swap)


_PLANS = {"teaching": _teaching_plan, "layer_removal": _layer_removal_plan, "init_scale": _init_scale_plan,
          "param_performance": _param_performance_plan, "low_resource": _low_resource_plan}


def plan(profile=None, family="layer_removal"):
    """The training runs (train.RunConfig) one figure family needs in a profile, in run order.

    A plan can depend on the store: param_performance lists the extra seeds of a method only once its
    learning-rate grid runs are stored (the rate is chosen on their validation scores). So: train what
    plan() lists, then call it again; the plan is complete when it lists no run the store lacks
    (_run_plan does exactly this)."""
    if family not in _PLANS:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(PLANNED)}")
    return _PLANS[family](_profile(profile))


def dry_run(profile=None, families=PLANNED, verbose=True, file=None):
    """Print the planned runs of each family and their counts; return {family: count} (+ "total")."""
    p = _profile(profile)
    store = _store(p)
    counts = {}
    for family in families:
        configs = plan(p, family)
        counts[family] = len(configs)
        cached = sum(store.get(run_key(c, p, family), family) is not None for c in configs)
        print(f"{family}: {len(configs)} runs ({cached} already in {store.path(family)})", file=file)
        if verbose:
            for c in configs:
                print("  " + describe(c), file=file)
    counts["total"] = sum(counts[f] for f in families)
    print(f"total: {counts['total']} training runs for profile {p.name!r}", file=file)
    from .sweep import print_plan  # the plan as a table, with its cost in GPU-hours
    print_plan(p, families, file=file)
    return counts


def describe(config):
    """One line for a run: backbone, task, method + args, size, schedule."""
    t = config.train
    args = ",".join(f"{k}={v}" for k, v in config.method_args.items())
    schedule = f"steps={t.max_steps}" if t.max_steps else f"epochs={t.epochs}"
    return (f"{config.backbone} {config.task} {config.method}{'(' + args + ')' if args else ''} "
            f"train_size={config.train_size} {schedule} lr={t.lr:g} bs={t.batch_size} seed={t.seed}")


# ----------------------------------------------------------------------------- running one config

def _cap(split, n):
    return split if n is None or len(split) <= n else task_registry.subsample(split, n, task_registry.SPLIT_SEED)


def cap_eval(task, eval_size):
    """The task with validation and test cut to a fixed seeded subset of at most eval_size examples."""
    if eval_size is None:
        return task
    splits = dict(task.splits)
    for split in ("validation", "test"):
        splits[split] = _cap(splits[split], eval_size)
    return replace(task, splits=splits, note=task.note + f" Validation/test capped at {eval_size} examples.")


def machine():
    """The CPU a run was timed on (model name and the kernels torch picked for it): sessions land on
    different machines, so a from-scratch time must say where its seconds were measured."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:  # not Linux: platform's answer stands
        pass
    return f"{name} ({torch.backends.cpu.get_cpu_capability()})"


def run_one(config, eval_size=None, device="auto", progress=False, save_to=None, glue_dir=None):
    """train.run's record for one config, with evaluation sets capped at eval_size and, if save_to
    is given, the trained (best-on-validation) adapter saved there with save_adapter. run_seconds: the
    whole run (loading, training, evaluations, test), what a from-scratch regeneration pays for it;
    `threads` (torch's CPU threads) and `workers` (runs side by side, each paying its own seconds) say
    how it was timed, so run_seconds / workers is its share of a regeneration's wall time; `machine`
    says on which CPU."""
    start = time.perf_counter()
    model, tokenizer, task = T.build(config, glue_dir=glue_dir)
    task = cap_eval(task, eval_size)
    pc = count_parameters(model)
    result = T.train(model, tokenizer, task, config.train, device=device, max_length=config.max_length,
                     progress=progress)
    if save_to is not None:
        save_adapter(model, save_to)
    return {
        "method": config.method, "task": config.task, "backbone": config.backbone,
        "trainable": pc.trainable, "base_total": pc.base_total, "percent": pc.percent, "by_group": pc.by_group,
        "majority": task.majority_baseline("test")[task.metric],
        "majority_validation": task.majority_baseline("validation")[task.metric],
        **result, "run_seconds": time.perf_counter() - start, "threads": torch.get_num_threads(),
        "workers": int(os.environ.get(WORKERS_ENV, 1)), "machine": machine(), "config": config.to_dict(),
    }


def _run_all(p, family, configs, fresh, progress, save=False):
    """Records for configs through the store (in order); trains only what is missing (or all if
    fresh). save=True also keeps each run's adapter in store.checkpoint_dir(key)."""
    store, cap = _store(p), eval_size(p, family)
    records = []
    bar = tqdm(configs, desc=f"{p.name}/{family}", disable=not progress, unit="run")
    for config in bar:
        key = run_key(config, p, family)
        bar.set_postfix_str(f"{config.task} {config.method}", refresh=False)
        save_to = store.checkpoint_dir(key) if save else None
        record = store.get_or_run(
            key, lambda: run_one(config, cap, progress=progress, save_to=save_to),
            family=family, fresh=fresh)
        records.append(record)
    bar.close()
    return records


def _run_plan(p, family, fresh, progress, save=False):
    """Records of the whole plan of a family, in plan order: train what plan() lists, re-plan, and
    repeat until it lists nothing new (a plan grows as its first stage is stored)."""
    done = {}
    while True:
        configs = plan(p, family)
        todo = [c for c in configs if config_key(run_key(c, p, family)) not in done]
        if not todo:
            return [done[config_key(run_key(c, p, family))] for c in configs]
        for c, record in zip(todo, _run_all(p, family, todo, fresh, progress, save)):
            done[config_key(run_key(c, p, family))] = record


def run_columns(record):
    """The RUN_COLUMNS of a record (baseline: majority class on the split `value` is scored on is
    set by each family) and its convergence verdict, recomputed from the stored curve by
    train.convergence, so that every table applies the same rule."""
    c = record["config"]["train"]
    verdict = T.convergence(record["curve"], record.get("class_entropy"))
    return dict(seed=c["seed"], lr=c["lr"], steps=record["steps"], final_train_loss=verdict["final_train_loss"],
                converged=verdict["converged"], plateau_gain=verdict["plateau_gain"], plateau_se=verdict["plateau_se"])


def _write_csv(frame, p, family):
    path = profiles_module.results_dir(p) / f"{family}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    frame.to_csv(tmp, index=False)
    tmp.replace(path)
    return path


# ----------------------------------------------------------------------------- layer removal: evaluation

class SpanScores(dict):
    """{(first_layer, last_layer): score} for every contiguous span of removed adapters,
    with .full (nothing removed), .metric and .layers (number of blocks)."""

    def __init__(self, scores, full, metric, layers):
        super().__init__(scores)
        self.full, self.metric, self.layers = full, metric, layers

    def __repr__(self):
        return f"SpanScores({self.metric}, full={self.full:.4f}, {len(self)} spans)"


class _State(nn.Module):
    """Stands in for the embeddings: returns a given hidden state, whatever it is called with."""

    def __init__(self, state):
        super().__init__()
        self.state = state

    def forward(self, *args, **kwargs):
        return self.state


class _Runner:
    """Runs part of a BERT-family classifier: `blocks` from a given hidden state (or from the
    embeddings), by swapping the encoder's ModuleList and the embeddings module for the call.
    The model still builds its attention mask and applies its own head, as in a normal forward."""

    def __init__(self, model):
        if getattr(model.config, "is_encoder_decoder", False) or model.base_model is model:
            raise ValueError(
                "layer removal scores need an encoder classifier (e.g. BertForSequenceClassification); "
                f"got {type(model).__name__}. The Houlsby layer-removal figure uses BERT-family models.")
        base = model.base_model
        if not (hasattr(base, "embeddings") and isinstance(getattr(getattr(base, "encoder", None), "layer", None),
                                                            nn.ModuleList)):
            raise ValueError(f"{type(model).__name__} does not look like a BERT-family encoder "
                             "(base_model.embeddings and base_model.encoder.layer); cannot evaluate spans")
        self.model, self.base = model, base
        self.blocks = list(base.encoder.layer)

    def __call__(self, inputs, blocks, state=None, head=False):
        """Hidden state after `blocks` (head=False) or the logits (head=True)."""
        encoder, embeddings, layers = self.base.encoder, self.base.embeddings, self.base.encoder.layer
        try:
            encoder.layer = nn.ModuleList(blocks)
            if state is not None:
                self.base.embeddings = _State(state)
            if head:
                return self.model(**inputs).logits
            return self.base(**inputs).last_hidden_state
        finally:
            encoder.layer = layers
            self.base.embeddings = embeddings


def layer_removal_scores(model, batches, task, device="cpu", cached=True, precision="fp32", progress=False):
    """The task metric with the adapters of every contiguous span of blocks [i, j] removed.

    Returns SpanScores: {(i, j): score} for 0 <= i <= j < L (L(L+1)/2 spans) and .full,
    the score with no adapter removed. `batches`: tasks.batches(...) of an encoded split
    (as in train.evaluate). Only encoder classifiers (BERT family); ValueError otherwise.

    cached=False: one full forward per span inside adapters_disabled(model, layers=i..j).
    cached=True (same numbers, fewer block evaluations): per batch, the states entering
    every block are computed once (all adapters on); then for each start i we run the
    disabled blocks i, i+1, ... one at a time, and from the state after disabled block j
    run the remaining enabled blocks j+1.. and the head. For L=6 that is 6 + 21 + 35
    = 62 block evaluations per batch instead of 21 * 6 + 6 = 132.
    """
    logits, labels, L = span_logits(model, batches, device, cached, precision, progress)
    scores = {span: task.compute_metrics(x, labels)[task.metric] for span, x in logits.items()}
    full = scores.pop(None)
    return SpanScores(scores, full, task.metric, L)


def span_block_evaluations(n_layers):
    """Block forward passes per batch for all spans plus the unablated model: {"cached", "naive"}.

    naive: (L(L+1)/2 spans + 1) full passes of L blocks. cached: L blocks for the states entering
    each block, then for each start i and end j the disabled block j and the L-1-j enabled blocks
    above it, i.e. sum over i of (L-i)(L-i+1)/2. For L=6: 62 instead of 132.
    """
    L = n_layers
    return {"cached": L + sum((L - i) * (L - i + 1) // 2 for i in range(L)), "naive": L * (L * (L + 1) // 2 + 1)}


@torch.no_grad()
def span_logits(model, batches, device="cpu", cached=True, precision="fp32", progress=False):
    """({(i, j) or None: logits in the split's order}, labels, L): what layer_removal_scores scores."""
    device = T.pick_device(device) if isinstance(device, str) else device
    model.to(device).eval()
    runner = _Runner(model)
    L = len(runner.blocks)
    spans = [(i, j) for i in range(L) for j in range(i, L)]
    logits = {span: [] for span in [None, *spans]}
    order = []
    for batch in tqdm(batches, desc="layer removal", disable=not progress, leave=False):
        inputs = T.model_inputs(batch, device)
        inputs.pop("labels", None)
        order.append(batch["index"])
        with T.autocast(device, precision):
            if not cached:
                logits[None].append(model(**inputs).logits.float().cpu())
                for i, j in spans:
                    with adapters_disabled(model, layers=range(i, j + 1)):
                        logits[(i, j)].append(model(**inputs).logits.float().cpu())
                continue
            states = [runner(inputs, [])]  # the embeddings' output
            for block in runner.blocks:
                states.append(runner(inputs, [block], states[-1]))
            logits[None].append(runner(inputs, [], states[-1], head=True).float().cpu())
            for i in range(L):
                state = states[i]
                for j in range(i, L):
                    with adapters_disabled(model, layers=[j]):
                        state = runner(inputs, [runner.blocks[j]], state)
                    logits[(i, j)].append(runner(inputs, runner.blocks[j + 1:], state, head=True).float().cpu())
    order = torch.cat(order).numpy()
    split = batches.split
    labels = np.asarray(split["label"] if "label" in split.column_names else split["labels"])
    out = {}
    for span, parts in logits.items():
        preds = torch.cat(parts).numpy()
        out[span] = np.full((len(split), *preds.shape[1:]), np.nan, dtype=preds.dtype)
        out[span][order] = preds  # rows of the split not in `batches` stay NaN
    return out, labels, L


# ----------------------------------------------------------------------------- the four families

def _cfg(record):
    return T.RunConfig.from_dict(record["config"])


def _frame(rows, family):
    frame = pd.DataFrame(rows)
    first = COLUMNS[family] + [c for c in RUN_COLUMNS if c not in COLUMNS[family]]
    extra = [c for c in frame.columns if c not in first]
    return frame[first + extra] if len(frame) else pd.DataFrame(columns=first)


def layer_removal(profile=None, fresh=False, progress=True):
    """Houlsby Fig. 6 left/centre: remove the trained adapters of layers first..last; score on validation.

    Per task: train the Houlsby runs of plan(profile, "layer_removal") (the lr x epochs grid in
    `paper`, one run elsewhere; each run's adapter saved in the store's checkpoint folder), keep
    the best on validation, then evaluate it with every contiguous span of blocks [i, j] of
    adapters removed (layer_removal_scores, cached). Span scores are stored too (family
    "layer_removal_spans"), so a rerun neither trains nor evaluates.

    One row per span (i <= j), n(n+1)/2 rows per task for n blocks. Columns:
      task, first_layer, last_layer (0-based block indices, inclusive), metric, value
      full_value   the same model with no adapter removed (same validation examples)
      baseline     majority-class score on those validation examples
      drop         value - full_value (<= 0 when removing hurts)
      n_removed    last_layer - first_layer + 1;  n_layers: blocks in the model
      backbone, lr, steps, epochs (passes over the train set), eval_examples,
      run_key (the store key of the trained run)
    frame.attrs["timings"]: {"cached_seconds", "naive_seconds", "examples"}, all spans evaluated
    both ways on a small sample of validation batches (time_span_evaluation).
    The all-removed cell is first_layer=0, last_layer=n_layers-1; the diagonal is single layers.
    """
    p = _profile(profile)
    store, cap = _store(p), eval_size(p, "layer_removal")
    configs = plan(p, "layer_removal")
    records = _run_plan(p, "layer_removal", fresh, progress, save=True)
    rows, timings = [], []
    for task_name in dict.fromkeys(c.task for c in configs):
        candidates = [r for r in records if r["task"] == task_name]
        best = max(candidates, key=lambda r: r["validation"])
        config = _cfg(best)
        key = run_key(config, p, "layer_removal")
        span_config = {"run": key, "split": "validation", "eval_size": cap}

        def evaluate(config=config, key=key):
            checkpoint = store.checkpoint_dir(key)
            if not (checkpoint / ADAPTER_CONFIG).exists():  # record kept, weights lost: train it again
                _run_all(p, "layer_removal", [config], True, progress, save=True)
            return _evaluate_spans(config, checkpoint, cap, progress)

        spans = store.get_or_run(span_config, evaluate, family=SPANS_FAMILY, fresh=fresh)
        if spans.get("timing"):
            timings.append(spans["timing"])
        for i, j, value in spans["spans"]:
            rows.append(dict(task=task_name, first_layer=i, last_layer=j, metric=spans["metric"], value=value,
                             full_value=spans["full"], baseline=spans["majority"], drop=value - spans["full"],
                             n_removed=j - i + 1, n_layers=spans["layers"], backbone=config.backbone,
                             **run_columns(best),
                             epochs=best["steps"] * config.train.batch_size / best["train_examples"],
                             eval_examples=spans["eval_examples"], run_key=config_key(key)))
    frame = _frame(rows, "layer_removal")
    _write_csv(frame, p, "layer_removal")
    if timings:  # for the notebook: the cached evaluation against the naive loop, on a sample
        frame.attrs["timings"] = {k: sum(t[k] for t in timings) for k in ("cached_seconds", "naive_seconds",
                                                                          "examples")}
    return frame


def _evaluate_spans(config, checkpoint, cap, progress=False, device="auto"):
    """Load the saved adapter of a trained run and score every removed span on validation."""
    start = time.perf_counter()
    model, tokenizer, task = T.build(config)
    load_adapter(model, checkpoint)
    task = cap_eval(task, cap)
    only_validation = replace(task, splits={"validation": task.splits["validation"]})
    encoded = task_registry.encode(only_validation, tokenizer, max_length=config.max_length)["validation"]
    batches = task_registry.batches(encoded, tokenizer, config.train.batch_size, shuffle=False)
    scores = layer_removal_scores(model, batches, task, device=device, cached=True,
                                  precision=config.train.precision, progress=progress)
    seconds = time.perf_counter() - start
    return {
        "metric": scores.metric, "layers": scores.layers, "full": scores.full,
        "spans": [[i, j, v] for (i, j), v in sorted(scores.items())],
        "majority": task.majority_baseline("validation")[task.metric],
        "eval_examples": len(encoded), "eval_seconds": seconds,
        "timing": time_span_evaluation(model, batches, device, config.train.precision),
    }


def time_span_evaluation(model, batches, device="auto", precision="fp32", n_batches=2):
    """Seconds for all spans, cached vs naive, on n_batches mid-length batches of `batches`:
    {"cached_seconds", "naive_seconds", "examples", "speedup"} (a cheap sample for the notebook)."""
    device = T.pick_device(device) if isinstance(device, str) else device
    middle = max(0, len(batches.groups) // 2 - n_batches // 2)
    sample = task_registry.Batches(batches.split, batches.groups[middle:middle + n_batches], batches.collate)
    seconds = {}
    for cached in (True, False):
        start = time.perf_counter()
        span_logits(model, sample, device, cached=cached, precision=precision)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds[cached] = time.perf_counter() - start
    return {"cached_seconds": seconds[True], "naive_seconds": seconds[False],
            "examples": int(sum(len(g) for g in sample.groups)), "speedup": seconds[False] / seconds[True]}


def init_scale(profile=None, fresh=False, progress=True):
    """Houlsby Fig. 6 right: Houlsby adapters trained from near-identity inits of different std.

    One row per (task, init_std, seed). Columns: task, init_std, seed, metric,
    value (validation metric of the best evaluation), the RUN_COLUMNS (baseline: majority class on
    validation), then test, bottleneck, train_seconds, eval_examples, backbone.
    """
    p = _profile(profile)
    records = _run_plan(p, "init_scale", fresh, progress)
    rows = []
    for r in records:
        c = _cfg(r)
        rows.append(dict(task=r["task"], init_std=c.method_args["init_std"], metric=r["metric"],
                         value=r["validation"], **run_columns(r), baseline=r.get("majority_validation"),
                         test=r["test"], bottleneck=_method(c).bottleneck, train_seconds=r["train_seconds"],
                         eval_examples=eval_size(p, "init_scale"), backbone=r["backbone"]))
    frame = _frame(rows, "init_scale")
    _write_csv(frame, p, "init_scale")
    return frame


def _method(config):
    return method(config.method, **config.method_args)


def method_size(config):
    """The `size` of a run in param_performance: the knob that varies along its method's line.

    top-k: k (blocks trained); phm: n (Kronecker terms); every other adapter method (houlsby,
    pfeiffer, adapter-lowrank, adapterdrop, compacter, compacter++): the bottleneck m;
    full, layernorm, bitfit: None (NaN in the table).
    """
    m = _method(config)
    if m.trains == "top-k":
        return m.k
    if m.name == "phm":
        return m.n
    if m.has_adapters:
        return m.bottleneck
    return None


def method_label(config):
    """A legend label: "houlsby m=64", "top-k k=3", "phm n=4 m=24", "full"."""
    m = _method(config)
    if m.trains == "top-k":
        return f"top-k k={m.k}"
    if m.projection == "phm":
        return f"{m.name} n={m.n} m={m.bottleneck}"
    if m.has_adapters:
        return f"{m.name} m={m.bottleneck}"
    return m.name


def _entry(config):
    """What identifies a method entry of param_performance: its config without lr and seed."""
    d = config.to_dict()
    d["train"] = {k: v for k, v in d["train"].items() if k not in ("lr", "seed")}
    return config_key(d)


def param_performance(profile=None, fresh=False, progress=True):
    """Houlsby Figs. 3/4 and Compacter's trade-off: every method of the profile at the learning rate
    chosen on validation from its grid (first seed), then trained with every seed at that rate.

    One row per (task, method settings, seed) at the chosen rate. Columns: task, method, size, trainable,
    percent, metric, value (test metric of the best-on-validation state), train_seconds, peak_memory_mb,
    the RUN_COLUMNS (lr: the chosen rate; baseline: majority class on test), lr_grid (the rates tried,
    space-separated), then: family (the plot line: "adapters" for houlsby, else the method name, e.g.
    "top-k", "compacter"), label ("houlsby m=64"), validation, value_minus_full (value minus full
    fine-tuning's on the same task and seed; NaN without a full run), bottleneck, n, k, epochs_run,
    seconds_per_epoch, examples_per_second, backbone.

    `size`: top-k -> k; phm -> n; houlsby/pfeiffer/adapter-lowrank/adapterdrop/compacter/
    compacter++ -> the adapter size m (bottleneck); full/layernorm/bitfit -> NaN.
    peak_memory_mb is CUDA's max allocated on a GPU, the process RSS on CPU (coarse there).
    frame.attrs["lr_grid"]: every grid run (task, label, lr, seed, validation, value, final_train_loss,
    converged, chosen), also written to param_performance_lr_grid.csv.
    """
    p = _profile(profile)
    records = _run_plan(p, "param_performance", fresh, progress)
    rows, grid_rows = [], []
    for runs in _group(records, lambda r: _entry(_cfg(r))).values():  # entry -> its records, in plan order
        first_seed = runs[0]["config"]["train"]["seed"]
        trials = [r for r in runs if r["config"]["train"]["seed"] == first_seed]
        chosen = choose_lr(trials)
        lr_grid = " ".join(f"{r['config']['train']['lr']:g}" for r in trials)
        for r in trials:
            grid_rows.append(dict(task=r["task"], label=method_label(_cfg(r)), method=r["method"],
                                  validation=r["validation"], value=r["test"], **run_columns(r),
                                  chosen=r["config"]["train"]["lr"] == chosen))
        for r in runs:
            if r["config"]["train"]["lr"] == chosen:
                rows.append(_param_performance_row(r, lr_grid))
    frame = _frame(rows, "param_performance")
    if len(frame):
        full = frame[frame["method"] == "full"].groupby(["task", "seed"])["value"].mean()
        frame["value_minus_full"] = [v - full.get((t, s), np.nan) for t, s, v in
                                     zip(frame["task"], frame["seed"], frame["value"])]
    _write_csv(frame, p, "param_performance")
    frame.attrs["lr_grid"] = pd.DataFrame(grid_rows)
    _write_csv(frame.attrs["lr_grid"], p, "param_performance_lr_grid")
    return frame


def _param_performance_row(r, lr_grid):
    c, m = _cfg(r), _method(_cfg(r))
    epochs_run = r["steps"] * c.train.batch_size / r["train_examples"]
    return dict(
        task=r["task"], method=r["method"], size=method_size(c), trainable=r["trainable"], percent=r["percent"],
        metric=r["metric"], value=r["test"], train_seconds=r["train_seconds"],
        peak_memory_mb=r["peak_memory_mb"], **run_columns(r), baseline=r["majority"], lr_grid=lr_grid,
        family=METHOD_FAMILY.get(r["method"], r["method"]), label=method_label(c), validation=r["validation"],
        bottleneck=m.bottleneck if m.has_adapters else None, n=m.n if m.projection == "phm" and m.has_adapters
        else None, k=m.k if m.trains == "top-k" else None, epochs_run=epochs_run,
        seconds_per_epoch=r["train_seconds"] / epochs_run, examples_per_second=r["examples_per_second"],
        backbone=r["backbone"])


def low_resource(profile=None, fresh=False, progress=True):
    """Compacter Fig. 4: methods trained on nested seeded subsets of growing size.

    One row per (task, method, train_size, seed) at the method's rate (chosen on validation when the
    profile gives it a grid: _low_resource_plan). Columns: task, method, train_size, seed, metric,
    value (test metric of the state that was best on the periodic validations), the RUN_COLUMNS
    (baseline: majority class on test), then validation, label, lr_grid (the rates tried, space-separated;
    empty without a grid), epochs (passes over the subset), examples_seen, evaluations (validations
    during training), best_step (the step of the state kept), train_seconds, backbone.
    Subsets are nested: with the same seed, the 100 examples are among the 500, and so on.
    frame.attrs["lr_grid"]: the grid runs with their choice, also written to low_resource_lr_grid.csv.
    """
    p = _profile(profile)
    s = p.low_resource
    records = _run_plan(p, "low_resource", fresh, progress)
    rows, grid_rows = [], []
    for (task, name), runs in _group(records, lambda r: (r["task"], r["method"])).items():
        trials = [r for r in runs if s.get("lr_grid", {}).get(name) and _cfg(r).train_size == s["lr_choice_size"]
                  and r["config"]["train"]["seed"] == s.get("seeds", (0,))[0]]
        chosen = choose_lr(trials) if trials else runs[0]["config"]["train"]["lr"]
        lr_grid = " ".join(f"{r['config']['train']['lr']:g}" for r in trials)
        grid_rows += [dict(task=task, method=name, train_size=_cfg(r).train_size, validation=r["validation"],
                           value=r["test"], **run_columns(r), chosen=r["config"]["train"]["lr"] == chosen)
                      for r in trials]
        for r in runs:
            if r["config"]["train"]["lr"] != chosen:
                continue
            c = _cfg(r)
            best = max(r["curve"], key=lambda point: point["validation"])  # train keeps the first best
            rows.append(dict(task=task, method=name, train_size=c.train_size, metric=r["metric"],
                             value=r["test"], **run_columns(r), baseline=r["majority"], validation=r["validation"],
                             label=method_label(c), lr_grid=lr_grid,
                             epochs=r["steps"] * c.train.batch_size / r["train_examples"],
                             examples_seen=round(r["examples_per_second"] * r["train_seconds"]), evaluations=len(r["curve"]),
                             best_step=best["step"], train_seconds=r["train_seconds"], backbone=r["backbone"]))
    frame = _frame(rows, "low_resource")
    if len(frame):  # per task, by size, then the profile's method order, then seed: how the figure reads
        order = {**{t: i for i, t in enumerate(dict.fromkeys(frame["task"]))},
                 **{m: i for i, m in enumerate(s["methods"])}}
        frame = frame.sort_values(["task", "train_size", "method", "seed"], kind="stable",
                                  key=lambda col: col.map(order) if col.name in ("task", "method") else col)
        frame = frame.reset_index(drop=True)
    _write_csv(frame, p, "low_resource")
    frame.attrs["lr_grid"] = pd.DataFrame(grid_rows)
    _write_csv(frame.attrs["lr_grid"], p, "low_resource_lr_grid")
    return frame


def _group(records, key):
    """{key(record): [records]} in first-seen order."""
    groups = {}
    for r in records:
        groups.setdefault(key(r), []).append(r)
    return groups


RUNNERS = {"layer_removal": layer_removal, "init_scale": init_scale, "param_performance": param_performance,
           "low_resource": low_resource}


def run_family(family, profile=None, fresh=False, progress=True):
    """Run one family by name (what regenerate and the notebooks may call)."""
    if family not in RUNNERS:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(FAMILIES)}")
    return RUNNERS[family](profile, fresh=fresh, progress=progress)
