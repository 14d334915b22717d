"""Put adapters into a Hugging Face model, choose what trains, and save/load adapters.

Where an adapter goes is architecture knowledge; it lives in one table
(ARCHITECTURES) of module paths and nowhere else. An adapter sits on the output
of a sublayer's output projection -- after the projection, before the residual
add and LayerNorm -- so we attach it to that nn.Linear as a child module and run
it from a forward hook. The base model's own modules and parameter names stay
exactly as they were.
"""
import json
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
from safetensors.torch import load_file, save_file

from .layers import BottleneckAdapter, LowRankLinear, PHMLinear, make_rule
from .methods import MethodConfig, method


@dataclass(frozen=True)
class ArchSpec:
    """Module paths, relative to `model.base_model`.

    stacks:    stack name -> the ModuleList of transformer blocks
    sublayers: stack name -> {position: output projection inside a block}
    """

    stacks: dict
    sublayers: dict


_BERT = ArchSpec(
    stacks={"encoder": "encoder.layer"},
    sublayers={"encoder": {"attention": "attention.output.dense", "ffn": "output.dense"}},
)
_T5 = ArchSpec(
    stacks={"encoder": "encoder.block", "decoder": "decoder.block"},
    # decoder layer.1 is cross-attention: the papers put no adapter there
    sublayers={
        "encoder": {"attention": "layer.0.SelfAttention.o", "ffn": "layer.1.DenseReluDense.wo"},
        "decoder": {"attention": "layer.0.SelfAttention.o", "ffn": "layer.2.DenseReluDense.wo"},
    },
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


def sublayer_outputs(model):
    """Yield (stack, block index, position, output projection) for every insertion point."""
    spec = arch_spec(model)
    for stack, stack_blocks in blocks(model).items():
        for i, block in enumerate(stack_blocks):
            for position, path in spec.sublayers[stack].items():
                yield stack, i, position, block.get_submodule(path)


def adapters(model):
    """{(stack, block index, position): BottleneckAdapter} for the adapters in the model."""
    return {
        (stack, i, pos): proj.adapter
        for stack, i, pos, proj in sublayer_outputs(model)
        if isinstance(getattr(proj, "adapter", None), BottleneckAdapter)
    }


def _run_adapter(module, inputs, output):
    """Forward hook: the sublayer's output goes through its adapter."""
    return module.adapter(output)


def _make_adapter(cfg, d, rule):
    m, std = cfg.bottleneck, cfg.init_std
    if cfg.projection == "dense":
        down = up = None
    elif cfg.projection == "lowrank":
        down = LowRankLinear(d, m, rank=cfg.rank or 1, init_std=std)
        up = LowRankLinear(m, d, rank=cfg.rank or 1, init_std=std)
    else:
        down = PHMLinear(d, m, cfg.n, rank=cfg.rank, rule=rule, init_std=std)
        up = PHMLinear(m, d, cfg.n, rank=cfg.rank, rule=rule, init_std=std)
    return BottleneckAdapter(d, m, cfg.activation, std, down, up)


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
    if cfg.projection == "phm":
        for _, _, _, proj in sublayer_outputs(model):
            if proj.out_features % cfg.n:
                raise ValueError(
                    f"{cfg.name}: hidden size {proj.out_features} is not divisible by n={cfg.n}; "
                    f"choose n dividing both {proj.out_features} and the bottleneck {cfg.bottleneck}"
                )
    most = min(len(b) for b in stacks.values())
    if cfg.has_adapters and cfg.drop_layers >= most:
        raise ValueError(
            f"{cfg.name}: drop_layers={cfg.drop_layers} leaves no adapters in a model with {most} blocks "
            f"per stack; use drop_layers < {most}"
        )
    if cfg.trains == "top-k":
        if cfg.k > most:
            raise ValueError(f"top-k: k={cfg.k} but the model has only {most} blocks per stack; use k <= {most}")
    if cfg.trains == "bias":
        head = head_parameter_names(model)
        if not any(n.endswith("bias") for n, _ in model.named_parameters() if n not in head):
            raise ValueError(
                f"bitfit trains the biases, but this {model.config.model_type} model has none "
                "(T5 uses no biases); choose another method, e.g. layernorm or compacter"
            )


def _set_trainable(model, cfg):
    """requires_grad exactly as the method prescribes; the head (if any) always trains."""
    model.requires_grad_(cfg.trains == "all")
    if cfg.trains == "top-k" and cfg.k > 0:
        for stack_blocks in blocks(model).values():
            for block in stack_blocks[-cfg.k:]:
                block.requires_grad_(True)
    if cfg.trains in ("layernorm", "adapters"):
        for module in model.modules():
            if is_layernorm(module):
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
    params = dict(model.named_parameters())
    for name in head_parameter_names(model):
        params[name].requires_grad_(True)


def adapt(model, method_or_name, **overrides):
    """Apply a method to a Hugging Face model in place and return it.

    adapt(model, "houlsby", bottleneck=64) or adapt(model, al.method("compacter", n=4)).
    Inserts the method's adapters (if any) and sets requires_grad: adapters,
    LayerNorms and the head train; everything else is frozen.
    """
    cfg = method(method_or_name, **overrides)
    _check(model, cfg)
    if cfg.has_adapters:
        rule = None
        for stack, i, position, proj in sublayer_outputs(model):
            if position not in cfg.positions or i < cfg.drop_layers:
                continue
            if cfg.projection == "phm" and cfg.shared_rule and rule is None:
                rule = make_rule(cfg.n, device=proj.weight.device, dtype=proj.weight.dtype)
                model.register_parameter(SHARED_RULE_NAME, rule)
            adapter = _make_adapter(cfg, proj.out_features, rule if cfg.shared_rule else None)
            proj.adapter = adapter.to(device=proj.weight.device, dtype=proj.weight.dtype)
            proj.register_forward_hook(_run_adapter)
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


def base_fingerprint(model):
    """What an adapter must match to be loaded: architecture, hidden size, blocks per stack."""
    config = model.config
    return {
        "model_type": config.model_type,
        "hidden_size": getattr(config, "hidden_size", None) or getattr(config, "d_model", None),
        "layers": {stack: len(b) for stack, b in blocks(model).items()},
    }


ADAPTER_WEIGHTS, ADAPTER_CONFIG = "adapter.safetensors", "adapter.json"


def _atomic_write(path, write):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def save_adapter(model, path):
    """Save what the method trained (safetensors) + the method and a fingerprint of the base (JSON)."""
    cfg = getattr(model, "adapterlab_method", None)
    if cfg is None:
        raise ValueError("this model has no method applied; call al.adapt(model, ...) and train it first")
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tensors = {n: p.detach().cpu().contiguous() for n, p in model.named_parameters() if p.requires_grad}
    meta = {"method": cfg.to_dict(), "base": base_fingerprint(model), "parameters": sorted(tensors)}
    _atomic_write(path / ADAPTER_WEIGHTS, lambda tmp: save_file(tensors, tmp))
    _atomic_write(path / ADAPTER_CONFIG, lambda tmp: Path(tmp).write_text(json.dumps(meta, indent=2)))
    return path


def _check_shapes(model, tensors):
    params = dict(model.named_parameters())
    for name in sorted(tensors):
        if name in params and params[name].shape != tensors[name].shape:
            raise ValueError(
                f"saved parameter {name!r} has shape {tuple(tensors[name].shape)} but the model's has "
                f"{tuple(params[name].shape)} (a head for a different number of labels?); "
                "build the model with the same number of labels as the saved adapter"
            )


def load_adapter(model, path):
    """Load a saved adapter into a base model (adapting it first if needed) or swap it into an adapted one.

    Only the saved (trained) parameters are written; the frozen base stays untouched.
    """
    path = Path(path)
    if not (path / ADAPTER_CONFIG).exists():
        raise ValueError(f"no saved adapter at {path} (expected {ADAPTER_CONFIG} and {ADAPTER_WEIGHTS})")
    meta = json.loads((path / ADAPTER_CONFIG).read_text())
    mine, saved = base_fingerprint(model), meta["base"]
    if mine != saved:
        diff = {k: (saved.get(k), mine.get(k)) for k in saved if saved.get(k) != mine.get(k)}
        raise ValueError(
            f"adapter at {path} was trained on a different base model: "
            + "; ".join(f"{k}: saved {a}, this model {b}" for k, (a, b) in diff.items())
            + ". Load it into the base model it was trained on."
        )
    cfg = MethodConfig.from_dict(meta["method"])
    current = getattr(model, "adapterlab_method", None)
    if current is not None and current != cfg:
        raise ValueError(
            f"the model has {current.name!r} adapters with other settings than the saved {cfg.name!r} ones; "
            "load it into a fresh base model or one adapted with the same method"
        )
    tensors = load_file(path / ADAPTER_WEIGHTS)
    _check_shapes(model, tensors)  # the head, LayerNorms, ...: before adapt(), so a refusal changes nothing
    if current is None:
        adapt(model, cfg)
    params = dict(model.named_parameters())
    missing = sorted(set(tensors) - set(params))
    if missing:
        raise ValueError(f"saved parameters {missing[:3]} do not exist in this model; was the adapter saved by another adapterlab version?")
    with torch.no_grad():
        for name, tensor in tensors.items():
            params[name].copy_(tensor)
    return model
