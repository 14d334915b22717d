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
The architectures neither paper used follow adapter-bert: the adapter transforms what the sublayer adds
to the residual, after the branch's last dropout where it has one (ELECTRA, DeBERTa-v2, DistilBERT's FFN,
GPT-2), else the branch's last projection (DistilBERT's attention, Llama). In the pre-LN decoders
(GPT-2, Llama) the add comes last, x + f(h) + h, with the norm at the start of the next sublayer.

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
    """Module paths, relative to `model.base_model` (frozen_heads: relative to the model itself).

    stacks:    stack name -> the ModuleList of transformer blocks
    sublayers: stack name -> {position: module inside a block whose output goes through the adapter}
    below:     modules under the first block (the embeddings), for train_lower_layernorms=False;
               a path the model lacks (ELECTRA's embeddings_project when sizes agree) is skipped
    lora_targets: LoRA's default targets, the query and value projections (Hu et al.), as PEFT's
               defaults name them per architecture
    adds_biases: BitFit first gives the bias-free layers zero biases (the Compacter paper does so for T5);
               elsewhere a model without biases is refused, since re-introducing them is a choice of
               that paper's code for T5, not part of BitFit
    frozen_heads: modules outside the base model that come pretrained with it: a causal LM's lm_head
               (the output embedding, tied to the input embedding or not). They stay frozen like the
               base; "the head trains" means a task head the checkpoint lacks (score, classifier)
    """

    stacks: dict
    sublayers: dict
    below: tuple = ()
    lora_targets: tuple = ()
    adds_biases: bool = False
    frozen_heads: tuple = ()


_BERT = ArchSpec(
    stacks={"encoder": "encoder.layer"},
    # adapter-bert modeling.py: dense -> dropout -> adapter -> LayerNorm(+ residual), in both sublayers.
    # ELECTRA's and DeBERTa-v2's blocks are BERT's (SelfOutput and Output: LayerNorm(dropout(dense(h)) + x))
    sublayers={"encoder": {"attention": "attention.output.dropout", "ffn": "output.dropout"}},
    below=("embeddings",),
    lora_targets=("query", "value"),
)
_ELECTRA = replace(_BERT, below=("embeddings", "embeddings_project"))  # the projection runs before block 0
_DEBERTA_V2 = replace(_BERT, lora_targets=("query_proj", "value_proj"))
_DISTILBERT = ArchSpec(
    stacks={"encoder": "transformer.layer"},
    # TransformerBlock: sa_layer_norm(attention(x) + x), then output_layer_norm(ffn(y) + y). The attention
    # branch ends in out_lin with no dropout after it (attention.dropout acts on the attention weights), so
    # the adapter takes out_lin's output; FFN.ff_chunk ends lin2 -> dropout, so there it follows the
    # dropout, as in adapter-bert
    sublayers={"encoder": {"attention": "attention.out_lin", "ffn": "ffn.dropout"}},
    below=("embeddings",),
    lora_targets=("q_lin", "v_lin"),
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
    adds_biases=True,
)
_GPT2 = ArchSpec(
    stacks={"decoder": "h"},
    # Pre-LN GPT2Block: x + attn(ln_1(x)), then x + mlp(ln_2(x)). GPT2Attention ends c_proj -> resid_dropout
    # and GPT2MLP ends c_proj -> dropout; those dropouts' outputs are what is added to the residual, so the
    # adapter follows them, as in adapter-bert (there is no LayerNorm after the add: it comes first)
    sublayers={"decoder": {"attention": "attn.resid_dropout", "ffn": "mlp.dropout"}},
    below=("wte", "wpe"),
    lora_targets=("c_attn",),  # the fused query-key-value Conv1D, PEFT's GPT-2 default
    frozen_heads=("lm_head",),  # GPT2LMHeadModel: tied to wte
)
_LLAMA = ArchSpec(
    stacks={"decoder": "layers"},
    # Pre-norm LlamaDecoderLayer: x + self_attn(input_layernorm(x)), then x + mlp(post_attention_layernorm(x)).
    # Llama has no dropout on either branch: the last modules, o_proj and down_proj, give what is added to
    # the residual, so the adapter takes their outputs
    sublayers={"decoder": {"attention": "self_attn.o_proj", "ffn": "mlp.down_proj"}},
    below=("embed_tokens",),
    lora_targets=("q_proj", "v_proj"),
    frozen_heads=("lm_head",),  # LlamaForCausalLM: untied by default, tied in some checkpoints
)
ARCHITECTURES = {"bert": _BERT, "roberta": _BERT, "xlm-roberta": _BERT, "electra": _ELECTRA,
                 "deberta-v2": _DEBERTA_V2, "distilbert": _DISTILBERT, "t5": _T5, "mt5": _T5,
                 "gpt2": _GPT2, "llama": _LLAMA}

SHARED_RULE_NAME = "phm_rule"  # the one Compacter rule, registered on the model's root


def arch_spec(model):
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type not in ARCHITECTURES:
        raise ValueError(
            f"unsupported architecture {model_type or type(model).__name__!r}; adapterlab supports "
            f"{', '.join(sorted(ARCHITECTURES))} models (config.model_type), with their encoder, "
            "sequence-classification or LM heads (e.g. BertForSequenceClassification, T5ForConditionalGeneration, "
            "T5EncoderModel, GPT2ForSequenceClassification, LlamaForCausalLM)"
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
    """d, the width every adapter maps to itself (BERT: hidden_size, T5: d_model).

    GPT-2 (n_embd) and DistilBERT (dim) answer to hidden_size through their configs' attribute_map.
    """
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
    base = model.base_model
    below = [base.get_submodule(path) for path in arch_spec(model).below if _has_submodule(base, path)]
    for stack_blocks in blocks(model).values():
        below += stack_blocks[:cfg.dropped_blocks(len(stack_blocks))]
    return below


def _has_submodule(module, path):
    try:
        module.get_submodule(path)
    except AttributeError:
        return False
    return True


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
    adapt() calls it only where the table says adds_biases (T5, mT5): a bias-free Llama is refused
    instead, since no paper's BitFit re-introduces biases there.
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
    """The task head: parameters outside the base model, except a pretrained LM head (ArchSpec.frozen_heads).

    A T5ForConditionalGeneration and GPT2LMHeadModel have none: their lm_head is the input embedding
    (tied: one parameter, inside the base). LlamaForCausalLM's untied lm_head is pretrained too, so it
    is not a head that trains: an adapter method leaves the language model's output layer as it was.
    mT5's untied lm_head is not in the table's frozen_heads and trains as the head, as it always has.
    """
    base = model.base_model
    if base is model:
        return set()
    spec = ARCHITECTURES.get(getattr(model.config, "model_type", None))
    pretrained = tuple(f"{path}." for path in spec.frozen_heads) if spec else ()
    inside = {id(p) for p in base.parameters()}
    return {name for name, p in model.named_parameters() if id(p) not in inside and not name.startswith(pretrained)}


def is_layernorm(module):
    """nn.LayerNorm, T5LayerNorm, ... and RMS norms (LlamaRMSNorm, nn.RMSNorm): each model's own norm."""
    name = type(module).__name__
    return "LayerNorm" in name or "RMSNorm" in name


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
            f"head-only: {type(model).__name__} has no task head to train (a text-to-text T5 or a causal LM "
            "answers with its pretrained LM head, which stays frozen); use a model with a classification head "
            "(e.g. BertForSequenceClassification, GPT2ForSequenceClassification)"
        )
    if cfg.trains == "bias" and not arch_spec(model).adds_biases and not any(
            name.endswith("bias") for name, _ in model.named_parameters()):
        raise ValueError(
            f"bitfit: this {model.config.model_type} model has no bias terms to train ({type(model).__name__} "
            "builds its projections and norms without biases); use lora or houlsby instead"
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
    LayerNorms (RMSNorms in Llama; unless train_layernorms=False) and the task head train; everything
    else is frozen, a causal LM's pretrained lm_head included (see head_parameter_names).
    The baselines add their own parameters instead (a prompt, theta and lambda, LoRA's A and B)
    and train those and the head.
    """
    cfg = method(method_or_name, **overrides)
    if cfg.trains == "lora" and not cfg.lora_targets:  # the architecture's default (query and value)
        cfg = replace(cfg, lora_targets=tuple(arch_spec(model).lora_targets))
    _check(model, cfg)
    if cfg.trains == "bias" and arch_spec(model).adds_biases:
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


def fill(model, cfg, tensors, source):
    """Write saved tensors into a model adapted with cfg: adapt a base model first; refuse a model adapted
    another way. The one last step of every loader (adapterlab's, PEFT's and AdapterHub's folders), each of
    which checks its tensors against the base before, so a refusal leaves the model unchanged."""
    current = getattr(model, "adapterlab_method", None)
    if current is not None and current != cfg:
        raise ValueError(f"the model has {current.name!r} with other settings than the saved {cfg.name!r} at "
                         f"{source}; load it into a fresh base model or one adapted with the same method")
    if current is None:
        adapt(model, cfg)
    params = dict(model.named_parameters())
    missing = sorted(set(tensors) - set(params))
    if missing:
        raise ValueError(f"{source}: saved parameters {missing[:3]} do not exist in this model adapted with "
                         f"{cfg.name!r}; the folder was probably saved by another version: retrain it with this one")
    with torch.no_grad():
        for name, tensor in tensors.items():
            params[name].copy_(tensor)
    return model


@contextmanager
def adapters_disabled(model, layers=None, stack=None):
    """Within the block, the adapters of these blocks (all, if layers is None) act as the identity.

    stack: whose blocks; None: the encoder, or the one stack ("decoder") of a decoder-only model.
    Restored on exit, also when the block raises.
    """
    if stack is None:
        stacks = blocks(model)
        stack = "encoder" if "encoder" in stacks or not stacks else next(iter(stacks))
    chosen = [a for (s, i, _), a in adapters(model).items() if s == stack and (layers is None or i in layers)]
    before = [a.enabled for a in chosen]
    try:
        for a in chosen:
            a.enabled = False
        yield model
    finally:
        for a, was in zip(chosen, before):
            a.enabled = was
