"""Bottleneck adapters (Houlsby, Pfeiffer, PHM, Compacter, Compacter++) in AdapterHub's folder format, both
ways: what trains here loads in AdapterHub's `adapters` library (`adapters.init(model)`,
`model.load_adapter(folder)`, `model.set_active_adapters(name)`), and what AdapterHub saved loads here
(`al.load_adapter`). BERT-family encoders only (BERT, RoBERTa, XLM-R, ELECTRA).

An AdapterHub folder holds adapter_config.json (the bottleneck settings under "config", the adapter's name,
the base model's type and width) and pytorch_adapter.bin (the adapter's tensors). A trained head sits beside
them as head_config.json and pytorch_model_head.bin, which AdapterHub's load_adapter loads with the adapter
into a model of the same class. (AdapterHub can also write adapter.safetensors and model_head.safetensors;
adapterlab reads either kind and writes the .bin files, which a plain `model.load_adapter(folder)` reads.)

Placement. Both libraries run the adapter f on the sublayer's output after its dropout, h, and hand h + f(h)
to the block's own LayerNorm with the residual: LN(x + h + f(h)). In AdapterHub's terms that is
original_ln_before=False, original_ln_after=True, no LayerNorm of the adapter's own (ln_before, ln_after),
scaling 1, no gating, sequential. AdapterHub's stock SeqBnConfig (Pfeiffer) and CompacterPlusPlusConfig set
original_ln_before=True, which computes LN(x + h + f(LN(x + h))): the block's LayerNorm twice, the adapter
on its output. That is another function, so the export writes original_ln_before=False explicitly, and a
folder with original_ln_before=True is refused on loading.

The renaming (<sub>: the sublayer that ends in the dropout, e.g. bert.encoder.layer.3.attention.output):

  settings:  positions attention / ffn    ->  mh_adapter / output_adapter
             bottleneck m                 ->  reduction_factor, with int(d // reduction_factor) == m
             activation                   ->  non_linearity, the same name ("gelu" is the exact erf GELU
                                              on both sides; AdapterHub's "gelu_new" is the tanh approximation)
             drop_layers k                ->  leave_out [0, ..., k-1]
             projection "phm", n, rank r  ->  phm_layer, phm_dim n, factorized_phm_W with phm_rank r
                                              (full B: factorized_phm_W=False); shared_rule -> shared_phm_rule
  tensors:   <sub>.dropout.adapter.down.*  <->  <sub>.adapters.<name>.adapter_down.0.*
             <sub>.dropout.adapter.up.*    <->  <sub>.adapters.<name>.adapter_up.*
             dense leaves weight, bias; PHM leaves s, t, B, bias, rule <-> W_left, W_right, W, b, phm_rule
             phm_rule (the shared rule)   <->  <base>.shared_parameters.<name>.phm_rule
  the head:  classifier.*                 <->  the same names, in the head files

The PHM tensors keep their shapes, with no transposes: both libraries build W = sum_i kron(A_i, B_i) with
shape (in, out) (entry [(a,p), (b,q)] = sum_i A_i[a,b] B_i[p,q]) and compute x W + b. The adapter's name in
AdapterHub is the method's name ("houlsby", "compacter++", ...).

What does not carry over: the base model's LayerNorms. adapterlab's adapter methods train them (as both
papers do); AdapterHub trains and saves adapter weights only, and its adapter config has no setting for
base-model weights. The export writes them to base_layernorms.safetensors, under the base model's own
parameter names (AdapterHub keeps those names), for the AdapterHub user to apply to the base model:

    model.load_state_dict(safetensors.torch.load_file(folder / "base_layernorms.safetensors"), strict=False)

AdapterHub's loader would also load base-model tensors put in its adapter file (it loads every name the
model has), but they would change the base model outside the adapter: they would stay when the adapter is
deactivated and be lost when AdapterHub saves the adapter again. A separate file keeps that step explicit.
A method trained with train_layernorms=False needs no such file: `model.load_adapter(folder)` alone gives
adapterlab's function. al.load_adapter reads the file when present.

Refused: methods with no bottleneck adapters, adapter-lowrank (AdapterHub's projections are dense or PHM,
not rank-r products u v^T), other architectures, and, on loading, AdapterHub settings that compute
something adapterlab's adapters cannot (each refusal says which and why). Settings that act in training
only (dropout, stochastic depth, learn_phm, the initialisers) are not compared: in eval mode they change
nothing. A loaded adapter keeps the preset's init_std and phm_init, which only a fresh adapt() would use.
"""
import io
import json
import math
from pathlib import Path

import torch
from safetensors.torch import load_file, save

from .writing import atomic_write
from .config import POSITIONS, method
from .inject import (SHARED_RULE_NAME, blocks, fill, head_parameter_names, hidden_size, insertion_points,
                     is_layernorm)

CONFIG, WEIGHTS, SAFE_WEIGHTS = "adapter_config.json", "pytorch_adapter.bin", "adapter.safetensors"
HEAD_CONFIG, HEAD_WEIGHTS, SAFE_HEAD_WEIGHTS = "head_config.json", "pytorch_model_head.bin", "model_head.safetensors"
LAYERNORMS = "base_layernorms.safetensors"

# The model types whose blocks end each sublayer in dense -> dropout -> LayerNorm(. + x) in both libraries
# (transformers' and AdapterHub's modeling files), with the adapter between the dropout and the LayerNorm.
SUPPORTED = ("bert", "roberta", "xlm-roberta", "electra")

# AdapterHub's loader renames "gelu" to "gelu_new" in configs without a "version" (files of its predecessor,
# adapter-transformers, where "gelu" named the tanh approximation). The version marks the format as current
# so that "gelu" stays the exact GELU; 1.3.0 is the release whose folders this module writes and reads.
VERSION = "adapters.1.3.0"

# adapter_config.json's "config", what adapterlab's adapters are in AdapterHub's terms. The export writes all
# of it, so that no default of AdapterHub's changes the function; loading requires each key to have this
# value (a missing key: AdapterHub's default, which is this value too). Training-only settings aside.
SAME_FUNCTION = {
    "is_parallel": False,  # a parallel adapter reads the sublayer's input
    "original_ln_before": False,  # True: LN(x + h + f(LN(x + h))), the stock Pfeiffer and Compacter++ placement
    "original_ln_after": True,  # the block's LN(. + x) after the adapter
    "ln_before": False, "ln_after": False,  # LayerNorms of the adapter's own
    "adapter_residual_before_ln": False,  # with no ln_after, either value adds the same residual
    "scaling": 1.0, "use_gating": False,
    "inv_adapter": None, "inv_adapter_reduction_factor": None, "cross_adapter": False,
    "shared_W_phm": False,  # one W for all layers
    "factorized_phm_rule": False,  # the rule as a product of (n, n, 1) and (n, 1, n) factors
    "phm_bias": True,
}
PHM_ONLY = ("shared_W_phm", "factorized_phm_rule", "phm_bias")  # settings of PHM layers, moot for dense ones
WHY = {
    "original_ln_before": "it applies the block's LayerNorm before the adapter too, LN(x + h + f(LN(x + h))), "
                          "where adapterlab's adapters compute LN(x + h + f(h))",
    "original_ln_after": "it leaves out the block's LayerNorm and residual after the adapter",
    "ln_before": "the adapter has a LayerNorm of its own; adapterlab's have none",
    "ln_after": "the adapter has a LayerNorm of its own; adapterlab's have none",
    "scaling": "it scales the adapter's output; adapterlab's adapters do not",
    "use_gating": "it gates the adapter's output; adapterlab's adapters do not",
    "is_parallel": "it is a parallel adapter (on the sublayer's input); adapterlab's are sequential",
    "inv_adapter": "it adds invertible adapters to the embeddings; adapterlab has none",
    "cross_adapter": "it adapts cross-attention; a BERT-family encoder has none",
    "shared_W_phm": "its PHM factors W are shared by all layers; adapterlab's are per layer",
    "factorized_phm_rule": "its PHM rule is a product of two factors; adapterlab trains the full rule",
    "phm_bias": "its PHM layers have no bias; adapterlab's have one",
}
# BnConfig's own defaults for the keys loading reads besides SAME_FUNCTION, for configs that leave them out
DEFAULTS = {"residual_before_ln": True, "leave_out": [], "phm_layer": False, "phm_dim": 4,
            "factorized_phm_W": True, "shared_phm_rule": True, "phm_rank": 1, "phm_init_range": 1e-4}
ACTIVATIONS = ("gelu", "relu", "swish", "silu", "tanh")  # the same function under the same name on both sides
LEGACY_ACTIVATIONS = {"gelu": "gelu_new", "gelu_orig": "gelu"}  # what AdapterHub reads unversioned names as
PROJECTIONS = {"down": "adapter_down.0", "up": "adapter_up"}  # adapter_down is Sequential(projection, activation)
LEAVES = {"dense": {"weight": "weight", "bias": "bias"},
          "phm": {"s": "W_left", "t": "W_right", "B": "W", "bias": "b", "rule": "phm_rule"}}


def is_adapterhub_folder(path):
    """An AdapterHub adapter: adapter_config.json with the settings under "config" (PEFT's has a peft_type)."""
    config = Path(path) / CONFIG
    if not config.exists():
        return False
    meta = json.loads(config.read_text())
    return "peft_type" not in meta and isinstance(meta.get("config"), dict) and "name" in meta


def _base(model):
    """The base model's path in the model with a dot ("bert." in a BertForSequenceClassification), or ""."""
    name = next(name for name, module in model.named_modules() if module is model.base_model)
    return f"{name}." if name else ""


def _rebase(name, model):
    """A base-model tensor's name in this model's terms. AdapterHub names tensors as the model it saved from
    does: "bert.encoder..." from a model with a head, "encoder..." from a bare BertModel."""
    return _base(model) + name.removeprefix(f"{model.base_model_prefix}.")


def _check_architecture(model):
    model_type = model.config.model_type
    if model_type not in SUPPORTED:
        raise ValueError(f"the AdapterHub format is written and read for BERT-family encoders "
                         f"({', '.join(SUPPORTED)}), whose adapter placement is the same in both libraries; "
                         f"this is a {model_type} model: save it with format='adapterlab'")


def _reduction_factor(d, m):
    """A reduction factor from which AdapterHub computes the bottleneck m back, as int(d // factor).

    d / m itself can land a hair above the true quotient (d=64, m=5: 64 // 12.8 is 4.0); the next float
    below it then gives m."""
    if d % m == 0:
        return d // m
    for factor in (d / m, math.nextafter(d / m, 0)):
        if int(d // factor) == m:
            return factor
    raise ValueError(f"no reduction factor gives AdapterHub a bottleneck of {m} for hidden size {d}")


def _projection_shapes(cfg, n_in, n_out):
    """{adapterlab leaf: shape} of one projection of the adapter (d -> m or m -> d)."""
    if cfg.projection == "dense":
        return {"weight": (n_out, n_in), "bias": (n_out,)}
    n, r, p, q = cfg.n, cfg.rank, n_in // cfg.n, n_out // cfg.n
    shapes = {"B": (n, p, q)} if r is None else {"s": (n, p, r), "t": (n, r, q)}
    if not cfg.shared_rule:
        shapes["rule"] = (n, n, n)
    return {**shapes, "bias": (n_out,)}


def _layout(model, cfg, name):
    """{adapterlab tensor name: (AdapterHub tensor name, shape)} of every adapter tensor the method puts into
    this model, computed from the settings alone: loading checks a folder against it before adapting."""
    d, m = hidden_size(model), cfg.bottleneck
    names = {id(module): module_name for module_name, module in model.named_modules()}
    first = {stack: cfg.dropped_blocks(len(b)) for stack, b in blocks(model).items()}
    out = {}
    for stack, i, position, module in insertion_points(model):
        if position not in cfg.positions or i < first[stack]:
            continue
        ours = names[id(module)]  # <sub>.dropout
        theirs = f"{ours.rsplit('.', 1)[0]}.adapters.{name}"
        for projection, (n_in, n_out) in (("down", (d, m)), ("up", (m, d))):
            for leaf, shape in _projection_shapes(cfg, n_in, n_out).items():
                their_leaf = LEAVES[cfg.projection][leaf]
                out[f"{ours}.adapter.{projection}.{leaf}"] = (f"{theirs}.{PROJECTIONS[projection]}.{their_leaf}", shape)
    if cfg.projection == "phm" and cfg.shared_rule:
        out[SHARED_RULE_NAME] = (f"{_base(model)}shared_parameters.{name}.phm_rule", (cfg.n,) * 3)
    return out


def _layernorm_names(model):
    return {f"{module_name}.{leaf}".lstrip(".") for module_name, module in model.named_modules()
            if is_layernorm(module) for leaf, _ in module.named_parameters(recurse=False)}


def _adapterhub_config(model, cfg):
    """adapter_config.json's "config": adapterlab's adapter in AdapterHub's settings, every key written."""
    d, phm = hidden_size(model), cfg.projection == "phm"
    return {
        **SAME_FUNCTION,
        "mh_adapter": "attention" in cfg.positions, "output_adapter": "ffn" in cfg.positions,
        "reduction_factor": _reduction_factor(d, cfg.bottleneck), "non_linearity": cfg.activation,
        "residual_before_ln": True, "leave_out": list(range(cfg.dropped_blocks(len(blocks(model)["encoder"])))),
        "phm_layer": phm, "phm_dim": cfg.n, "phm_rank": cfg.rank or 1, "factorized_phm_W": cfg.rank is not None,
        "shared_phm_rule": cfg.shared_rule, "phm_init_range": cfg.phm_init_range,
        # training-only settings, as adapterlab trains: no dropout, a learned rule. The initialisers only shape
        # a fresh adapter: dense ones as adapterlab's ("houlsby"); AdapterHub's "houlsby" cannot set up PHM
        # layers, which take its Compacter default ("bert", which leaves them to the PHM settings)
        "dropout": 0.0, "stochastic_depth": 0.0, "learn_phm": True, "init_weights": "bert" if phm else "houlsby",
        "init_weights_seed": None, "phm_c_init": "normal", "hypercomplex_nonlinearity": "glorot-uniform",
    }


def _model_meta(model):
    return {"model_type": model.config.model_type, "hidden_size": hidden_size(model),
            "model_name": getattr(model.config, "_name_or_path", "") or "", "model_class": type(model).__name__,
            "version": VERSION}


def _bin(tensors):
    """A PyTorch pickle of plain tensors, as AdapterHub writes and reads (torch.load with weights_only)."""
    buffer = io.BytesIO()
    torch.save({n: t.detach().cpu().contiguous() for n, t in tensors.items()}, buffer)
    return buffer.getvalue()


def save_adapterhub(model, path):
    """Write the model's bottleneck adapters as an AdapterHub folder, with the trained head beside them and
    the trained base-model LayerNorms in base_layernorms.safetensors (see the module's docstring)."""
    cfg = model.adapterlab_method
    if not cfg.has_adapters:
        raise ValueError(f"AdapterHub's bottleneck format holds adapter methods (houlsby, pfeiffer, phm, compacter, "
                         f"compacter++); {cfg.name!r} trains {cfg.trains!r}: save it with format='adapterlab' "
                         "(LoRA and prompt tuning also with format='peft')")
    if cfg.projection == "lowrank":
        raise ValueError(f"{cfg.name}: its projections are rank-{cfg.rank or 1} products u v^T, and AdapterHub's "
                         "bottleneck adapters have dense or PHM projections only, so this export is refused; "
                         "save it with format='adapterlab'")
    _check_architecture(model)
    config = _adapterhub_config(model, cfg)  # refuses a bottleneck AdapterHub cannot size before any write
    params = dict(model.named_parameters())
    layout = _layout(model, cfg, cfg.name)
    adapter_params = {n for n in params if ".adapter." in n or n == SHARED_RULE_NAME}
    if adapter_params != set(layout):
        raise ValueError(f"{cfg.name}: the model's adapter tensors do not match its method's layout "
                         f"(only in the model: {sorted(adapter_params - set(layout))[:3]}, "
                         f"only in the layout: {sorted(set(layout) - adapter_params)[:3]})")
    heads, norms = head_parameter_names(model), _layernorm_names(model)
    trained = {n for n, p in params.items() if p.requires_grad and n not in adapter_params}
    stray = sorted(trained - heads - norms)
    if stray:
        raise ValueError(f"{stray[:3]} train but AdapterHub's folder has no place for them (it holds the adapter, "
                         "the head and, beside them, the base LayerNorms): freeze them or save with "
                         "format='adapterlab'")

    path = Path(path)
    atomic_write(path / WEIGHTS, _bin({their: params[ours] for ours, (their, _) in layout.items()}))
    head = {n: params[n] for n in sorted(trained & heads)}
    if head:
        head_meta = {**_model_meta(model), "config": None, "name": None, "num_labels": model.config.num_labels,
                     "label2id": dict(model.config.label2id)}
        atomic_write(path / HEAD_WEIGHTS, _bin(head))
        atomic_write(path / HEAD_CONFIG, json.dumps(head_meta, indent=2))
    layernorms = {n: params[n].detach().cpu().contiguous() for n in sorted(trained & norms)}
    if layernorms:
        atomic_write(path / LAYERNORMS, save(layernorms))
    for stale, written in ((HEAD_WEIGHTS, head), (HEAD_CONFIG, head), (LAYERNORMS, layernorms)):
        if not written:  # left by an earlier save to this folder, they would be loaded with this adapter
            (path / stale).unlink(missing_ok=True)
    meta = {**_model_meta(model), "name": cfg.name, "config": config}
    atomic_write(path / CONFIG, json.dumps(meta, indent=2))  # last: the config says the folder is whole
    return path


def _refuse(path, why):
    raise ValueError(f"{path}: AdapterHub's adapter there {why}, so adapterlab cannot load it as the same function")


def _method_from(config, path, d, versioned):
    """The MethodConfig that computes what AdapterHub's bottleneck `config` computes on a model of width d,
    or a refusal saying why not."""
    if config.get("architecture") is not None:
        _refuse(path, f"is a {config['architecture']!r} adapter; adapterlab reads AdapterHub's bottleneck adapters "
                      "(LoRA: use PEFT's format)")
    get = {**DEFAULTS, **config}.get
    for key, value in SAME_FUNCTION.items():
        if key in WHY and config.get(key, value) != value and (get("phm_layer") or key not in PHM_ONLY):
            _refuse(path, f"has {key}={config[key]!r}: {WHY[key]}")
    if get("residual_before_ln") not in (True, False):
        _refuse(path, f"has residual_before_ln={get('residual_before_ln')!r}, which needs original_ln_before")
    positions = tuple(p for p, key in zip(POSITIONS, ("mh_adapter", "output_adapter")) if get(key))
    if not positions:
        _refuse(path, "has neither mh_adapter nor output_adapter")
    activation = config["non_linearity"].lower()
    if not versioned:
        activation = LEGACY_ACTIVATIONS.get(activation, activation)
    if activation not in ACTIVATIONS:
        _refuse(path, f"uses the activation {activation!r}; adapterlab's are {', '.join(ACTIVATIONS)} "
                      "('gelu' is the exact GELU, 'gelu_new' the tanh approximation)")
    factor = config["reduction_factor"]
    if isinstance(factor, dict):
        if set(factor) != {"default"}:
            _refuse(path, f"has a reduction factor per layer ({factor}); adapterlab's adapters share one bottleneck")
        factor = factor["default"]
    leave_out = sorted(get("leave_out") or [])
    if leave_out != list(range(len(leave_out))):
        _refuse(path, f"leaves out the layers {leave_out}; adapterlab drops the first k blocks only (AdapterDrop)")
    settings = dict(positions=positions, bottleneck=max(1, int(d // factor)),
                    activation=activation, drop_layers=len(leave_out))
    if not get("phm_layer"):
        return method("houlsby" if positions == POSITIONS else "pfeiffer", **settings)
    rank = get("phm_rank") if get("factorized_phm_W") else None
    shared = bool(get("shared_phm_rule"))
    if shared and rank is not None:
        name = "compacter++" if positions == ("ffn",) else "compacter"
    else:
        name = "phm"
    return method(name, projection="phm", n=get("phm_dim"), rank=rank, shared_rule=shared,
                  phm_init_range=get("phm_init_range"), **settings)


def _read(path, *files):
    """The tensors of the first of these files that exists (safetensors or a PyTorch pickle), or None."""
    for file in files:
        if (path / file).exists():
            if file.endswith(".safetensors"):
                return load_file(path / file)
            return torch.load(path / file, map_location="cpu", weights_only=True)
    return None


def _check_fit(path, what, tensors, shapes):
    """Every tensor must have a place of its shape in `shapes` ({name: shape})."""
    for name in sorted(tensors):
        if name not in shapes:
            raise ValueError(f"{path}: {what} {name!r} has no place in this model; load the folder into the base "
                             "model (and model class) it was saved from")
        if tuple(tensors[name].shape) != tuple(shapes[name]):
            hint = " (a head for another number of labels?)" if what == "head tensor" else ""
            raise ValueError(f"{path}: {what} {name!r} has shape {tuple(tensors[name].shape)} but this model's has "
                             f"{tuple(shapes[name])}{hint}; build the model as the folder's was built")


def load_adapterhub(model, path):
    """Load an AdapterHub folder of bottleneck adapters (and its head and base LayerNorms, when there) into a base
    model, or one adapted with the same settings. Everything is checked before the model changes."""
    path = Path(path)
    _check_architecture(model)
    meta = json.loads((path / CONFIG).read_text())
    mine = {"model_type": model.config.model_type, "hidden_size": hidden_size(model)}
    differs = {k: (meta.get(k), v) for k, v in mine.items() if meta.get(k) is not None and meta.get(k) != v}
    if differs:
        raise ValueError(f"{path} was saved from another base model ("
                         + "; ".join(f"{k}: saved {a}, this model {b}" for k, (a, b) in differs.items())
                         + "); load it into the base model it was trained on")
    cfg = _method_from(meta["config"], path, mine["hidden_size"], versioned="version" in meta)
    layout = _layout(model, cfg, meta["name"])
    by_their_name = {their: ours for ours, (their, _) in layout.items()}
    tensors = _read(path, SAFE_WEIGHTS, WEIGHTS)
    if tensors is None:
        raise ValueError(f"{path}: no adapter weights ({WEIGHTS} or {SAFE_WEIGHTS})")
    tensors = {_rebase(n, model): t for n, t in tensors.items()}
    stray = sorted(set(tensors) - set(by_their_name))
    missing = sorted(set(by_their_name) - set(tensors))
    if stray or missing:
        raise ValueError(f"{path}: the adapter's tensors do not fit its settings on this model (without a place "
                         f"here: {stray[:3]}; missing: {missing[:3]}); load it into the base model it was trained on")
    ours = {by_their_name[n]: t for n, t in tensors.items()}
    _check_fit(path, "adapter tensor", ours, {o: shape for o, (_, shape) in layout.items()})
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
    # a model without a task head takes the adapter alone, as AdapterHub's base models do
    head = (_read(path, SAFE_HEAD_WEIGHTS, HEAD_WEIGHTS) or {}) if head_parameter_names(model) else {}
    if head and (path / HEAD_CONFIG).exists():
        saved_class = json.loads((path / HEAD_CONFIG).read_text()).get("model_class")
        if saved_class != type(model).__name__:
            raise ValueError(f"{path}: its head belongs to a {saved_class}, this model is a {type(model).__name__}; "
                             "load it into a model of that class")
    _check_fit(path, "head tensor", head, {n: shapes[n] for n in head_parameter_names(model)})
    layernorms = {_rebase(n, model): t for n, t in (_read(path, LAYERNORMS) or {}).items()}
    _check_fit(path, "LayerNorm tensor", layernorms, {n: shapes[n] for n in _layernorm_names(model)})
    return fill(model, cfg, {**ours, **head, **layernorms}, path)
