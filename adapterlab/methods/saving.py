"""Save what a method trained and load it back: onto the base it was trained on, and nowhere else.

A saved adapter is two files in a folder: the trained tensors (safetensors) and a JSON with the method's
settings, a fingerprint of the base model and the parameter names. Only what trained is saved, so an
adapter of a frozen base is a few hundred KB where the model is ~90 MB; loading writes those tensors
back and leaves the frozen base untouched.
"""
import json
from pathlib import Path

from safetensors.torch import load_file, save

from . import adapterhub_format, lora, peft_format
from .writing import atomic_write
from .config import MethodConfig
from .inject import blocks, fill, hidden_size, insertion_points


def base_fingerprint(model):
    """What an adapter must match to be loaded: architecture, hidden size, blocks per stack."""
    return {
        "model_type": model.config.model_type,
        "hidden_size": hidden_size(model),
        "layers": {stack: len(b) for stack, b in blocks(model).items()},
    }


ADAPTER_WEIGHTS, ADAPTER_CONFIG = "adapter.safetensors", "adapter.json"


FORMATS = ("adapterlab", "peft", "adapterhub")


def save_adapter(model, path, format="adapterlab"):
    """Save what the method trained (safetensors) + the method and a fingerprint of the base (JSON).

    format="peft" writes LoRA or prompt tuning as a PEFT folder instead (peft_format.py), which
    `peft.PeftModel.from_pretrained(base, path)` loads. format="adapterhub" writes bottleneck adapters
    (houlsby, pfeiffer, phm, compacter, compacter++) of a BERT-family encoder as an AdapterHub folder
    (adapterhub_format.py), which `model.load_adapter(path)` of AdapterHub's `adapters` loads; the trained
    base LayerNorms go beside it, for the base model (see that module)."""
    cfg = getattr(model, "adapterlab_method", None)
    if cfg is None:
        raise ValueError("this model has no method applied; call al.adapt(model, ...) and train it first")
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    if format == "peft":
        return peft_format.save_peft(model, path)
    if format == "adapterhub":
        return adapterhub_format.save_adapterhub(model, path)
    path = Path(path)
    tensors = {n: p.detach().cpu().contiguous() for n, p in model.named_parameters() if p.requires_grad}
    meta = {"method": cfg.to_dict(), "base": base_fingerprint(model), "parameters": sorted(tensors)}
    atomic_write(path / ADAPTER_WEIGHTS, save(tensors))  # weights first: the config says the save is whole
    atomic_write(path / ADAPTER_CONFIG, json.dumps(meta, indent=2))
    return path


def _refuse_merged(model):
    """A merged LoRA's update sits inside the base weights: loading new A, B on top would count it twice."""
    if lora.is_merged(model):
        raise ValueError("this model's LoRA updates are merged into its weights; call "
                         "adapterlab.methods.lora.unmerge(model) first (merge again after saving or loading)")


def _check_shapes(model, tensors):
    params = dict(model.named_parameters())
    for name in sorted(tensors):
        if name in params and params[name].shape != tensors[name].shape:
            raise ValueError(
                f"saved parameter {name!r} has shape {tuple(tensors[name].shape)} but the model's has "
                f"{tuple(params[name].shape)} (a head for a different number of labels?); "
                "build the model with the same number of labels as the saved adapter"
            )


def _check_adapter_names(model, tensors):
    """Every saved adapter weight must belong under one of this model's insertion points.

    In an earlier layout, BERT-family adapters hung off the output projection (`...output.dense.adapter.`);
    now they sit after its dropout (`...output.dropout.adapter.`). Refuse old checkpoints clearly.
    """
    names = {id(m): n for n, m in model.named_modules()}
    points = {names[id(module)] + ".adapter." for *_, module in insertion_points(model)}
    stray = sorted(n for n in tensors if ".adapter." in n and not any(n.startswith(pt) for pt in points))
    if stray:
        example = next(iter(sorted(points)), "?")
        raise ValueError(
            f"saved adapter weights such as {stray[0]!r} sit where this adapterlab puts no adapter "
            f"(it puts them under e.g. {example!r}). The adapter was probably saved by an older adapterlab, "
            "which put BERT-family adapters on the output projection, before dropout; now they follow "
            "adapter-bert and sit after the dropout. Retrain it (or, for evaluation only, rename "
            "'.dense.adapter.' to '.dropout.adapter.' in the saved names: in eval mode both compute the same)"
        )


def load_adapter(model, path):
    """Load a saved adapter into a base model (adapting it first if needed) or swap it into an adapted one.

    Only the saved (trained) parameters are written; the frozen base stays untouched. Reads adapterlab's
    folders, PEFT's (LoRA, prompt tuning: peft_format.py) and AdapterHub's (bottleneck adapters:
    adapterhub_format.py), told apart by their files.
    """
    path = Path(path)
    if peft_format.is_peft_folder(path):
        return peft_format.load_peft(model, path)
    if adapterhub_format.is_adapterhub_folder(path):
        return adapterhub_format.load_adapterhub(model, path)
    if not (path / ADAPTER_CONFIG).exists():
        raise ValueError(f"no saved adapter at {path} (expected {ADAPTER_CONFIG} and {ADAPTER_WEIGHTS}, "
                         f"PEFT's {peft_format.CONFIG} and {peft_format.WEIGHTS}, or AdapterHub's "
                         f"{adapterhub_format.CONFIG} and {adapterhub_format.WEIGHTS})")
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
    _refuse_merged(model)
    tensors = load_file(path / ADAPTER_WEIGHTS)
    _check_shapes(model, tensors)  # the head, LayerNorms, ...: before adapt(), so a refusal changes nothing
    _check_adapter_names(model, tensors)
    return fill(model, cfg, tensors, path)
