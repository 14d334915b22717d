"""Put adapters into a Hugging Face model and choose what trains (saving.py saves and loads them).

Where an adapter goes is architecture knowledge; it lives in one table
(ARCHITECTURES) of module paths and nowhere else. An adapter sits at the end of a
sublayer, before the residual add (and LayerNorm). The table names the module whose
output the adapter transforms; we attach the adapter to it as a child module and
run it from a forward hook, so the base model's own modules and parameter names
stay exactly as they were.

The two papers' code differs on one detail, and we follow each on its own models:
  BERT family (Houlsby's adapter-bert): the adapter comes after the sublayer's dropout,
      LN(drop(h) + f(drop(h)) + x), so we hook the dropout module;
  T5 (Compacter's code): the adapter comes before dropout, x + drop(h + f(h)),
      so we hook the output projection.
In eval mode dropout is the identity and the two are the same function.

The baselines that add no adapter live in their own modules and are wired in here: prompt tuning
(prompt_tuning.py), Intrinsic-SAID (intrinsic.py), LoRA (lora.py); the head-only probe only
freezes. Each module checks its own settings (check) before adapt() touches the model.
"""
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, NamedTuple

import torch
import torch.nn as nn

from . import intrinsic, lora, prompt_tuning
from ..nn.layers import BottleneckAdapter, LowRankLinear, PHMLinear, make_rule
from .config import method


@dataclass(frozen=True)
class ArchSpec:
    """Module paths, relative to `model.base_model`.

    stacks:    stack name -> the ModuleList of transformer blocks
    sublayers: stack name -> {position: module inside a block whose output goes through the adapter}
    below:     modules under the first block (the embeddings), for train_lower_layernorms=False
    lora_targets: LoRA's default targets, the query and value projections (Hu et al.)
    """

    stacks: dict
    sublayers: dict
    below: tuple = ()
    lora_targets: tuple = ()


_BERT = ArchSpec(
    stacks={"encoder": "encoder.layer"},
    # adapter-bert modeling.py: dense -> dropout -> adapter -> LayerNorm(+ residual), in both sublayers
    sublayers={"encoder": {"attention": "attention.output.dropout", "ffn": "output.dropout"}},
    below=("embeddings",),
    lora_targets=("query", "value"),
)
_T5 = ArchSpec(
    stacks={"encoder": "encoder.block", "decoder": "decoder.block"},
    # Compacter's modeling_t5.py runs the adapter on the projection's output, then dropout + residual.
    # Decoder layer.1 is cross-attention: the papers put no adapter there
    sublayers={
        "encoder": {"attention": "layer.0.SelfAttention.o", "ffn": "layer.1.DenseReluDense.wo"},
        "decoder": {"attention": "layer.0.SelfAttention.o", "ffn": "layer.2.DenseReluDense.wo"},
    },
    lora_targets=("q", "v"),  # self- and cross-attention, as PEFT's T5 default
)
ARCHITECTURES = {"bert": _BERT, "roberta": _BERT, "xlm-roberta": _BERT, "t5": _T5, "mt5": _T5}

SHARED_RULE_NAME = "phm_rule"  # the one Compacter rule, registered on the model's root


def arch_spec(model):
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type not in ARCHITECTURES:
        raise ValueError(
            f"unsupported architecture {model_type or type(model).__name__!r}; adapterlab supports "
            f"{', '.join(sorted(ARCHITECTURES))} models (e.g. BertForSequenceClassification, "
            f"T5ForConditionalGeneration, T5EncoderModel)"
        )
    return ARCHITECTURES[model_type]


def blocks(model):
    """{stack name: list of blocks} for the stacks this model has (a T5EncoderModel has no decoder)."""
    spec, base = arch_spec(model), model.base_model
    out = {}
    for stack, path in spec.stacks.items():
        try:
            out[stack] = list(base.get_submodule(path))
        except AttributeError:
            continue
    return out


def insertion_points(model):
    """Yield (stack, block index, position, module whose output the adapter transforms)."""
    spec = arch_spec(model)
    for stack, stack_blocks in blocks(model).items():
        for i, block in enumerate(stack_blocks):
            for position, path in spec.sublayers[stack].items():
                yield stack, i, position, block.get_submodule(path)


def hidden_size(model):
    """d, the width every adapter maps to itself (BERT: hidden_size, T5: d_model)."""
    config = model.config
    return getattr(config, "hidden_size", None) or getattr(config, "d_model", None)


def adapters(model):
    """{(stack, block index, position): BottleneckAdapter} for the adapters in the model."""
    return {
        (stack, i, pos): module.adapter
        for stack, i, pos, module in insertion_points(model)
        if isinstance(getattr(module, "adapter", None), BottleneckAdapter)
    }


def _run_adapter(module, inputs, output):
    """Forward hook: the module's output goes through its adapter."""
    return module.adapter(output)


def _make_adapter(cfg, d, rule):
    m, std = cfg.bottleneck, cfg.init_std
    if cfg.projection == "dense":
        down = up = None
    elif cfg.projection == "lowrank":
        down = LowRankLinear(d, m, rank=cfg.rank or 1, init_std=std)
        up = LowRankLinear(m, d, rank=cfg.rank or 1, init_std=std)
    else:
        phm = dict(rank=cfg.rank, rule=rule, init=cfg.phm_init, init_std=std, rule_std=cfg.phm_init_range)
        down, up = PHMLinear(d, m, cfg.n, **phm), PHMLinear(m, d, cfg.n, **phm)
    return BottleneckAdapter(d, m, cfg.activation, std, down, up)


def lower_modules(model, cfg):
    """The modules below the first adapted block: the embeddings and the blocks without adapters."""
    below = [model.base_model.get_submodule(path) for path in arch_spec(model).below]
    for stack_blocks in blocks(model).values():
        below += stack_blocks[:cfg.dropped_blocks(len(stack_blocks))]
    return below


def _add_bias_hook(module, inputs, output):
    return output + module.bias


def add_missing_biases(model):
    """Give every bias-free linear layer and in-block norm a zero bias, as the Compacter paper does for BitFit on T5.

    Hugging Face T5 has no biases. Following the authors' modeling_t5.py (BitFit): the attention
    projections q, k, v, o (self and cross), the feed-forward wi/wo, the layer norms inside the
    blocks and the LM head get one; the stacks' final layer norms do not (their code builds them
    without the BitFit flag, which is what gives Table 1's 0.126%). Zero-initialised, so the model
    computes the same function. The new parameter is `<module>.bias`: base names are unchanged.
    nn.Linear (and nn.LayerNorm) add a registered bias themselves; T5LayerNorm gets a forward hook.
    """
    in_blocks = {id(m) for stack_blocks in blocks(model).values() for b in stack_blocks for m in b.modules()}
    for module in list(model.modules()):
        linear = isinstance(module, nn.Linear)
        norm = is_layernorm(module) and id(module) in in_blocks
        if not (linear or norm) or getattr(module, "bias", None) is not None:
            continue
        size = module.out_features if linear else module.weight.shape[0]
        module.bias = nn.Parameter(torch.zeros(size, device=module.weight.device, dtype=module.weight.dtype))
        module.adapterlab_added_bias = True  # params.py: trained, but not part of the base model
        if not isinstance(module, (nn.Linear, nn.LayerNorm)):
            module.register_forward_hook(_add_bias_hook)


def head_parameter_names(model):
    """Parameters outside the base model: the task head (a T5ForConditionalGeneration has none)."""
    base = model.base_model
    if base is model:
        return set()
    inside = {id(p) for p in base.parameters()}
    return {name for name, p in model.named_parameters() if id(p) not in inside}


def is_layernorm(module):
    return "LayerNorm" in type(module).__name__  # nn.LayerNorm, T5LayerNorm, ...


def _check(model, cfg):
    """Refuse bad settings before touching the model, so a failed adapt() changes nothing."""
    if getattr(model, "adapterlab_method", None) is not None:
        raise ValueError(
            f"this model already has the {model.adapterlab_method.name!r} method applied; "
            "start again from a fresh base model to apply another"
        )
    stacks = blocks(model)
    if not stacks:
        raise ValueError(f"found no transformer blocks in {type(model).__name__}")
    d = hidden_size(model)
    if cfg.has_adapters and cfg.projection == "phm" and d % cfg.n:
        raise ValueError(
            f"{cfg.name}: hidden size {d} is not divisible by n={cfg.n}; "
            f"choose n dividing both {d} and the bottleneck {cfg.bottleneck}"
        )
    most = min(len(b) for b in stacks.values())
    dropped = max(cfg.dropped_blocks(len(b)) for b in stacks.values())
    if cfg.has_adapters and dropped >= most:
        raise ValueError(
            f"{cfg.name}: drop_layers={dropped} leaves no adapters in a model with {most} blocks "
            f"per stack; use drop_layers < {most}"
        )
    if cfg.trains == "top-k":
        if cfg.k > most:
            raise ValueError(f"top-k: k={cfg.k} but the model has only {most} blocks per stack; use k <= {most}")
    if cfg.trains == "head" and not head_parameter_names(model):
        raise ValueError(
            f"head-only: {type(model).__name__} has no task head to train (a text-to-text T5 answers with its "
            "tied embeddings); use a model with a classification head (e.g. BertForSequenceClassification)"
        )
    if cfg.trains in BASELINES:
        BASELINES[cfg.trains].check(model, cfg)


class Baseline(NamedTuple):
    """A method that brings its own parameters instead of adapters: its module's refusal of a model it
    cannot adapt, the step that adds its parameters, and the modules that then train."""

    check: Callable  # (model, cfg) -> None, or a ValueError naming the fix
    add: Callable  # (model, cfg): adds the parameters in place
    trained: Callable  # model -> [nn.Module]


BASELINES = {  # MethodConfig.trains -> its Baseline
    "prompt": Baseline(prompt_tuning.check, prompt_tuning.add_prompt,
                       lambda model: [getattr(model.base_model, prompt_tuning.MODULE_NAME)]),
    "intrinsic": Baseline(intrinsic.check, intrinsic.add_intrinsic_said,
                          lambda model: [getattr(model.base_model, intrinsic.MODULE_NAME)]),
    "lora": Baseline(lora.check, lora.add_lora, lambda model: [update for _, update in lora.lora_layers(model)]),
}


def _set_trainable(model, cfg):
    """requires_grad exactly as the method prescribes; the head (if any) always trains."""
    model.requires_grad_(cfg.trains == "all")
    if cfg.trains == "top-k" and cfg.k > 0:
        for stack_blocks in blocks(model).values():
            for block in stack_blocks[-cfg.k:]:
                block.requires_grad_(True)
    if cfg.trains == "layernorm" or (cfg.has_adapters and cfg.train_layernorms):
        lower = set() if cfg.train_lower_layernorms else {id(m) for low in lower_modules(model, cfg)
                                                            for m in low.modules()}
        for module in model.modules():
            if is_layernorm(module) and id(module) not in lower:
                module.requires_grad_(True)
    if cfg.trains == "bias":
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.requires_grad_(True)
    if cfg.trains == "adapters":
        for adapter in adapters(model).values():
            adapter.requires_grad_(True)
        if hasattr(model, SHARED_RULE_NAME):
            getattr(model, SHARED_RULE_NAME).requires_grad_(True)
    if cfg.trains in BASELINES:
        for module in BASELINES[cfg.trains].trained(model):
            module.requires_grad_(True)
    params = dict(model.named_parameters())
    for name in head_parameter_names(model):
        params[name].requires_grad_(True)


def adapt(model, method_or_name, **overrides):
    """Apply a method to a Hugging Face model in place and return it.

    adapt(model, "houlsby", bottleneck=64) or adapt(model, al.method("compacter", n=4)).
    Inserts the method's adapters (if any) and sets requires_grad: adapters,
    LayerNorms (unless train_layernorms=False) and the head train; everything else is frozen.
    The baselines add their own parameters instead (a prompt, theta and lambda, LoRA's A and B)
    and train those and the head.
    """
    cfg = method(method_or_name, **overrides)
    if cfg.trains == "lora" and not cfg.lora_targets:  # the architecture's default (query and value)
        cfg = replace(cfg, lora_targets=tuple(arch_spec(model).lora_targets))
    _check(model, cfg)
    if cfg.trains == "bias":
        add_missing_biases(model)
    if cfg.trains in BASELINES:
        BASELINES[cfg.trains].add(model, cfg)
    if cfg.has_adapters:
        d, like = hidden_size(model), next(model.parameters())  # new weights: the model's device and dtype
        rule = None
        if cfg.projection == "phm" and cfg.shared_rule:
            rule = make_rule(cfg.n, cfg.phm_init, cfg.phm_init_range, device=like.device, dtype=like.dtype)
            model.register_parameter(SHARED_RULE_NAME, rule)
        first = {stack: cfg.dropped_blocks(len(b)) for stack, b in blocks(model).items()}
        for stack, i, position, module in insertion_points(model):
            if position in cfg.positions and i >= first[stack]:
                module.adapter = _make_adapter(cfg, d, rule).to(device=like.device, dtype=like.dtype)
                module.register_forward_hook(_run_adapter)
    model.adapterlab_method = cfg
    _set_trainable(model, cfg)
    return model


@contextmanager
def adapters_disabled(model, layers=None, stack="encoder"):
    """Within the block, the adapters of these blocks (all, if layers is None) act as the identity.

    Restored on exit, also when the block raises.
    """
    chosen = [a for (s, i, _), a in adapters(model).items() if s == stack and (layers is None or i in layers)]
    before = [a.enabled for a in chosen]
    try:
        for a in chosen:
            a.enabled = False
        yield model
    finally:
        for a, was in zip(chosen, before):
            a.enabled = was
