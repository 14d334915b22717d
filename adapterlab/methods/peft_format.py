"""LoRA and prompt tuning in PEFT's folder format, both ways: what trains here loads in PEFT
(`PeftModel.from_pretrained(base, folder)`), and what PEFT saved loads here (`al.load_adapter`).

A PEFT folder holds adapter_config.json (the method's settings, `peft_type` naming the method) and
adapter_model.safetensors (the trained tensors). The two methods are the same functions on both sides
(tests/methods/test_baselines.py checks them on copied weights), so the export is a renaming:

  LoRA:           <path>.lora.A / .B     <->  base_model.model.<path>.lora_A.weight / lora_B.weight
  prompt tuning:  <base model>.prompt.weight  <->  prompt_embeddings
  the task head:  <head>.weight          <->  base_model.model.<head>.weight (LoRA),
                                              base_model.<head>.weight (prompt tuning)

PEFT keeps the head it trains in `modules_to_save`. GPT-2's fused c_attn is a Conv1D, which PEFT marks
with fan_in_fan_out; its lora_A / lora_B still hold our A (r x in) and B (out x r). T5's prompt goes to the
encoder only here, whereas PEFT's seq2seq prompt tuning also prompts the decoder: that export is refused.
One difference remains for prompt tuning of a decoder's classifier (GPT-2, Llama): PEFT calls it with the
prompted embeddings and no input_ids, so it pools the last position, a pad token in a right-padded batch,
where adapterlab pools the last real token. The two agree on unpadded sequences (tested).
"""
import json
from pathlib import Path

from safetensors.torch import load_file, save
from transformers.pytorch_utils import Conv1D

from . import lora as lora_module
from . import prompt_tuning as prompt_module
from .writing import atomic_write
from .config import method
from .inject import fill, head_parameter_names

CONFIG, WEIGHTS = "adapter_config.json", "adapter_model.safetensors"


def is_peft_folder(path):
    config = Path(path) / CONFIG
    return config.exists() and "peft_type" in json.loads(config.read_text())


def prompt_name(model):
    """The prompt's parameter name: prompt_tuning.MODULE_NAME under the base model ("bert.prompt.weight")."""
    base = next(name for name, module in model.named_modules() if module is model.base_model)
    return f"{base}.{prompt_module.MODULE_NAME}.weight".lstrip(".")


def task_type(model):
    """PEFT's task type for a model class: which PeftModel subclass wraps it on loading."""
    name = type(model).__name__
    if name.endswith("ForSequenceClassification"):
        return "SEQ_CLS"
    if name.endswith(("ForCausalLM", "LMHeadModel")):
        return "CAUSAL_LM"
    if name.endswith("ForConditionalGeneration"):
        return "SEQ_2_SEQ_LM"
    return "FEATURE_EXTRACTION"


def _heads(model):
    """The task head's module names (PEFT's modules_to_save) and its trained tensors."""
    params = dict(model.named_parameters())
    names = sorted(n for n in head_parameter_names(model) if params[n].requires_grad)
    return sorted({n.rsplit(".", 1)[0] for n in names}), {n: params[n] for n in names}


def _common(model, cfg):
    heads, _ = _heads(model)
    return {"peft_type": None, "task_type": task_type(model), "modules_to_save": heads or None,
            "base_model_name_or_path": getattr(model.config, "_name_or_path", None) or None,
            "inference_mode": True}


def save_peft(model, path):
    """Write the model's LoRA or prompt tuning (and its trained head) as a PEFT folder."""
    cfg = model.adapterlab_method
    _, head = _heads(model)
    if cfg.trains == "lora":
        layers = {name: module for name, module in model.named_modules()
                  if isinstance(getattr(module, lora_module.MODULE_NAME, None), lora_module.LoRA)}
        if lora_module.is_merged(model):
            raise ValueError("this model's LoRA updates are merged into its weights; call "
                             "adapterlab.methods.lora.unmerge(model) before saving")
        tensors = {}
        for name, module in layers.items():
            tensors[f"base_model.model.{name}.lora_A.weight"] = module.lora.A
            tensors[f"base_model.model.{name}.lora_B.weight"] = module.lora.B
        tensors.update({f"base_model.model.{n}": p for n, p in head.items()})
        config = {**_common(model, cfg), "peft_type": "LORA", "r": cfg.rank, "lora_alpha": cfg.lora_alpha,
                  "target_modules": sorted(cfg.lora_targets), "lora_dropout": 0.0, "bias": "none",
                  "fan_in_fan_out": any(isinstance(m, Conv1D) for m in layers.values())}
    elif cfg.trains == "prompt":
        if model.config.is_encoder_decoder:
            raise ValueError("PEFT's prompt tuning of an encoder-decoder prompts the decoder too, adapterlab's "
                             "the encoder only: the two are different functions, so this export is refused; "
                             "save it in adapterlab's format (al.save_adapter(model, path))")
        prompt = dict(model.named_parameters())[prompt_name(model)]
        tensors = {"prompt_embeddings": prompt, **{f"base_model.{n}": p for n, p in head.items()}}
        config = {**_common(model, cfg), "peft_type": "PROMPT_TUNING", "num_virtual_tokens": prompt.shape[0],
                  "token_dim": prompt.shape[1], "num_transformer_submodules": 1,
                  "num_attention_heads": model.config.num_attention_heads,
                  "num_layers": model.config.num_hidden_layers,
                  "prompt_tuning_init": {"random": "RANDOM", "vocab": "SAMPLE_VOCAB"}[cfg.prompt_init]}
    else:
        raise ValueError(f"PEFT's format holds LoRA and prompt tuning; {cfg.name!r} has no PEFT counterpart "
                         "here: save it with format='adapterlab' (or 'adapterhub' for bottleneck adapters)")
    path = Path(path)
    atomic_write(path / WEIGHTS, save({n: t.detach().cpu().contiguous() for n, t in tensors.items()}))
    atomic_write(path / CONFIG, json.dumps(config, indent=2))  # last: the config says the folder is whole
    return path


def load_peft(model, path):
    """Load a PEFT folder of LoRA or prompt tuning into a base model (or one adapted with the same settings):
    adapt it, then copy the tensors. Shapes are checked first, so a folder from another base changes nothing."""
    path = Path(path)
    config = json.loads((path / CONFIG).read_text())
    kind = config["peft_type"]
    if kind == "LORA":
        cfg = method("lora", rank=config["r"], lora_alpha=config["lora_alpha"],
                     lora_targets=tuple(sorted(config["target_modules"])))
    elif kind == "PROMPT_TUNING":
        cfg = method("prompt-tuning", prompt_tokens=config["num_virtual_tokens"])
    else:
        raise ValueError(f"{path} holds PEFT's {kind}; adapterlab reads PEFT's LORA and PROMPT_TUNING folders")
    tensors = load_file(path / WEIGHTS)
    prefix = "base_model.model." if kind == "LORA" else "base_model."
    ours = {}
    for name, tensor in tensors.items():
        if name == "prompt_embeddings":
            ours[prompt_name(model)] = tensor
        elif name.endswith(".lora_A.weight"):
            ours[name.removeprefix("base_model.model.").removesuffix(".lora_A.weight") + ".lora.A"] = tensor
        elif name.endswith(".lora_B.weight"):
            ours[name.removeprefix("base_model.model.").removesuffix(".lora_B.weight") + ".lora.B"] = tensor
        else:
            ours[name.removeprefix(prefix)] = tensor
    expected = _shapes_after_adapt(model, cfg)
    for name, tensor in ours.items():
        if expected.get(name) != tuple(tensor.shape):
            have = expected.get(name, "no such parameter")
            raise ValueError(f"{path}: {name!r} of shape {tuple(tensor.shape)} does not fit this model "
                             f"({have}); load the folder onto the base model PEFT trained it on")
    return fill(model, cfg, ours, path)


def _shapes_after_adapt(model, cfg):
    """{parameter name: shape} the model will have once adapted with cfg (LoRA's A and B, the prompt, the
    head), computed before adapting, so that a folder that does not fit is refused with the model unchanged."""
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    if cfg.trains == "lora":
        full = {id(m): name for name, m in model.named_modules()}
        for layer in lora_module.find_targets(model, cfg.lora_targets).values():
            n_in, n_out = lora_module.features(layer)
            shapes[f"{full[id(layer)]}.lora.A"] = (cfg.rank, n_in)
            shapes[f"{full[id(layer)]}.lora.B"] = (n_out, cfg.rank)
    else:
        shapes[prompt_name(model)] = (cfg.prompt_tokens, model.get_input_embeddings().weight.shape[1])
    return shapes
