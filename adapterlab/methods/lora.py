"""LoRA: a trainable low-rank update beside frozen linear layers, mergeable for serving.

Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models". A target nn.Linear computing
h = x W^T + b gets

    h = x W^T + b + (alpha / r) * (x A^T) B^T,     A: r x in,  B: out x r

so it trains r * (in + out) numbers per target. B starts at zero, so the adapted model starts as
the base model exactly; A starts as nn.Linear's default (Kaiming-uniform, a = sqrt(5)), as the
authors' loralib and PEFT initialise it. Hu et al. adapt the query and value projections (our
default; T5's are named q and v), and train the classifier of GLUE models beside A and B, as
PEFT's sequence-classification models do: LoRA trains A, B and the head, no LayerNorm, no bias.
No LoRA dropout (PEFT's default, lora_dropout=0).

Serving: merge() folds (alpha / r) B A into W, after which the model is a plain base model with no
added latency; unmerge() takes it out again. Merging rounds once in floating point, so merged and
unmerged outputs agree to float32 rounding, not bit for bit (tests/methods/test_baselines.py).

Like the adapters (inject.py) the update is a child module of the layer it adapts, run from a
forward hook, so the base model's parameter names stay as they were.

Targets are nn.Linear layers or GPT-2's Conv1D, which computes the same x W + b but stores W as
(in, out), the transpose of nn.Linear's (out, in) (PEFT's fan_in_fan_out). A and B are the same for
both; only merging differs: a Conv1D's weight takes the transposed update.
"""
import math
from contextlib import contextmanager

import torch
import torch.nn as nn
from transformers.pytorch_utils import Conv1D

MODULE_NAME = "lora"  # child of each adapted layer
TARGET_TYPES = (nn.Linear, Conv1D)


class LoRA(nn.Module):
    """The update (alpha / r) B A of one in -> out linear layer."""

    def __init__(self, in_features, out_features, rank, alpha):
        super().__init__()
        self.rank, self.alpha = rank, alpha
        self.scaling = alpha / rank
        self.A = nn.Parameter(torch.empty(rank, in_features))
        self.B = nn.Parameter(torch.zeros(out_features, rank))
        nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))
        self.merged = False

    def delta(self):
        """The (out, in) matrix added to the layer's weight."""
        return (self.B @ self.A) * self.scaling

    def forward(self, x):
        return (x @ self.A.T) @ self.B.T * self.scaling  # the same order of operations as PEFT

    def extra_repr(self):
        return f"r={self.rank}, alpha={self.alpha:g}" + (", merged" if self.merged else "")


def _run_lora(module, inputs, output):
    """Forward hook: the layer's output plus its low-rank update (nothing once merged)."""
    if module.lora.merged:
        return output
    return output + module.lora(inputs[0])


def features(layer):
    """(in, out) of a target layer: nn.Linear stores its weight as (out, in), Conv1D as (in, out)."""
    if isinstance(layer, Conv1D):
        return tuple(layer.weight.shape)
    return layer.in_features, layer.out_features


def weight_update(layer, lora):
    """(alpha / r) B A laid out as the layer stores its weight (transposed for a Conv1D)."""
    delta = lora.delta().to(layer.weight.dtype)
    return delta.T if isinstance(layer, Conv1D) else delta


def find_targets(model, names):
    """{module path: layer} of the body's linear layers (nn.Linear, Conv1D) whose path ends with one of names
    (a whole component or several: "value", "intermediate.dense"), as PEFT matches target_modules."""
    return {path: m for path, m in model.base_model.named_modules()
            if isinstance(m, TARGET_TYPES) and any(path == t or path.endswith("." + t) for t in names)}


def check(model, cfg):
    names = cfg.lora_targets  # inject.adapt fills in the architecture's default
    if not find_targets(model, names):
        linear = sorted({path.rsplit(".", 1)[-1] for path, m in model.base_model.named_modules()
                         if isinstance(m, TARGET_TYPES)})
        raise ValueError(
            f"lora: lora_targets={tuple(names)} match no linear layer of this {model.config.model_type} model; "
            f"choose among its linear layers' names: {linear}"
        )


def add_lora(model, cfg):
    """Give every target linear layer a LoRA update; returns {path: LoRA}."""
    added = {}
    for path, linear in find_targets(model, cfg.lora_targets).items():
        lora = LoRA(*features(linear), cfg.rank, cfg.lora_alpha)
        linear.lora = lora.to(device=linear.weight.device, dtype=linear.weight.dtype)
        linear.register_forward_hook(_run_lora)
        added[path] = lora
    return added


def lora_layers(model):
    """[(layer, LoRA)] for every adapted layer."""
    return [(m, m.lora) for m in model.modules() if isinstance(getattr(m, MODULE_NAME, None), LoRA)]


@torch.no_grad()
def merge(model):
    """W <- W + (alpha / r) B A in every adapted layer: serving at the base model's cost."""
    for linear, lora in lora_layers(model):
        if not lora.merged:
            linear.weight += weight_update(linear, lora)
            lora.merged = True
    return model


@torch.no_grad()
def unmerge(model):
    """Undo merge(): W <- W - (alpha / r) B A (equal to the old W up to one rounding)."""
    for linear, lora in lora_layers(model):
        if lora.merged:
            linear.weight -= weight_update(linear, lora)
            lora.merged = False
    return model


def is_merged(model):
    return any(lora.merged for _, lora in lora_layers(model))


@contextmanager
def merged(model):
    """Within the block the LoRA updates are folded into the weights; unmerged again on exit."""
    merge(model)
    try:
        yield model
    finally:
        unmerge(model)


@torch.no_grad()
def copy_to_peft(model, peft_model, adapter_name="default"):
    """Copy every A and B of an adapterlab LoRA model into a PEFT LoRA model built on the same base with
    the same targets, rank and alpha (PEFT names a layer "base_model.model.<our path>"; its lora_A / lora_B
    Linears hold our A / B). Returns the number of layers copied; a ValueError when some layer of ours has
    no counterpart there. For checking the two against each other (tests, benchmarks/bench_lora.py)."""
    ours = {path: module.lora for path, module in model.named_modules()
            if isinstance(getattr(module, MODULE_NAME, None), LoRA)}
    copied = 0
    for path, module in peft_model.named_modules():
        if adapter_name in getattr(module, "lora_A", {}):
            update = ours.get(path.removeprefix("base_model.model."))
            if update is not None:
                module.lora_A[adapter_name].weight.copy_(update.A)
                module.lora_B[adapter_name].weight.copy_(update.B)
                copied += 1
    if copied != len(ours):
        raise ValueError(f"copied {copied} of {len(ours)} LoRA layers into the PEFT model: build it on the same "
                         "base with the same target modules (LoraConfig(target_modules=...))")
    return copied
