"""Named training methods of the two papers, as plain configuration.

A method says two things: which adapters to insert (where, how big, with which
projections) and which of the model's own parameters to train. `adapt()` in
inject.py reads a MethodConfig and does both.

Besides the adapters, four baselines that add something other than an adapter:
prompt tuning (prompt_tuning.py), Intrinsic-SAID (intrinsic.py + fastfood.py), LoRA (lora.py)
and a head-only probe. Each trains its own parameters and the task head, nothing else.
"""
import math
from dataclasses import asdict, dataclass, fields, replace

from ..nn.layers import PHM_INITS  # "compacter", "scaled-factors": see layers.PHMLinear.reset_parameters

TRAINS = ("all", "top-k", "layernorm", "bias", "adapters", "head", "prompt", "intrinsic", "lora")
POSITIONS = ("attention", "ffn")
PROJECTIONS = ("dense", "lowrank", "phm")
PROMPT_INITS = ("random", "vocab")  # Prompt Tuning-R and Prompt Tuning-T of the Compacter paper

# Compacter's AdapterDrop drops the adapters of the first 5 of T5-base's 12 blocks per stack
# (their adapters_drop config adapts blocks 5..11); on other depths we keep that fraction.
ADAPTERDROP_FRACTION = 5 / 12


# Settings that one baseline alone reads -> that baseline's `trains`. to_dict() writes them for that
# method only, so every other method's dict, and with it the result-store key of every run stored
# before these settings existed (experiments.run_key), stays as it was.
ONLY_FOR = {"prompt_tokens": "prompt", "prompt_init": "prompt", "intrinsic_dim": "intrinsic",
            "projection_seed": "intrinsic", "lora_alpha": "lora", "lora_targets": "lora"}


@dataclass(frozen=True)
class MethodConfig:
    """Everything that defines a method. Presets live in METHODS; override with method(name, **kw).

    trains:      which base parameters learn: "all", "top-k" (last k blocks), "layernorm",
                 "bias" (BitFit; bias-free models such as T5 get zero biases first), or "adapters"
                 (adapters + LayerNorms; the head always trains), "head" (the head alone: a linear
                 probe on frozen features), "prompt" (prompt tuning), "intrinsic" (Intrinsic-SAID) or
                 "lora"; the last three train their own parameters + the head, nothing else
    positions:   sublayers of each block that get an adapter ("attention", "ffn")
    projection:  how the adapter's two projections are built: "dense", "lowrank" (rank-`rank`
                 u v^T) or "phm" (sum of n Kronecker products; B_i rank `rank` or full if None)
    shared_rule: PHM only -- one rule A for the whole model (Compacter) or one per layer
    phm_init:    PHM only -- "compacter" (the authors' code: rule ~ N(0, phm_init_range), the factors
                 s_i, t_i or B_i Glorot-uniform) or "scaled-factors" (rule ~ N(0, 1), factors scaled
                 so that W has entries of std init_std, like a dense adapter's)
    phm_init_range: std of the rule under phm_init="compacter" (the authors' code default 1e-2;
                 their Compacter GLUE configs use 1e-4)
    drop_layers: no adapters in the first `drop_layers` blocks of each stack (AdapterDrop);
                 None: ADAPTERDROP_FRACTION (5/12) of each stack's blocks, rounded
    train_layernorms: adapter methods also train the base LayerNorms (both papers: True)
    train_lower_layernorms: ... including those below the first adapted block (False: the
                 AdapterDrop paper's setting, so that the backward pass stops at that block)
    prompt_tokens: prompt tuning -- number of prompt vectors prepended to the input (Compacter §5.5: 100)
    prompt_init: prompt tuning -- "random" (uniform in +-0.5, the authors' code) or "vocab" (copies of
                 vocabulary embedding rows drawn at random); see prompt_tuning.py
    intrinsic_dim: Intrinsic-SAID -- d', everything it trains: d' - m projected coordinates plus one
                 scale per reparameterised tensor (m of them). Compacter §5.5: 1,400
    projection_seed: Intrinsic-SAID -- seed of the fixed random Fastfood projections; part of the method
                 (saved with it), so that a saved theta means the same thing when loaded
    rank:        also LoRA's r (the lora preset sets 8)
    lora_alpha:  LoRA -- the update is (lora_alpha / r) B A, as in Hu et al. and PEFT
    lora_targets: LoRA -- names of the linear layers to adapt, matched on the end of their module
                 path ("value", "intermediate.dense") as PEFT's target_modules are; None: the
                 architecture's query and value
    """

    name: str
    trains: str = "adapters"
    positions: tuple = ("attention", "ffn")
    bottleneck: int = 64
    activation: str = "gelu"
    init_std: float = 1e-2
    projection: str = "dense"
    n: int = 4
    rank: int | None = None
    shared_rule: bool = False
    phm_init: str = "compacter"
    phm_init_range: float = 1e-2
    drop_layers: int | None = 0
    train_layernorms: bool = True
    train_lower_layernorms: bool = True
    k: int | None = None
    prompt_tokens: int = 100
    prompt_init: str = "random"
    intrinsic_dim: int = 1400
    projection_seed: int = 0
    lora_alpha: float = 8.0
    lora_targets: tuple | None = None

    @property
    def has_adapters(self):
        return self.trains == "adapters"

    def dropped_blocks(self, n_blocks):
        """How many of a stack's first blocks get no adapter (AdapterDrop)."""
        if not self.has_adapters:
            return 0
        if self.drop_layers is not None:
            return self.drop_layers
        return math.floor(ADAPTERDROP_FRACTION * n_blocks + 0.5)  # round half up: 6 blocks -> 3

    def __post_init__(self):
        if self.trains not in TRAINS:
            raise ValueError(f"trains={self.trains!r} is not one of {TRAINS}")
        bad = [p for p in self.positions if p not in POSITIONS]
        if bad or (self.has_adapters and not self.positions):
            raise ValueError(f"positions={self.positions!r}: choose a non-empty subset of {POSITIONS}")
        if self.projection not in PROJECTIONS:
            raise ValueError(f"projection={self.projection!r} is not one of {PROJECTIONS}")
        if self.phm_init not in PHM_INITS:
            raise ValueError(f"phm_init={self.phm_init!r} is not one of {PHM_INITS}")
        for key in ("bottleneck", "n"):
            if int(getattr(self, key)) < 1:
                raise ValueError(f"{key} must be a positive integer, got {getattr(self, key)!r}")
        if self.rank is not None and self.rank < 1:
            raise ValueError(f"rank must be a positive integer or None (full), got {self.rank!r}")
        for key in ("init_std", "phm_init_range"):
            if getattr(self, key) <= 0:
                raise ValueError(f"{key} must be > 0, got {getattr(self, key)!r}")
        if self.drop_layers is not None and self.drop_layers < 0:
            raise ValueError(f"drop_layers must be >= 0 (or None for 5/12 of the blocks), got {self.drop_layers!r}")
        if not self.has_adapters and not (self.train_layernorms and self.train_lower_layernorms):
            raise ValueError(
                f"{self.name}: train_layernorms / train_lower_layernorms apply to adapter methods only "
                f"(trains='adapters', not {self.trains!r}); leave them at True"
            )
        if self.trains == "top-k" and (self.k is None or self.k < 0):
            raise ValueError(f"top-k needs k >= 0 (the number of top blocks to train), got k={self.k!r}")
        if self.prompt_init not in PROMPT_INITS:
            raise ValueError(f"prompt_init={self.prompt_init!r} is not one of {PROMPT_INITS}")
        for key in ("prompt_tokens", "intrinsic_dim"):
            if int(getattr(self, key)) < 1:
                raise ValueError(f"{key} must be a positive integer, got {getattr(self, key)!r}")
        if self.trains == "lora" and self.rank is None:
            raise ValueError("lora needs rank=r, a positive integer (the lora preset uses 8)")
        if self.lora_alpha <= 0:
            raise ValueError(f"lora_alpha must be > 0, got {self.lora_alpha!r}")
        if self.lora_targets is not None and (isinstance(self.lora_targets, str) or not self.lora_targets):
            raise ValueError(f"lora_targets must be a non-empty tuple of module names such as ('query', 'value'), "
                             f"got {self.lora_targets!r}")
        if self.projection == "phm" and self.bottleneck % self.n:
            raise ValueError(
                f"{self.name}: bottleneck={self.bottleneck} is not divisible by n={self.n}; "
                f"pick a bottleneck that is a multiple of n (e.g. {self.n * max(1, self.bottleneck // self.n)})"
            )

    def to_dict(self):
        """The settings as JSON-able values; a baseline's own settings only for that baseline (ONLY_FOR)."""
        d = {k: v for k, v in asdict(self).items() if ONLY_FOR.get(k, self.trains) == self.trains}
        d["positions"] = list(self.positions)
        if d.get("lora_targets") is not None:
            d["lora_targets"] = list(self.lora_targets)
        return d

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        d["positions"] = tuple(d.get("positions", ()))
        if d.get("lora_targets") is not None:
            d["lora_targets"] = tuple(d["lora_targets"])
        return cls(**d)


# Which paper (and which code) each preset follows:
#   houlsby          Houlsby et al. 2019: adapters after attention and FFN; BERT placement as in
#                    adapter-bert (after the sublayer's dropout), T5 placement as in Compacter's code
#   pfeiffer         the Compacter paper's Pfeiffer-Adapter: one adapter per block, after self-attention
#                    ("keeping the adapter after the self-attention module ... perform[s] the best").
#                    positions=("ffn",) is AdapterFusion's (Pfeiffer et al. 2021) placement
#   adapter-lowrank  Compacter paper: each projection a rank-1 product
#   adapterdrop      Rücklé et al. 2021 as run in the Compacter paper: no adapters in the first 5/12
#                    of each stack's blocks (5 of T5-base's 12), all LayerNorms trained; set
#                    train_lower_layernorms=False for the AdapterDrop paper's speed-up
#   phm, compacter,  Karimi Mahabadi et al. 2021, initialised as their code does (phm_init="compacter";
#   compacter++      rule std 1e-4 in their Compacter GLUE configs, 1e-2 for PHM's own rules); their
#                    adapter size is 24. Compacter++ keeps only the adapter after the FFN
#   bitfit           BitFit (Ben Zaken, Ravfogel et al. 2021): biases + head; on T5 with the biases the
#                    Compacter paper re-introduces (see inject.add_missing_biases)
#   head-only        the feature-based baseline of Houlsby et al.'s Table 2: frozen body, trained classifier
#   prompt-tuning    Lester et al. 2021 as run in the Compacter paper: 100 prompt tokens (§5.5);
#                    prompt_init="random" is Prompt Tuning-R, "vocab" Prompt Tuning-T
#   intrinsic-said   Aghajanyan et al. 2020 (SAID) as run in the Compacter paper: d' = 1,400 (§5.5)
#   lora             Hu et al. 2021: r = 8 on the query and value projections, alpha = r (scale 1: their
#                    "set alpha to the first r we try"); the head trains, as in their GLUE runs
METHODS = {
    m.name: m
    for m in [
        # baselines that insert nothing
        MethodConfig("full", trains="all"),
        MethodConfig("top-k", trains="top-k", k=1),
        MethodConfig("layernorm", trains="layernorm"),
        MethodConfig("bitfit", trains="bias"),
        # Houlsby et al. 2019 and its variants
        MethodConfig("houlsby"),
        MethodConfig("pfeiffer", positions=("attention",)),
        MethodConfig("adapter-lowrank", projection="lowrank", rank=1),
        MethodConfig("adapterdrop", drop_layers=None),
        # Karimi Mahabadi et al. 2021 (their adapter size is 24)
        MethodConfig("phm", projection="phm", n=4),
        MethodConfig("compacter", projection="phm", n=4, rank=1, shared_rule=True, phm_init_range=1e-4),
        MethodConfig("compacter++", projection="phm", n=4, rank=1, shared_rule=True, phm_init_range=1e-4,
                     positions=("ffn",)),
        # baselines that add something other than an adapter
        MethodConfig("head-only", trains="head"),
        MethodConfig("prompt-tuning", trains="prompt"),
        MethodConfig("intrinsic-said", trains="intrinsic"),
        MethodConfig("lora", trains="lora", rank=8, lora_alpha=8.0),
    ]
}


def method(name_or_config, **overrides):
    """A preset by name (or an existing config) with some fields replaced.

    >>> method("compacter", n=4, bottleneck=24).rank
    1
    """
    if isinstance(name_or_config, MethodConfig):
        base = name_or_config
    elif name_or_config in METHODS:
        base = METHODS[name_or_config]
    else:
        raise ValueError(f"unknown method {name_or_config!r}; choose one of: {', '.join(METHODS)}")
    known = {f.name for f in fields(MethodConfig)} - {"name"}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"unknown setting(s) {unknown} for method {base.name!r}; valid settings: {sorted(known)}")
    if "positions" in overrides:
        overrides["positions"] = tuple(overrides["positions"])
    if overrides.get("lora_targets") is not None and not isinstance(overrides["lora_targets"], str):
        overrides["lora_targets"] = tuple(overrides["lora_targets"])
    return replace(base, **overrides)
