"""Planning: the training runs each experiment needs, as train.RunConfig objects, and their store keys.

    from adapterlab.experiments import planning
    configs = planning.plan(profile, family)             # stage 1: grids and fixed-rate runs
    chosen = planning.choose_lrs(records_of_those_configs)   # {grid id: rate best on validation}
    configs = planning.plan(profile, family, chosen)     # + the other seeds at the chosen rates
    key = planning.run_key(configs[0], profile, family)  # the result-store key of a run

`family` is a families.Family or what a user calls it (its notebook's number, "06", or its name).

plan() is a pure function of the profile's typed settings (profiles.py) and `chosen`: it never reads
the result store. Learning rates chosen on validation are an explicit input, so whoever trains
(running.run_plan, the sweep) plans stage 1, trains it, chooses, and plans again; plan_from() does the
same for a caller that only looks records up (findings, the dry run, the sweep's "what is missing").

A family's own plan (Family.plan: its settings into run configs) lives in its module, adapterlab/families/;
this module is the engine every family's plan goes through: the store keys, the learning-rate choice, the
budget controls every family adds alike, and the units of work the runners run (work): one per training run,
or what the family's own `work` lists (layer removal adds the span scores of the run it ablates; the stream's
units are steps that read each other's files). What a plan costs is in costs.py.
"""
import math
from dataclasses import replace

from . import families
from . import profiles as profiles_module
from ..training import files
from ..training import train as T
from ..methods.config import method
from .results import config_key
from .work import Work
from ..methods.saving import ADAPTER_CONFIG

# Train-split sizes of the GLUE tasks as tasks.py splits them (official train minus the
# validation carved from it: 10%, at most 2,000). Used by plan() to leave out low-resource
# sizes a task cannot provide, without loading the data.
GLUE_TRAIN_SIZES = {"glue/cola": 7696, "glue/sst2": 65349, "glue/mrpc": 3301, "glue/qqp": 361846,
                    "glue/stsb": 5174, "glue/mnli": 390702, "glue/mnli-mm": 390702, "glue/qnli": 102743,
                    "glue/rte": 2241}

# Bump when a change alters what an already-stored run would compute (where adapters sit, how they
# start, how training runs), so that old records stop matching instead of being reused silently (docs/protocol.md
# says what each version changed).
CODE_VERSION = 2


# ----------------------------------------------------------------------------- keys

def eval_size(profile, family):
    """How many validation/test examples a family evaluates on (None: all): the family's
    own eval_size setting, else the profile's."""
    p = profiles_module.resolve(profile)
    own = getattr(p.settings(family), "eval_size", None)
    return own if own is not None else p.eval_size


def run_key(config, profile, family):
    """The result-store config of a run: the RunConfig as a dict, the full method it resolves to (so a
    changed preset default changes the key), the CODE_VERSION, plus "carve_version" for a data task whose
    validation split is carved from its file (files.CARVE_VERSION) and "eval_size" when the profile (or the
    family's settings) caps the evaluation sets. What a task's name stands for is the profile's to say
    (Profile.task_sources: a study's data), so a config read back from a record keys as its planned one."""
    p = profiles_module.resolve(profile)
    d = config.to_dict()
    d["method_config"] = method(config.method, **config.method_args).to_dict()
    d["code_version"] = CODE_VERSION
    if files.carves_validation(p.task_sources.get(config.task, config.task)):
        d["carve_version"] = files.CARVE_VERSION  # a carved validation split's rows are the carving rule's
    cap = eval_size(p, family)
    if cap is not None:
        d["eval_size"] = cap
    return d


def describe(config):
    """One line for a run: backbone, task, method + args, size, schedule."""
    t = config.train
    args = ",".join(f"{k}={v}" for k, v in config.method_args.items())
    schedule = f"steps={t.max_steps}" if t.max_steps else f"epochs={t.epochs}"
    return (f"{config.backbone} {config.task} {config.method}{'(' + args + ')' if args else ''} "
            f"train_size={config.train_size} {schedule} lr={t.lr:g} bs={t.batch_size} seed={t.seed}")


# ----------------------------------------------------------------------------- learning-rate choice

def grid_id(config):
    """What a learning-rate grid's trials share: the run config without its rate and seed (a dict, as
    records keep it, or a RunConfig). choose_lrs groups by it and plan() looks its choices up by it."""
    d = config.to_dict() if isinstance(config, T.RunConfig) else config
    d = {**d, "train": {k: v for k, v in d["train"].items() if k not in ("lr", "seed")}}
    return config_key(d)


def grid_means(records):
    """{grid id: {learning rate: mean validation score over the trial seeds present}} of the trial records
    of learning-rate grids: what choose_lrs compares, and what a reading discloses of a choice."""
    by_grid = {}
    for r in records:
        by_grid.setdefault(grid_id(r["config"]), {}).setdefault(r["config"]["train"]["lr"], []).append(r["validation"])
    return {gid: {lr: mean_score(scores) for lr, scores in rates.items()} for gid, rates in by_grid.items()}


def mean_score(scores):
    """The mean of validation scores, the same on every machine and in every record order: an exact sum (fsum),
    rounded to 12 decimals. Scores are fractions of at most some thousands of examples, so two means that truly
    differ do by far more than 1e-12, and a tie (the same scores in another order, or equal counts as different
    floats) stays a tie for choose_lrs to break by its stated rule, not by the last bit of a float sum."""
    return round(math.fsum(scores) / len(scores), 12)


def choose_lrs(records):
    """{grid id: learning rate} from the trial records of learning-rate grids (the stage-1 runs of a plan;
    records of other runs form grids of one rate, which plan() never looks up). Per grid, the rate with the
    best mean validation score over the trial seeds present (grid_means); on a tie the smaller rate. Pass
    complete grids: a grid missing a trial would be chosen from the others (plan_from leaves such grids out)."""
    return {gid: max(means, key=lambda lr: (means[lr], -lr)) for gid, means in grid_means(records).items()}


def chosen_from(profile, family, lookup):
    """The learning rates `lookup` (config -> its record, or None when not trained yet; e.g. a result
    store's get) lets a family choose: choose_lrs on the stage-1 grids that are complete."""
    found = [(c, lookup(c)) for c in plan(profile, family)]
    incomplete = {grid_id(c) for c, r in found if r is None}
    return choose_lrs([r for c, r in found if r is not None and grid_id(c) not in incomplete])


def plan_from(profile, family, lookup):
    """The plan as far as `lookup` lets the learning rates be chosen: stage 1, the choice on its
    complete grids, the plan."""
    return plan(profile, family, chosen_from(profile, family, lookup))


def store_lookup(store, profile, family):
    """config -> its record in `store` (or None): the lookup plan_from takes."""
    name = families.get(family).name
    return lambda config: store.get(run_key(config, profile, family), name)


def records_lookup(records):
    """config -> its record among `records` (or None): the lookup of a table built from records alone."""
    # through RunConfig, so that a record made before a setting was added matches the config that has it
    by_config = {config_key(T.RunConfig.from_dict(r["config"]).to_dict()): r for r in records}
    return lambda config: by_config.get(config_key(config.to_dict()))


# ----------------------------------------------------------------------------- run configs

def method_lr(p, method_name, settings=None):
    """The learning rate of a method in this profile: the family's own method_lr (a short budget
    may need larger steps), else profile.method_lr[method], else train["lr"]."""
    lrs = {**p.method_lr, **(getattr(settings, "method_lr", None) or {})}
    return lrs.get(method_name, p.train.get("lr", T.TrainConfig.lr))


def config_for(p, *, task, method, method_args=None, backbone=None, train_size="profile",
               family_train=None, **train_overrides):
    """A RunConfig with the profile's defaults; train_overrides, then the family's own "train"
    settings (family_train), replace TrainConfig fields. A study's own task and model come with where they
    lie (Profile.task_sources, model_folders), so the config is all a worker needs."""
    train = {**p.train, **train_overrides, **(family_train or {})}
    try:
        train_config = T.TrainConfig(**train)
    except TypeError:
        valid = ", ".join(T.TrainConfig.__dataclass_fields__)
        raise ValueError(f"profile {p.name!r}: unknown training setting in {sorted(train)}; valid: {valid}") from None
    backbone = backbone or p.backbone
    return T.RunConfig(
        backbone=backbone, task=task, method=method, method_args=dict(method_args or {}),
        train_size=p.train_size if train_size == "profile" else train_size,
        max_length=p.max_length, train=train_config,
        task_source=p.task_sources.get(task), backbone_folder=p.folder(backbone),
    )


def task_epochs(epochs, task, default):
    """epochs for a task: a number, or {task: epochs, "default": epochs}; None: the default."""
    if isinstance(epochs, dict):
        return epochs.get(task, epochs.get("default", default))
    return epochs if epochs is not None else default


def keeps_adapter(profile, family, config):
    """Whether a run's trained adapter is saved beside its record, as the family's settings say
    (keeps_adapter): layer removal scores its spans from it, the lesson swaps it."""
    return profiles_module.resolve(profile).settings(family).keeps_adapter(config)


# ----------------------------------------------------------------------------- budget controls
# The budget control: a few of a family's runs (its settings' `budget_control` entries, every seed, at the
# chosen rate) trained again with budget_factor x the steps and the same number of validations. If the
# conclusions drawn at 1x also hold at 2x (judge.budget_verdict: each claim's move between its two arms, the
# first entry being the reference arm, shown inside stats.MARGIN on validation), the family's budget was
# enough; if not, the budget goes up. How an entry names a run is the family's own (Family.control_entry).


def longer(config, factor):
    """The same run with factor x the steps (or epochs) and validations as many times as before."""
    t = config.train
    steps = {"max_steps": t.max_steps * factor} if t.max_steps else {"epochs": t.epochs * factor}
    every = {"eval_every": t.eval_every * factor} if t.eval_every else {}
    return replace(config, train=replace(t, **steps, **every))


def _with_any_choice(p, family):
    """The family's runs as if every grid had chosen its first rate: every run the plan can ever list."""
    return family.plan(p, {grid_id(c): c.train.lr for c in family.plan(p, {})})


def unplanned_claims(profile, family):
    """[(claim, [its arms the plan lacks])] of a family's declared claims (Family.claims) that the profile's plan
    cannot judge, known before anything trains: a claim's arm (Claim.arms) is a plan entry (method,
    method_args), or a method's name for any entry of that method."""
    p, family = profiles_module.resolve(profile), families.get(family)
    if not family.trains_runs:
        return []
    planned = {(c.method, config_key(c.method_args)) for c in _with_any_choice(p, family)}
    methods = {name for name, _ in planned}

    def lacks(arm):
        return arm not in methods if isinstance(arm, str) else (arm[0], config_key(arm[1])) not in planned

    return [(claim, missing) for claim in family.claims if (missing := [a for a in claim.arms if lacks(a)])]


def budget_controls(profile, family, chosen=None):
    """[(run, its budget control)] for a family: each `budget_control` entry's runs, one per seed (of
    budget_control_seeds, when given), at the rate
    they train with (the chosen one for a grid; left out until that choice is made), and each run at
    budget_factor x the steps. plan() appends the controls, so whoever trains a plan trains them."""
    p, family = profiles_module.resolve(profile), families.get(family)
    s = p.settings(family) if family.control_entry else None
    if s is None or not s.budget_control:
        return []
    chosen = chosen or {}
    main = family.plan(p, chosen)
    pairs = []
    for entry in s.budget_control:
        runs = [c for c in main if family.control_entry(c) == entry]
        if not runs and not any(family.control_entry(c) == entry for c in _with_any_choice(p, family)):
            raise ValueError(f"{p.name} {family.name}: budget_control entry {entry!r} names no run of the plan; "
                             f"entries name runs as {family.name}'s plan does (its Family.control_entry)")
        if len({c.train.lr for c in runs}) > 1:  # grid trials: the one at the chosen rate, once chosen
            runs = [c for c in runs if chosen.get(grid_id(c)) == c.train.lr]
        one_per_seed = {c.train.seed: c for c in reversed(runs)  # the first run of each seed
                        if s.budget_control_seeds is None or c.train.seed in s.budget_control_seeds}
        pairs += [(run, longer(run, s.budget_factor)) for _, run in sorted(one_per_seed.items())]
    return pairs


# ----------------------------------------------------------------------------- the plan

def plan(profile, family, chosen=None):
    """The training runs (train.RunConfig) one family needs in a profile, in run order.

    `chosen` ({grid id: learning rate}, from choose_lrs) holds the rates chosen on validation from the
    learning-rate grids; without a choice for a grid the plan lists its trials only (stage 1). A plan
    with every choice made is complete. Budget controls (budget_controls) come last."""
    family = families.get(family)
    if not family.trains_runs:
        raise ValueError(f"{family.name}'s work is steps of its own, not training runs: see planning.work")
    p = profiles_module.resolve(profile)
    configs = family.plan(p, chosen or {})
    return configs + [control for _, control in budget_controls(p, family, chosen)]


# ----------------------------------------------------------------------------- work: what the runners run

def training_unit(profile, family, config, control=False, keep_adapter=None):
    """One training run as a unit of work (work.Work), keyed by run_key. Its adapter is saved beside
    the record when the family keeps it (keeps_adapter), or as keep_adapter says."""
    p, family = profiles_module.resolve(profile), families.get(family)
    key = run_key(config, p, family)
    save = keeps_adapter(p, family, config) if keep_adapter is None else keep_adapter
    spec = {"step": "train", "config": config.to_spec(), "eval_size": eval_size(p, family), "save": save}
    return Work(family.name, key, spec, marker=ADAPTER_CONFIG if save else None, control=control,
                label=describe(config))


def training_work(p, family, store):
    """A training family's plan as units of work: one per run, none needing another's files."""
    chosen = chosen_from(p, family, store_lookup(store, p, family))
    controls = {config_key(run_key(c, p, family)) for _, c in budget_controls(p, family, chosen)}
    return [training_unit(p, family, config, control=config_key(run_key(config, p, family)) in controls)
            for config in plan(p, family, chosen)]


def work(profile, family, store):
    """Every unit of a family's plan (work.Work), in run order, as far as `store` lets it be planned: the
    family's own `work` (the choices made on its stored grids, the runs layer removal scores, the stream's
    steps keyed by its stored files), else one unit per training run. The runners ask again after running
    the ready ones (work.ready): choices and chains add units."""
    family = families.get(family)
    return (family.work or training_work)(profiles_module.resolve(profile), family, store)
