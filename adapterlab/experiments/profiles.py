"""Profiles: how big each experiment is, and where results and figures go.

    smoke    tiny random BERT + synthetic task; every notebook in seconds (the tests)
    default  packaged pretrained MiniLM-L6 + airline sentiment; CPU-sized, offline
    paper    the papers' settings (bert-base / t5-base on GLUE); needs a GPU and the hub

This module holds the Profile, the typed settings of each experiment (Teaching, LayerRemoval,
InitScale, ParamPerformance, LowResource: frozen dataclasses, so a misspelled setting is a
ValueError naming the valid ones, never a silent default), the three profiles, and where results
and figures go. A name becomes a Profile once, where it enters (the command line, a notebook's
parameters cell, a public function given a name: resolve); planning.py turns a profile's settings into
run configs.
"""
from dataclasses import dataclass, field, fields
from pathlib import Path

PROFILE_NAMES = ("smoke", "default", "paper")
GLUE_TASKS = ("glue/mnli", "glue/cola", "glue/sst2", "glue/mrpc", "glue/stsb", "glue/qnli", "glue/qqp", "glue/rte")


# ----------------------------------------------------------------------------- experiment settings
# Every experiment's settings, typed. A profile may write them as dicts (dict(stds=..., seeds=...)):
# Profile turns each into its dataclass, and an unknown key raises. Settings left None fall back to
# the profile's own (tasks, backbone, train size, epochs, evaluation cap); `train` holds TrainConfig
# fields that override the profile's `train` for this experiment only.


def _settings(cls, value, where):
    """`value` (a dict or a cls) as a cls; a ValueError names an unknown key and the valid ones."""
    if isinstance(value, cls):
        return value
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a dict or {cls.__name__}, got {type(value).__name__}")
    valid = [f.name for f in fields(cls)]
    unknown = [k for k in value if k not in valid]
    if unknown:
        raise ValueError(f"{where} has unknown setting(s) {', '.join(map(repr, unknown))}; "
                         f"valid: {', '.join(valid)}")
    try:
        return cls(**value)
    except TypeError as error:  # a required setting is missing
        raise ValueError(f"{where}: {error}; valid settings: {', '.join(valid)}") from None


@dataclass(frozen=True)
class _Common:
    """Settings every figure experiment has."""
    tasks: tuple | None = None  # None: the profile's tasks
    train: dict = field(default_factory=dict)  # TrainConfig fields for this experiment's runs
    eval_size: int | None = None  # cap on validation/test examples; None: the profile's eval_size
    # budget control: a few of the experiment's settings retrained at budget_factor x the steps, every seed
    # (the entries are the experiment's own: methods, stds or sizes), to show its conclusions survive; the
    # first entry is the reference arm of the claims the others stand for (stats.claim_move)
    budget_control: tuple = ()
    budget_factor: int = 2
    keep_adapter: bool = False  # save each run's trained adapter beside its record (04 ablates it)

    def keeps_adapter(self, config):
        return self.keep_adapter


@dataclass(frozen=True)
class Teaching:
    """Notebook 03: the methods trained side by side, and the adapter swap."""
    methods: tuple = ("full", "houlsby", "pfeiffer", "compacter", "compacter++")
    swap_method: str = "houlsby"  # trained on two tasks; 03 swaps its adapters
    second_task: str | None = None  # the swap's second task (None: the first that fits)
    eval_size: int | None = None

    def keeps_adapter(self, config):
        """The swap method's adapters are kept: 03 swaps them."""
        return config.method == self.swap_method


@dataclass(frozen=True)
class LayerRemoval(_Common):
    """Notebook 04 (Houlsby Fig. 6 left/centre): Houlsby runs, the best on validation ablated."""
    method_args: dict = field(default_factory=dict)  # Houlsby's settings (bottleneck)
    lrs: tuple | None = None  # the learning-rate grid; None: the method's rate
    epochs: tuple | None = None  # the epochs grid; None: the profile's epochs
    keep_adapter: bool = True  # the best run's adapter is what the spans remove layers from
    # the claims' split: up to this many train examples the scored run never trained on (tasks.unused), on
    # which its spans (and its budget control's) are scored again; None: the claims await held-out scoring
    held_out: int | None = None


@dataclass(frozen=True)
class InitScale(_Common):
    """Notebook 05 (Houlsby Fig. 6 right): Houlsby adapters from inits of each std."""
    stds: tuple = ()
    seeds: tuple = (0,)
    method_args: dict = field(default_factory=dict)
    epochs: float | dict | None = None  # epochs, or {task: epochs, "default": epochs}; None: the profile's


@dataclass(frozen=True)
class ParamPerformance(_Common):
    """Notebook 06 (Houlsby Figs. 3/4, Compacter's trade-off): every method entry, lr chosen on validation.

    methods: entries (method, method_args) or (method, method_args, {"lrs": own grid, "seeds": own seeds,
    TrainConfig fields}).
    groups: settings dicts, each a ParamPerformance of its own that overrides these settings (the paper
    plans Houlsby's BERT panels and Compacter's T5 table this way); none: these settings are the group."""
    methods: tuple = ()
    lr_grid: dict = field(default_factory=dict)  # method -> learning rates tried at the first seed
    method_lr: dict = field(default_factory=dict)  # method -> rate without a grid (else the profile's)
    seeds: tuple = (0,)
    epochs: float | dict | None = None  # as InitScale.epochs
    backbone: str | None = None  # None: the profile's
    train_size: int | None = None  # None: the profile's
    groups: tuple = ()

    def resolved_groups(self):
        """The groups as ParamPerformance settings (each with these settings as its defaults)."""
        if not self.groups:
            return [self]
        base = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "groups"}
        valid = set(base)
        out = []
        for i, group in enumerate(self.groups):
            unknown = [k for k in group if k not in valid]
            if unknown:
                raise ValueError(f"param_performance.groups[{i}] has unknown setting(s) "
                                 f"{', '.join(map(repr, unknown))}; valid: {', '.join(sorted(valid))}")
            out.append(ParamPerformance(**{**base, **group}))
        return out


@dataclass(frozen=True)
class LowResource(_Common):
    """Notebook 07 (Compacter Fig. 4): methods on nested seeded subsets of growing size.

    Schedule per size: epochs[size] (the paper's), else steps (a number, or {size | "default": steps}).
    A method with a grid runs each rate at lr_choice_size with each of lr_choice_seeds (default: the first
    seed); every size and seed then trains at the rate with the best mean validation over those seeds."""

    def choice_seeds(self):
        return tuple(self.lr_choice_seeds) if self.lr_choice_seeds else tuple(self.seeds[:1])

    def seeds_of(self, method_name):
        return tuple(self.method_seeds.get(method_name, self.seeds))
    sizes: tuple = ()
    methods: tuple = ()
    seeds: tuple = (0,)
    method_args: dict = field(default_factory=dict)  # method -> its settings
    lr_grid: dict = field(default_factory=dict)
    lr_choice_size: int | None = None
    lr_choice_seeds: tuple | None = None  # seeds each grid rate trains with (None: the first seed); mean decides
    method_seeds: dict = field(default_factory=dict)  # method -> its seeds (others: `seeds`)
    method_lr: dict = field(default_factory=dict)
    epochs: dict | None = None  # size -> epochs
    steps: int | dict | None = None  # used when epochs is None
    evaluations: int = 10  # validations per run (eval_every = steps / evaluations)
    backbone: str | None = None


# notebook 08's two orders of four tweet domains
ORDER = ("airline", "tweets/deflategate", "tweets/apple", "tweets/coachella")
SECOND_ORDER = ("airline", "tweets/coachella", "tweets/apple", "tweets/deflategate")


@dataclass(frozen=True)
class StreamSettings:
    """Notebook 08: what a profile's stream of tasks trains. Every order starts with the same task
    (Houlsby's stream starts from one service; it also lets the orders share their first step)."""
    orders: tuple = (ORDER, SECOND_ORDER)  # tuples of task names
    seeds: tuple = (0, 1, 2)
    backbone: str = "default"
    train_size: int = 1000  # examples per task (a seeded subset of its train split)
    max_length: int = 64
    eval_size: int | None = 500  # validation/test examples per task (seeded subset; None: all)
    bottleneck: int = 64  # Houlsby adapter size m
    adapter_lr: float = 1e-3  # the rate notebook 06 chooses on validation for Houlsby m=64
    full_lr: float = 2e-4  # sequential and copies (full fine-tuning)
    train: dict = field(default_factory=lambda: dict(epochs=3, batch_size=32))  # other TrainConfig fields
    swap_repeats: int = 50  # serving: timed adapter swaps (median)
    load_repeats: int = 10  # serving: timed model loads (median)

    @property
    def tasks(self):
        """Every task of every order, in first-seen order."""
        return tuple(dict.fromkeys(t for order in self.orders for t in order))


SETTINGS = {"teaching": Teaching, "layer_removal": LayerRemoval, "init_scale": InitScale,
            "param_performance": ParamPerformance, "low_resource": LowResource, "stream": StreamSettings}


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    backbone: str  # the Houlsby-figure backbone (layer removal, init scale, teaching)
    tasks: tuple  # tasks of the Houlsby figures
    train: dict  # TrainConfig defaults for this profile (epochs, lr, batch_size, ...)
    train_size: int | None = None  # subsample train to this many examples (None: all)
    max_length: int = 128
    eval_size: int | None = None  # cap validation/test examples (None: all)
    method_lr: dict = field(default_factory=dict)  # learning rate per method (others: train["lr"])
    teaching: Teaching = field(default_factory=Teaching)  # notebook 03
    layer_removal: LayerRemoval = field(default_factory=LayerRemoval)  # notebook 04
    init_scale: InitScale = field(default_factory=InitScale)  # notebook 05
    param_performance: ParamPerformance = field(default_factory=ParamPerformance)  # notebook 06
    low_resource: LowResource = field(default_factory=LowResource)  # notebook 07
    stream: StreamSettings = field(default_factory=StreamSettings)  # notebook 08
    source: str | None = None  # the study file it was read from (studies.py): how other processes name it

    def __post_init__(self):  # dicts become typed settings; a misspelled key raises here
        for family, cls in SETTINGS.items():
            object.__setattr__(self, family, _settings(cls, getattr(self, family), f"profile {self.name!r} {family}"))

    def settings(self, family):
        """The typed settings of one experiment ("teaching" or a figure family)."""
        if family not in SETTINGS:
            raise ValueError(f"unknown family {family!r}; choose one of {', '.join(SETTINGS)}")
        return getattr(self, family)


# The default profile's learning-rate grids, each bracketing the rate 06 and 07 choose on validation (docs/protocol.md)
DEFAULT_LR_GRID = {"full": (3e-5, 1e-4, 3e-4), "top-k": (1e-4, 3e-4), "houlsby": (3e-4, 1e-3, 3e-3),
                   "pfeiffer": (3e-4, 1e-3, 3e-3), "adapterdrop": (3e-4, 1e-3, 3e-3), "phm": (1e-3, 3e-3, 1e-2),
                   "layernorm": (1e-3, 3e-3, 1e-2), "adapter-lowrank": (1e-3, 3e-3, 1e-2),
                   "compacter": (1e-3, 3e-3, 1e-2), "compacter++": (3e-3, 1e-2), "bitfit": (1e-3, 3e-3, 1e-2, 3e-2)}

PROFILES = {
    "smoke": Profile(
        name="smoke",
        description="tiny random BERT (2 layers, hidden 64) on a synthetic task: checks that everything runs",
        backbone="tiny",
        tasks=("synthetic",),
        train=dict(epochs=1, lr=3e-3, batch_size=32, max_steps=30),
        train_size=400,
        max_length=32,
        eval_size=200,
        teaching=dict(methods=("full", "houlsby", "pfeiffer", "compacter", "compacter++"), swap_method="houlsby",
                      second_task="synthetic"),
        layer_removal=dict(method_args=dict(bottleneck=16), held_out=200),
        # the default protocols in miniature: seeds, a learning-rate grid, periodic validation
        init_scale=dict(stds=(1e-6, 1e-3, 1.0), seeds=(0, 1), method_args=dict(bottleneck=16),
                        train=dict(max_steps=20, eval_every=10), budget_control=(1e-3,)),
        param_performance=dict(
            methods=[("houlsby", dict(bottleneck=4)), ("houlsby", dict(bottleneck=16)),
                     ("top-k", dict(k=1)), ("layernorm", {}), ("full", {}), ("compacter++", dict(bottleneck=16))],
            lr_grid={"houlsby": (3e-3, 1e-2)}, seeds=(0, 1), train=dict(eval_every=15)),
        low_resource=dict(sizes=(50, 100, 200), methods=("compacter++", "full"), seeds=(0, 1),
                          method_args={"compacter++": dict(bottleneck=16)},
                          lr_grid={"compacter++": (3e-3, 1e-2)}, lr_choice_size=100,
                          epochs={50: 4, 100: 2, 200: 1}, evaluations=2),
        stream=dict(seeds=(0, 1), backbone="tiny", train_size=120, max_length=32, eval_size=60, bottleneck=8,
                    adapter_lr=1e-2, full_lr=3e-3, train=dict(max_steps=8, eval_every=4, batch_size=32),
                    swap_repeats=5, load_repeats=3),
    ),
    "default": Profile(
        name="default",
        description="pretrained all-MiniLM-L6-v2 (packaged) on airline sentiment tweets: CPU-sized, offline",
        backbone="default",
        tasks=("airline",),
        # the rates of runs without a grid (03's): the calibration runs' best per kind of method (docs/protocol.md)
        train=dict(epochs=3, lr=1e-3, batch_size=32),
        method_lr={"full": 2e-4, "top-k": 2e-4, "compacter": 3e-3, "compacter++": 3e-3},
        train_size=2000,
        max_length=64,
        # the whole splits (1,442 / 1,443 tweets): on fewer, no run's plateau could pass the convergence rule
        eval_size=None,
        # notebook 03 is the lesson's own runs (one per method): they teach, no claim rests on them
        teaching=dict(methods=("full", "houlsby", "pfeiffer", "compacter", "compacter++"), swap_method="houlsby",
                      second_task="synthetic"),
        # one model, 240 steps: at twice the steps (its budget control) its score moves less than the margin
        layer_removal=dict(method_args=dict(bottleneck=64), train=dict(max_steps=240, eval_every=40),
                           budget_control=("airline",), held_out=6000),
        # Houlsby Fig. 6 right scaled down, at the rate 06 chooses for this Houlsby m=64, so only the std varies
        init_scale=dict(stds=(1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0), seeds=(0, 1, 2, 3, 4, 5, 6),
                        method_args=dict(bottleneck=64), train=dict(max_steps=360, eval_every=60, lr=1e-3),
                        # the claims' reference std; the preset's, a member of "flat"; the two "degrades" compares
                        budget_control=(1e-7, 1e-2, 1e-1, 1.0)),
        # every method at the rate of its grid best on validation (seed 0, as Houlsby swept), so seeds pair
        param_performance=dict(
            methods=[("houlsby", dict(bottleneck=2), dict(lrs=(1e-3, 3e-3, 1e-2))),
                     ("houlsby", dict(bottleneck=8), dict(lrs=(3e-4, 1e-3, 3e-3, 1e-2)))]
            + [("houlsby", dict(bottleneck=64))]
            + [("top-k", dict(k=1), dict(lrs=(1e-4, 3e-4, 1e-3))), ("top-k", dict(k=3), dict(lrs=(1e-5, 3e-5, 1e-4, 3e-4)))]
            + [("layernorm", {}), ("bitfit", {}), ("full", {}), ("pfeiffer", {}),
               ("adapter-lowrank", {}), ("adapterdrop", dict(drop_layers=3)), ("phm", dict(n=4)), ("phm", dict(n=8)),
               ("compacter", {}), ("compacter++", {})]
            + [("head-only", {}), ("lora", {}),
               ("prompt-tuning", dict(prompt_init="random"), dict(lrs=(1e-2, 3e-2, 3e-1))),
               ("prompt-tuning", dict(prompt_init="vocab"), dict(lrs=(3e-2, 3e-1, 1.0, 3.0))),
               ("intrinsic-said", {})],
            lr_grid={**DEFAULT_LR_GRID, "compacter++": (3e-3, 1e-2, 3e-2), "head-only": (3e-3, 1e-2, 3e-2, 1e-1),
                     "lora": (1e-3, 3e-3, 1e-2), "intrinsic-said": (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)},
            seeds=(0, 1, 2, 3, 4), train=dict(max_steps=360, eval_every=60),  # six validations: a last third to judge
            # the reference arm, then the arms of the claims nearest the margin
            budget_control=(("full", {}), ("houlsby", dict(bottleneck=64)), ("compacter++", {}), ("layernorm", {}))),
        # Compacter Fig. 4 scaled down: the same steps at every size, rates chosen on two seeds' mean validation
        low_resource=dict(sizes=(100, 500, 1000, 2000, 4000), methods=("compacter++", "full", "houlsby"),
                          lr_grid={**{m: DEFAULT_LR_GRID[m] for m in ("full", "houlsby")},
                                   "full": (1e-5, *DEFAULT_LR_GRID["full"]), "compacter++": (1e-3, 3e-3, 1e-2, 3e-2)},
                          lr_choice_size=1000, lr_choice_seeds=(0, 1), seeds=(0, 1, 2, 3, 4),  # the power design's
                          method_seeds={"houlsby": (0,)},  # Houlsby is our addition to the figure: one seed
                          steps=375, evaluations=6,  # three epochs of the largest subset
                          budget_control=(("full", 4000), ("compacter++", 4000))),  # the fewest epochs
        # Houlsby's stream of tasks: small evaluation sets, as every adapter is evaluated at each arrival
        stream=dict(train=dict(epochs=3, batch_size=32, eval_every=32)),
    ),
    # The papers' protocols; each setting names the passage it follows (README "The paper profile").
    "paper": Profile(
        name="paper",
        description="the papers' setting: bert-base-uncased on MNLI/CoLA (Houlsby), t5-base on GLUE (Compacter); GPU + hub",
        backbone="bert-base-uncased",
        # Houlsby Figs. 4 and 6 plot validation *accuracy* for CoLA as for MNLI-m (GLUE's CoLA metric is MCC,
        # still recorded); ":accuracy" also makes accuracy the metric that picks the best state on validation
        tasks=("glue/mnli", "glue/cola:accuracy"),
        # Houlsby §3.1: Adam, batch 32, linear warm-up over the first 10% of steps then linear decay
        train=dict(epochs=3, lr=3e-4, batch_size=32, warmup=0.1, precision="bf16"),
        # Compacter's released configs (rabeehk/compacter seq2seq/configs/*.json), the rates its sweep over
        # {3e-5, 3e-4, 3e-3, 3e-2, 3e-1} picked (Table 5): 3e-4 for T5 fine-tuning, Adapter, Pfeiffer-Adapter,
        # AdapterDrop and BitFit; 3e-3 for Adapter-LowRank, PHM-Adapter, Compacter and Compacter++
        method_lr={**{m: 3e-4 for m in ("full", "top-k", "houlsby", "pfeiffer", "adapterdrop", "bitfit")},
                   **{m: 3e-3 for m in ("layernorm", "adapter-lowrank", "phm", "compacter", "compacter++")}},
        teaching=dict(methods=("full", "houlsby", "pfeiffer", "compacter", "compacter++"), swap_method="houlsby",
                      second_task="glue/sst2"),
        # Houlsby Fig. 6 left/centre (BERT-base, adapter size 64) after its GLUE protocol: lr {3e-5, 3e-4, 3e-3}
        # x epochs {3, 20}, the best on validation is the model whose adapters are removed
        layer_removal=dict(method_args=dict(bottleneck=64), lrs=(3e-5, 3e-4, 3e-3), epochs=(3, 20)),
        # Houlsby Fig. 6 right: init std 1e-7 .. 1 at size 64; one point of the grid above (lr 3e-4; 3 epochs
        # on MNLI's 393k examples, 20 on CoLA's 8.5k), 3 seeds for the spread
        init_scale=dict(stds=(1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0), seeds=(0, 1, 2),
                        method_args=dict(bottleneck=64), epochs={"glue/mnli": 3, "default": 20}, train=dict(lr=3e-4)),
        param_performance=dict(groups=[
            # Houlsby Fig. 4 (BERT-base, MNLI-m and CoLA, validation accuracy): adapters of size 2..256, top-k
            # fine-tuning k = 1..12, LayerNorm only, full fine-tuning; each at the lr of {3e-5, 3e-4, 3e-3} best
            # on validation. Epochs: 3 on MNLI, 20 on CoLA (one of Houlsby's {3, 20} each, not both: MNLI at 20
            # epochs would be ~7x the cost of this whole family)
            dict(backbone="bert-base-uncased", tasks=("glue/mnli", "glue/cola:accuracy"),
                 epochs={"glue/mnli": 3, "default": 20},
                 methods=[("houlsby", dict(bottleneck=m)) for m in (2, 4, 8, 16, 32, 64, 256)]
                 + [("top-k", dict(k=k)) for k in range(1, 13)] + [("layernorm", {}), ("full", {})],
                 lr_grid={m: (3e-5, 3e-4, 3e-3) for m in ("houlsby", "top-k", "layernorm", "full")}),
            # Compacter Table 1 (T5-base, GLUE, test = official dev): batch 100, max length 128, 500 warm-up steps,
            # AdamW defaults; 20 epochs on CoLA, MRPC, STS-B, 3 on the others (rabeehk/compacter scripts);
            # adapter size {24, 48, 96} (reduction factor 32/16/8) and n in {4, 8, 12}, best on validation.
            # No BitFit: Hugging Face's T5 has no biases (the paper adds them back)
            dict(backbone="t5-base", tasks=GLUE_TASKS, train=dict(batch_size=100, warmup=500),
                 epochs={"glue/cola": 20, "glue/mrpc": 20, "glue/stsb": 20, "default": 3},
                 methods=[("full", {})]
                 + [(name, dict(bottleneck=m)) for name in ("houlsby", "pfeiffer", "adapterdrop", "adapter-lowrank")
                    for m in (24, 48, 96)]
                 + [(name, dict(n=n, bottleneck=m)) for name in ("phm", "compacter", "compacter++")
                    for n in (4, 8, 12) for m in (24, 48, 96)]),
        ], seeds=(0,)),
        # Compacter §5.6 / Fig. 4: T5-base fine-tuning vs Compacter++ on GLUE subsets of 100..4000 examples,
        # 1000/200/100/50/25 epochs (2,500 steps at every size), batch 40, a checkpoint every 250 steps and the
        # best on validation; sizes larger than a task's train split (RTE, MRPC at 4000) are left out
        low_resource=dict(backbone="t5-base", tasks=GLUE_TASKS, sizes=(100, 500, 1000, 2000, 4000),
                          methods=("compacter++", "full"), seeds=(0, 1, 2),
                          method_args={"compacter++": dict(n=4, bottleneck=24)},
                          epochs={100: 1000, 500: 200, 1000: 100, 2000: 50, 4000: 25},
                          train=dict(batch_size=40, warmup=500, eval_every=250)),
        stream=dict(backbone="bert-base-uncased", train_size=None, max_length=128, eval_size=None,
                    adapter_lr=3e-4, full_lr=3e-5, train=dict(epochs=3, batch_size=32)),
    ),
}


def resolve(profile):
    """A Profile from a Profile or a profile's name (get): a name becomes a Profile here, once."""
    return profile if isinstance(profile, Profile) else get(profile)


def get(name):
    """The profile of this name, or read from a study file (a path ending in .toml: studies.py); a
    ValueError names the choices for any other (None included)."""
    if is_study(name):
        from . import studies  # read on every call, so an edited study file takes effect

        return studies.load(name, Profile, reserved=PROFILE_NAMES)
    if name not in PROFILES:
        given = "no profile given" if name is None else f"unknown profile {name!r}"
        raise ValueError(f"{given}; choose one of {', '.join(PROFILE_NAMES)} or a study file (.toml; "
                         "python -m adapterlab study init writes one)")
    return PROFILES[name]


def is_study(profile):
    """Whether `profile` names a study file rather than a profile of this module."""
    return isinstance(profile, (str, Path)) and str(profile).endswith(".toml")


def _name(profile):
    """The name a profile's folders carry: its own (a study's `name`, not its file's)."""
    return resolve(profile).name if isinstance(profile, Profile) or is_study(profile) else profile


def project_root(out=None):
    """Where data/ and figures/ live: `out` when given (regenerate --out), else the checkout this package
    sits in, else the working directory."""
    if out:
        return Path(out).resolve()
    checkout = Path(__file__).resolve().parents[2]
    return checkout if (checkout / "pyproject.toml").exists() else Path.cwd()


def results_dir(profile, root=None):
    """<root>/data/results/<profile>/, root as project_root(root) gives it."""
    return project_root(root) / "data" / "results" / _name(profile)


def figures_dir(profile, root=None):
    """<root>/figures/<profile>/ (made when missing), root as project_root(root) gives it."""
    path = project_root(root) / "figures" / _name(profile)
    path.mkdir(parents=True, exist_ok=True)
    return path
