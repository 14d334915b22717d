"""Layer removal: score a trained model with the adapters of every contiguous span of blocks removed.

    scores = removal.layer_removal_scores(model, batches, task)   # SpanScores {(i, j): metric}, .full, .correct
    logits, labels, L = removal.span_logits(model, batches)        # the same, before scoring
    record = removal.evaluate_spans(config, adapter_folder, eval_size)   # a trained run's spans, as stored

The engine behind Houlsby Fig. 6 (left/centre), beside inject.adapters_disabled, which it uses: one
forward pass per span with the span's adapters off (cached=False), or the same numbers from cached
prefixes (cached=True): the states entering each block are computed once per batch, and only the
blocks from a span's first layer up are run again. Only BERT-family encoder classifiers.
evaluate_spans is the worker of layer removal's second unit of work (its family's steps): which trained
run it ablates is the family's choice (families/layer_removal.py scored_runs), and so is the table of its
spans.
"""
import time
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import torch
import torch.nn as nn
from tqdm.auto import tqdm

from . import tasks as task_registry
from . import train as T
from ..methods.inject import adapters_disabled
from ..methods.saving import load_adapter


class SpanScores(dict):
    """{(first_layer, last_layer): score} for every contiguous span of removed adapters,
    with .full (nothing removed), .metric, .layers (number of blocks) and .correct: {span, or None
    for nothing removed: train.correct_bits of the examples it classifies right} when the metric is
    accuracy (so two spans can be compared paired by example), else {}."""

    def __init__(self, scores, full, metric, layers, correct=None):
        super().__init__(scores)
        self.full, self.metric, self.layers, self.correct = full, metric, layers, correct or {}

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

    def hidden(self, inputs, blocks, state=None):
        """The hidden state after running `blocks` from `state` (None: from the embeddings)."""
        with self._only(blocks, state):
            return self.base(**inputs).last_hidden_state

    def logits(self, inputs, blocks, state=None):
        """The classifier's logits after running `blocks` from `state` and then the head."""
        with self._only(blocks, state):
            return self.model(**inputs).logits

    @contextmanager
    def _only(self, blocks, state):
        encoder, embeddings, layers = self.base.encoder, self.base.embeddings, self.base.encoder.layer
        try:
            encoder.layer = nn.ModuleList(blocks)
            if state is not None:
                self.base.embeddings = _State(state)
            yield
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
    # per-example bits: the spans are scored on the same examples, so their differences pair by example
    correct = ({span: T.correct_bits(x.argmax(-1) == labels) for span, x in logits.items()}
               if task.metric == "accuracy" else {})
    return SpanScores(scores, full, task.metric, L, correct)


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
            states = [runner.hidden(inputs, [])]  # the embeddings' output
            for block in runner.blocks:
                states.append(runner.hidden(inputs, [block], states[-1]))
            logits[None].append(runner.logits(inputs, [], states[-1]).float().cpu())
            for i in range(L):
                state = states[i]
                for j in range(i, L):
                    with adapters_disabled(model, layers=[j]):
                        state = runner.hidden(inputs, [runner.blocks[j]], state)
                    logits[(i, j)].append(runner.logits(inputs, runner.blocks[j + 1:], state).float().cpu())
    order = torch.cat(order).numpy()
    split = batches.split
    labels = np.asarray(split["label"] if "label" in split.column_names else split["labels"])
    out = {}
    for span, parts in logits.items():
        preds = torch.cat(parts).numpy()
        out[span] = np.full((len(split), *preds.shape[1:]), np.nan, dtype=preds.dtype)
        out[span][order] = preds  # rows of the split not in `batches` stay NaN
    return out, labels, L


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


HELD_OUT = "held-out"  # the train split's examples the runs never trained on (tasks.unused)


def scored_split(config, task, split, size, seeds=None):
    """The task with only the split its spans are scored on: "validation" capped at `size` (cap_eval), or
    HELD_OUT, up to `size` examples of the train split that the seeded subsets of `seeds` (None: the run's own
    seed) left out, in the first seed's order (tasks.unused), where neither the run's state nor the run itself
    was chosen: runs of several seeds scored on one such set pair by example. The train split stays: the
    majority class is its."""
    if split == "validation":
        capped = T.cap_eval(task, size)
        return replace(capped, splits={"train": task.splits["train"], split: capped.splits[split]})
    if split != HELD_OUT:
        raise ValueError(f"spans are scored on 'validation' or {HELD_OUT!r}, not {split!r}")
    if config.train_size is None:
        raise ValueError("held-out spans need a run trained on part of its train split (train_size); "
                         "this one trained on all of it: set the family's train_size, or drop held_out")
    seeds = tuple(seeds) if seeds is not None else (config.train.seed,)
    if config.train.seed not in seeds:
        raise ValueError(f"held-out examples must avoid the run's own subset: add its seed {config.train.seed} to "
                         f"the seeds {list(seeds)} whose subsets they leave out")
    whole = task_registry.load_task(config.task, seed=config.train.seed, source=config.task_source).splits["train"]
    rest = task_registry.unused(whole, config.train_size, seeds, task.text_fields, size)
    return replace(task, splits={"train": task.splits["train"], split: rest})


def evaluate_spans(config, adapter_folder, eval_size, split="validation", progress=False, device="auto",
                   seeds=None):
    """The span record of a trained run (train.RunConfig `config`, its adapter saved in `adapter_folder`):
    every removed span scored on `split` (scored_split: validation capped at eval_size, or up to eval_size
    held-out examples that the subsets of `seeds` left out; None: the run's own), with the per-example bits of the full model, every span and the majority-class
    predictor (so each claim pairs by example), and a cached-against-naive timing on a sample of batches
    (time_span_evaluation) for notebook 04 to print."""
    start = time.perf_counter()
    model, tokenizer, task = T.build(config)
    load_adapter(model, adapter_folder)
    task = scored_split(config, task, split, eval_size, seeds)
    encoded = task_registry.encode(replace(task, splits={split: task.splits[split]}), tokenizer,
                                   max_length=config.max_length)[split]
    batches = task_registry.batches(encoded, tokenizer, config.train.batch_size, shuffle=False)
    scores = layer_removal_scores(model, batches, task, device=device, cached=True,
                                  precision=config.train.precision, progress=progress)
    seconds = time.perf_counter() - start
    labels = np.asarray(task.splits[split]["label"])
    return {
        "metric": scores.metric, "layers": scores.layers, "full": scores.full,
        "spans": [[i, j, v] for (i, j), v in sorted(scores.items())],
        "correct": {"full": scores.correct.get(None),
                    "spans": [[i, j, scores.correct[(i, j)]] for i, j in sorted(scores)] if scores.correct else [],
                    "majority": T.correct_bits(labels == task.majority_guess()) if scores.correct else None},
        "majority": task.majority_baseline(split)[task.metric],
        "eval_examples": len(encoded), "eval_seconds": seconds,
        "timing": time_span_evaluation(model, batches, device, config.train.precision),
    }
