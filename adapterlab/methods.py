"""Named training methods of the two papers, as plain configuration.

A method says two things: which adapters to insert (where, how big, with which
projections) and which of the model's own parameters to train. `adapt()` in
inject.py reads a MethodConfig and does both.
"""
from dataclasses import asdict, dataclass, fields, replace

TRAINS = ("all", "top-k", "layernorm", "bias", "adapters")
POSITIONS = ("attention", "ffn")
PROJECTIONS = ("dense", "lowrank", "phm")


@dataclass(frozen=True)
class MethodConfig:
    """Everything that defines a method. Presets live in METHODS; override with method(name, **kw).

    trains:      which base parameters learn: "all", "top-k" (last k blocks), "layernorm",
                 "bias", or "adapters" (adapters + LayerNorms; the head always trains)
    positions:   sublayers of each block that get an adapter ("attention", "ffn")
    projection:  how the adapter's two projections are built: "dense", "lowrank" (rank-`rank`
                 u v^T) or "phm" (sum of n Kronecker products; B_i rank `rank` or full if None)
    shared_rule: PHM only -- one rule A for the whole model (Compacter) or one per layer
    drop_layers: no adapters in the first `drop_layers` blocks of each stack (AdapterDrop)
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
    drop_layers: int = 0
    k: int | None = None

    @property
    def has_adapters(self):
        return self.trains == "adapters"

    def __post_init__(self):
        if self.trains not in TRAINS:
            raise ValueError(f"trains={self.trains!r} is not one of {TRAINS}")
        bad = [p for p in self.positions if p not in POSITIONS]
        if bad or (self.has_adapters and not self.positions):
            raise ValueError(f"positions={self.positions!r}: choose a non-empty subset of {POSITIONS}")
        if self.projection not in PROJECTIONS:
            raise ValueError(f"projection={self.projection!r} is not one of {PROJECTIONS}")
        for key in ("bottleneck", "n"):
            if int(getattr(self, key)) < 1:
                raise ValueError(f"{key} must be a positive integer, got {getattr(self, key)!r}")
        if self.rank is not None and self.rank < 1:
            raise ValueError(f"rank must be a positive integer or None (full), got {self.rank!r}")
        if self.init_std <= 0:
            raise ValueError(f"init_std must be > 0, got {self.init_std!r}")
        if self.drop_layers < 0:
            raise ValueError(f"drop_layers must be >= 0, got {self.drop_layers!r}")
        if self.trains == "top-k" and (self.k is None or self.k < 0):
            raise ValueError(f"top-k needs k >= 0 (the number of top blocks to train), got k={self.k!r}")
        if self.projection == "phm" and self.bottleneck % self.n:
            raise ValueError(
                f"{self.name}: bottleneck={self.bottleneck} is not divisible by n={self.n}; "
                f"pick a bottleneck that is a multiple of n (e.g. {self.n * max(1, self.bottleneck // self.n)})"
            )

    def to_dict(self):
        d = asdict(self)
        d["positions"] = list(self.positions)
        return d

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        d["positions"] = tuple(d.get("positions", ()))
        return cls(**d)


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
        MethodConfig("pfeiffer", positions=("ffn",)),
        MethodConfig("adapter-lowrank", projection="lowrank", rank=1),
        MethodConfig("adapterdrop", drop_layers=5),
        # Karimi Mahabadi et al. 2021 (their adapter size is 24)
        MethodConfig("phm", projection="phm", n=4),
        MethodConfig("compacter", projection="phm", n=4, rank=1, shared_rule=True),
        MethodConfig("compacter++", projection="phm", n=4, rank=1, shared_rule=True, positions=("ffn",)),
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
    return replace(base, **overrides)
