"""One training loop a reader can follow, its evaluation, and one whole run.

    run(RunConfig(...)) -> record:  seed -> backbone -> task -> adapt -> train -> test

The loop: AdamW on the parameters the method left trainable, linear warmup then
linear decay, gradient clipping, evaluation every epoch (or every N steps),
keep the best state on validation, test that state once at the end. The run's curve and the entropy of
its training labels are what the convergence rule judges (experiments/rules.py stamps the verdict).
"""
import math
import threading
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import psutil
import torch
from tqdm.auto import tqdm
from transformers import get_linear_schedule_with_warmup
from transformers.tokenization_utils_base import VERY_LARGE_INTEGER

from . import tasks as task_registry
from .backbones import load_backbone
from ..methods.inject import adapt
from ..methods.saving import save_adapter
from .latency import serving_latency
from ..methods.config import method
from ..methods.params import count_parameters
from ..methods.prompt_tuning import check_room, position_room

PRECISIONS = ("fp32", "bf16", "fp16")


def pick_device(name="auto"):
    """CUDA, then Apple's MPS, then CPU -- or exactly the device asked for."""
    if name != "auto":
        return torch.device(name)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def autocast(device, precision):
    """Mixed precision: bf16/fp16 autocast on CUDA, bf16 on CPU; fp32 runs as is."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {PRECISIONS}")
    if precision == "fp32":
        return nullcontext()
    if precision == "fp16" and device.type == "cpu":
        raise ValueError("fp16 autocast needs a GPU; on CPU use --precision bf16 or fp32")
    return torch.autocast(device.type, dtype=torch.bfloat16 if precision == "bf16" else torch.float16)


class PeakMemory:
    """Peak memory of a block in MB: CUDA's max allocated on a GPU, else the process RSS
    (sampled every 20 ms by a thread, since the OS keeps no resettable peak)."""

    def __init__(self, device):
        self.device, self.peak_mb = device, 0.0

    def __enter__(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            self._process, self._stop = psutil.Process(), threading.Event()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, self._process.memory_info().rss / 2**20)
            self._stop.wait(0.02)

    def __exit__(self, *exc):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self.peak_mb = torch.cuda.max_memory_allocated(self.device) / 2**20
        else:
            self._stop.set()
            self._thread.join()
            self.peak_mb = max(self.peak_mb, self._process.memory_info().rss / 2**20)


def model_inputs(batch, device):
    return {k: batch[k].to(device) for k in task_registry.MODEL_INPUTS if k in batch}


def candidate_targets(task, tokenizer):
    """Text-to-text scoring: every answer the model may give, tokenised as in training."""
    if task.kind == "regression":
        words = [f"{i / 5:.1f}" for i in range(26)]  # 0.0, 0.2, ..., 5.0
    else:
        words = list(task.label_names)
    eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.sep_token_id
    ids = [tokenizer(w, add_special_tokens=False)["input_ids"] + [eos] for w in words]
    return words, ids


@torch.no_grad()
def predict(model, batches, device, precision="fp32", candidates=None):
    """Predictions for a split in its original order: logits (classification/regression) or,
    for text-to-text, the index of the best-scoring candidate answer (rank classification)."""
    model.eval()
    out, order = [], []
    for batch in batches:
        inputs = model_inputs(batch, device)
        with autocast(device, precision):
            if candidates is None:
                inputs.pop("labels", None)
                out.append(model(**inputs).logits.float().cpu())
            else:
                out.append(score_candidates(model, inputs, candidates, device).cpu())
        order.append(batch["index"])
    preds = torch.cat(out).numpy()
    restored = np.empty_like(preds)
    restored[torch.cat(order).numpy()] = preds
    return restored


def score_candidates(model, inputs, candidates, device):
    """Sum of log-probabilities of each candidate answer; argmax over candidates."""
    inputs.pop("labels", None)
    encoder_outputs = model.get_encoder()(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
    scores = []
    for ids in candidates:
        labels = torch.tensor(ids, device=device).repeat(inputs["input_ids"].shape[0], 1)
        logits = model(encoder_outputs=encoder_outputs, attention_mask=inputs["attention_mask"], labels=labels).logits
        logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        scores.append(logp.sum(-1))
    return torch.stack(scores, dim=1).argmax(dim=1)


def evaluate(model, batches, task, device, precision="fp32", candidates=None):
    """The task's metrics on one split (`batches` of its encoded rows): {metric name: value}."""
    return evaluate_examples(model, batches, task, device, precision, candidates)[0]


def evaluate_examples(model, batches, task, device, precision="fp32", candidates=None):
    """(metrics, correct): the task's metrics on one split and which examples it got right
    (correct_bits; None unless the task's metric is accuracy: the bits are accuracy's, not MCC's or F1's)."""
    preds = predict(model, batches, device, precision, candidates)
    if candidates is not None and task.kind == "regression":
        preds = preds / 5.0  # candidate index i is the score i * 0.2
    labels = np.asarray(batches.split["label"] if "label" in batches.split.column_names else batches.split["labels"])
    metrics = task.compute_metrics(preds, labels)
    if task.kind == "regression" or task.metric != "accuracy":
        return metrics, None
    classes = preds if preds.ndim == 1 else preds.argmax(-1)  # rank-classification indices or logits
    return metrics, correct_bits(classes == labels)


def correct_bits(correct):
    """Which examples a checkpoint got right, as the hex of the packed bits (125 bytes per 1,000).

    Two checkpoints scored on the same examples differ only where one is right and the other wrong,
    so their difference has a much smaller noise than two independent scores: stats.paired_difference."""
    return np.packbits(np.asarray(correct, dtype=bool)).tobytes().hex()


def class_entropy(labels):
    """Entropy (nats) of a label distribution: the cross-entropy of always predicting the class mix."""
    p = np.bincount(np.asarray(labels, dtype=int)) / len(labels)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())



@dataclass
class TrainConfig:
    epochs: float = 3
    max_steps: int | None = None  # overrides epochs when set
    lr: float = 1e-3
    batch_size: int = 32
    warmup: float = 0.1  # a fraction of all steps (< 1) or a number of steps
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    eval_every: int | None = None  # steps between evaluations; default once per epoch
    precision: str = "fp32"
    seed: int = 0


def optimizer_for(model, cfg: TrainConfig, total_steps, device):
    """(trainable parameters, AdamW over them, its linear warm-up then decay over total_steps, the fp16 gradient
    scaler): what a run steps with (train_step)."""
    warmup = int(cfg.warmup * total_steps) if cfg.warmup < 1 else int(cfg.warmup)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=cfg.lr, weight_decay=cfg.weight_decay)
    schedule = get_linear_schedule_with_warmup(optimizer, warmup, total_steps)
    scaler = torch.amp.GradScaler(device.type, enabled=cfg.precision == "fp16")
    return trainable, optimizer, schedule, scaler


def train_step(model, batch, trainable, optimizer, schedule, scaler, cfg: TrainConfig, device):
    """One optimiser step on one batch, as every run takes it: forward under autocast, backward, clipping,
    update, schedule. It waits for the GPU before returning, so that a clock around it times the step (a
    training run's train_seconds, a timing run's seconds per step). Returns the loss (a tensor)."""
    model.train()
    with autocast(device, cfg.precision):
        loss = model(**model_inputs(batch, device)).loss
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(trainable, cfg.max_grad_norm)
    scaler.step(optimizer)
    scaler.update()
    schedule.step()
    optimizer.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return loss


def train(model, tokenizer, task, cfg: TrainConfig, device="auto", max_length=128, progress=True):
    """Train the trainable parameters of `model` on `task`; returns a dict of results.

    The best state on validation is restored at the end and tested once.
    """
    device = pick_device(device) if isinstance(device, str) else device
    model.to(device)
    text_to_text = bool(getattr(model.config, "is_encoder_decoder", False))
    encoded = task_registry.encode(task, tokenizer, max_length=max_length, text_to_text=text_to_text)
    candidates = candidate_targets(task, tokenizer)[1] if text_to_text else None
    evaluation = {s: task_registry.batches(encoded[s], tokenizer, cfg.batch_size, shuffle=False)
                  for s in ("validation", "test")}

    steps_per_epoch = math.ceil(len(encoded["train"]) / cfg.batch_size)
    total_steps = cfg.max_steps or max(1, math.ceil(cfg.epochs * steps_per_epoch))
    eval_every = cfg.eval_every or steps_per_epoch
    trainable, optimizer, schedule, scaler = optimizer_for(model, cfg, total_steps, device)

    curve, best, best_state = [], -math.inf, None
    step, epoch, seen, train_seconds, losses = 0, 0, 0, 0.0, []
    bar = tqdm(total=total_steps, desc=f"train {task.name}", disable=not progress, leave=False)
    with PeakMemory(device) as memory:
        while step < total_steps:
            for batch in task_registry.batches(encoded["train"], tokenizer, cfg.batch_size, shuffle=True,
                                               seed=cfg.seed * 100_003 + epoch):
                start = time.perf_counter()
                loss = train_step(model, batch, trainable, optimizer, schedule, scaler, cfg, device)
                train_seconds += time.perf_counter() - start
                step, seen = step + 1, seen + len(batch["index"])
                losses.append(loss.item())
                bar.update()
                if step % eval_every == 0 or step == total_steps:
                    val, correct = evaluate_examples(model, evaluation["validation"], task, device, cfg.precision,
                                                     candidates)
                    curve.append({"step": step, "epoch": step / steps_per_epoch,
                                  "train_loss": float(np.mean(losses)), "validation": val[task.metric],
                                  **({"correct": correct, "examples": len(encoded["validation"])}
                                     if correct is not None else {})})
                    losses = []
                    bar.set_postfix({task.metric: f"{val[task.metric]:.3f}"})
                    if val[task.metric] > best or best_state is None:
                        best, best_val = val[task.metric], val
                        best_state = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
                if step >= total_steps:
                    break
            epoch += 1
    bar.close()

    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in best_state.items():
            params[name].copy_(value)
    test, test_correct = evaluate_examples(model, evaluation["test"], task, device, cfg.precision, candidates)
    entropy = None if task.kind == "regression" or text_to_text else class_entropy(task.splits["train"]["label"])
    return {
        "metric": task.metric,
        "validation": best,
        "test": test[task.metric],
        "validation_metrics": best_val,
        "test_metrics": test,
        "test_correct": test_correct,  # which test examples the kept state got right (None: not accuracy)
        "test_examples": len(encoded["test"]),
        "curve": curve,
        "class_entropy": entropy,
        "steps": step,
        "train_examples": len(encoded["train"]),
        "train_seconds": train_seconds,
        "examples_per_second": seen / train_seconds,
        "peak_memory_mb": memory.peak_mb,
        "device": str(device),
    }


# Where a study's own task and model lie on this machine (RunConfig's last two fields): not what a run is.
WHERE = ("task_source", "backbone_folder")


@dataclass
class RunConfig:
    """Everything that determines one run's numbers (to_dict, whose hash is the result-store key), and where
    a study's task and model named in it lie here (WHERE), so that whoever runs it needs nothing else."""

    backbone: str = "default"
    task: str = "airline"
    method: str = "houlsby"
    method_args: dict = field(default_factory=dict)  # e.g. {"bottleneck": 64, "n": 4}
    train_size: int | None = None
    max_length: int = 128
    train: TrainConfig = field(default_factory=TrainConfig)
    # The data the task's name stands for (files.spec's form) and the model folder the backbone's name stands
    # for, when they are a study's own. Left out of to_dict and of equality: the key holds the names, which
    # are the same wherever the study is checked out, and the study's identity beside its records
    # (studies.claim) ties the task's name to its data.
    task_source: str | None = field(default=None, compare=False)
    backbone_folder: str | None = field(default=None, compare=False)

    def to_dict(self):
        """What the run is: its fields but WHERE (the store key's and every record's config)."""
        return {k: v for k, v in asdict(self).items() if k not in WHERE}

    def to_spec(self):
        """What a worker runs it from (a unit's spec): to_dict and WHERE, as plain data."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d):
        """A RunConfig from to_dict's or to_spec's answer."""
        d = dict(d)
        d["train"] = TrainConfig(**d.get("train", {}))
        return cls(**d)


def input_limit(model, tokenizer) -> int | None:
    """The most tokens one input may have: the model's position table (prompt_tuning.position_room) or its
    tokenizer's model_max_length, whichever is smaller; None when neither sets one (relative positions and
    a tokenizer that says nothing: transformers then reports VERY_LARGE_INTEGER)."""
    limits = [n for n in (position_room(model), tokenizer.model_max_length)
              if n is not None and n < VERY_LARGE_INTEGER]
    return min(limits, default=None)


def input_lengths(task, backbone: str):
    """(lengths, limit): the train texts' token lengths under the backbone's tokenizer
    (tasks.token_lengths) and the most tokens the backbone reads (input_limit); what
    tasks.fit_max_length fits max_length to."""
    model, tokenizer = load_backbone(backbone, num_labels=task.num_labels, task_kind=task.kind)
    text_to_text = bool(getattr(model.config, "is_encoder_decoder", False))
    return task_registry.token_lengths(task, tokenizer, text_to_text=text_to_text), input_limit(model, tokenizer)


def build(config: RunConfig, glue_dir=None):
    """Seeded setup of one run: (adapted model, tokenizer, task). Also used to validate configs."""
    cfg = method(config.method, **config.method_args)  # bad method settings fail before any loading
    task = task_registry.load_task(config.task, train_size=config.train_size, seed=config.train.seed,
                                   glue_dir=glue_dir, source=config.task_source)
    torch.manual_seed(config.train.seed)  # the head and the adapters start from this seed
    model, tokenizer = load_backbone(config.backbone, num_labels=task.num_labels, task_kind=task.kind,
                                     folder=config.backbone_folder)
    adapt(model, cfg)
    check_room(model, config.max_length)  # prompt tuning: prompt + inputs must fit the positions
    return model, tokenizer, task


def cap_eval(task, eval_size):
    """The task with validation and test cut to a fixed seeded subset of at most eval_size examples
    (None: the whole splits)."""
    if eval_size is None:
        return task
    splits = dict(task.splits)
    for split in ("validation", "test"):
        if len(splits[split]) > eval_size:
            splits[split] = task_registry.subsample(splits[split], eval_size, task_registry.SPLIT_SEED)
    return replace(task, splits=splits, note=task.note + f" Validation/test capped at {eval_size} examples.")


def run(config: RunConfig, device="auto", progress=True, glue_dir=None, eval_size=None, save_to=None):
    """One complete run; returns a JSON-able record (what the CLI prints and the result store keeps).
    eval_size caps the validation and test sets (cap_eval); save_to, a folder, receives the trained
    (best-on-validation) adapter (saving.save_adapter). latency_s: the trained model's serving cost
    (latency.serving_latency at the run's max_length)."""
    model, tokenizer, task = build(config, glue_dir=glue_dir)
    task = cap_eval(task, eval_size)
    pc = count_parameters(model)
    result = train(model, tokenizer, task, config.train, device=device, max_length=config.max_length,
                   progress=progress)
    if save_to is not None:
        save_adapter(model, save_to)
    latency = serving_latency(model, config.max_length)  # after training and outside its peak memory
    return {
        "method": config.method,
        "task": config.task,
        "backbone": config.backbone,
        "trainable": pc.trainable,
        "base_total": pc.base_total,
        "percent": pc.percent,
        "by_group": pc.by_group,
        "majority": task.majority_baseline("test")[task.metric],
        "majority_validation": task.majority_baseline("validation")[task.metric],
        **result,
        "latency_s": latency,
        "config": config.to_dict(),
    }
