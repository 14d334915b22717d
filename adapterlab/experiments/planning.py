"""Planning: the training runs each experiment needs, as train.RunConfig objects, and their store keys.

    from adapterlab.experiments import planning
    configs = planning.plan("default", "param_performance")            # stage 1: grids and fixed-rate runs
    chosen = planning.choose_lrs(records_of_those_configs)              # {grid id: rate best on validation}
    configs = planning.plan("default", "param_performance", chosen)     # + the other seeds at the chosen rates
    key = planning.run_key(configs[0], "default", "param_performance")  # the result-store key of a run

plan() is a pure function of the profile's typed settings (profiles.py) and `chosen`: it never reads
the result store. Learning rates chosen on validation are an explicit input, so whoever trains
(running.run_plan, the sweep) plans stage 1, trains it, chooses, and plans again; plan_from() does the
same for a caller that only looks records up (findings, the dry run, the sweep's "what is missing").

Also here: the run configs of notebook 03 (teaching_config), which runs keep their adapter
(keeps_adapter), one line per run (describe), and the units of work the runners run (work): one per
training run, and for layer removal one more per task, scoring the spans of the run it ablates
(scored_runs) once that run is stored. What a plan costs is in costs.py.
"""
import math
from dataclasses import replace

from . import profiles as profiles_module
from ..training import removal
from ..training import tasks as task_registry
from ..training import train as T
from .families import STREAM, TRAINED
from ..methods.config import method
from .results import config_key
from .work import Work
from . import stream
from ..methods.saving import ADAPTER_CONFIG

# Train-split sizes of the GLUE tasks as tasks.py splits them (official train minus the
# validation carved from it: 10%, at most 2,000). Used by plan() to leave out low-resource
# sizes a task cannot provide, without loading the data.
GLUE_TRAIN_SIZES = {"glue/cola": 7696, "glue/sst2": 65349, "glue/mrpc": 3301, "glue/qqp": 361846,
                    "glue/stsb": 5174, "glue/mnli": 390702, "glue/mnli-mm": 390702, "glue/qnli": 102743,
                    "glue/rte": 2241}

# Bump when a change alters what an already-stored run would compute (where adapters sit, how they
# start, how training runs), so that old records stop matching instead of being reused silently.
# 2: BERT adapters after the sublayer's dropout; the authors' PHM init; convergence-recording training loop
CODE_VERSION = 2


# ----------------------------------------------------------------------------- keys

def eval_size(profile, family):
    """How many validation/test examples a family evaluates on (None: all): the family's
    own eval_size setting, else the profile's."""
    p = profiles_module.resolve(profile)
    own = p.settings(family).eval_size if family in profiles_module.SETTINGS else None
    return own if own is not None else p.eval_size


def run_key(config, profile, family):
    """The result-store config of a run: the RunConfig as a dict, the full method it resolves to (so a
    changed preset default changes the key), the CODE_VERSION, plus "eval_size" when the profile (or the
    family's settings) caps the evaluation sets."""
    d = config.to_dict()
    d["method_config"] = method(config.method, **config.method_args).to_dict()
    d["code_version"] = CODE_VERSION
    cap = eval_size(profile, family)
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


def choose_lrs(records):
    """{grid id: learning rate} from the trial records of learning-rate grids (the stage-1 runs of a plan;
    records of other runs form grids of one rate, which plan() never looks up). Per grid, the rate with the
    best mean validation score over the trial seeds present; on a tie the smaller rate. Pass complete
    grids: a grid missing a trial would be chosen from the others (plan_from leaves such grids out)."""
    by_grid = {}
    for r in records:
        train = r["config"]["train"]
        by_grid.setdefault(grid_id(r["config"]), {}).setdefault(train["lr"], []).append(r["validation"])
    return {gid: max(rates, key=lambda lr: (sum(rates[lr]) / len(rates[lr]), -lr))
            for gid, rates in by_grid.items()}


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
    return lambda config: store.get(run_key(config, profile, family), family)


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


def run_config(p, *, task, method, method_args=None, backbone=None, train_size="profile",
               family_train=None, **train_overrides):
    """A RunConfig with the profile's defaults; train_overrides, then the family's own "train"
    settings (family_train), replace TrainConfig fields."""
    train = {**p.train, **train_overrides, **(family_train or {})}
    try:
        train_config = T.TrainConfig(**train)
    except TypeError:
        valid = ", ".join(T.TrainConfig.__dataclass_fields__)
        raise ValueError(f"profile {p.name!r}: unknown training setting in {sorted(train)}; valid: {valid}") from None
    return T.RunConfig(
        backbone=backbone or p.backbone, task=task, method=method, method_args=dict(method_args or {}),
        train_size=p.train_size if train_size == "profile" else train_size,
        max_length=p.max_length, train=train_config,
    )


def _task_epochs(epochs, task, default):
    """epochs for a task: a number, or {task: epochs, "default": epochs}; None: the default."""
    if isinstance(epochs, dict):
        return epochs.get(task, epochs.get("default", default))
    return epochs if epochs is not None else default


def _layer_removal_plan(p, chosen):
    s = p.layer_removal
    lrs = s.lrs or (method_lr(p, "houlsby"),)
    epochs = s.epochs or (p.train.get("epochs", 3),)
    return [
        run_config(p, task=task, method="houlsby", method_args=s.method_args, lr=lr, epochs=e, family_train=s.train)
        for task in s.tasks or p.tasks for lr in lrs for e in epochs
    ]


def _init_scale_plan(p, chosen):
    s = p.init_scale
    return [
        run_config(p, task=task, method="houlsby", method_args={**s.method_args, "init_std": std},
                   lr=method_lr(p, "houlsby"), seed=seed, epochs=_task_epochs(s.epochs, task, p.train.get("epochs", 3)),
                   family_train=s.train)
        for task in s.tasks or p.tasks for std in s.stds for seed in s.seeds
    ]


def _param_performance_plan(p, chosen):
    return [config for group in p.param_performance.resolved_groups()
            for config in _param_performance_group(p, group, chosen)]


def _param_performance_group(p, s, chosen):
    """Every method entry at each rate of its grid (s.lr_grid[method], or the entry's own "lrs") with
    the first seed; with a choice for that grid, the other seeds at the chosen rate. Without a grid:
    the method's one rate (method_lr) for every seed. The seeds are s.seeds, or the entry's own "seeds"
    (more seeds where a claim needs them: docs/power.md)."""
    out = []
    for task in s.tasks or p.tasks:
        for entry in s.methods:  # (method, method_args) or (method, method_args, TrainConfig overrides)
            name, args, own = (*entry, {})[:3]
            own = dict(own)
            grid = own.pop("lrs", s.lr_grid.get(name))
            seeds = tuple(own.pop("seeds", s.seeds))

            def config(lr, seed):
                return run_config(
                    p, task=task, method=name, method_args=args, backbone=s.backbone,
                    train_size="profile" if s.train_size is None else s.train_size, lr=lr, seed=seed,
                    epochs=_task_epochs(s.epochs, task, p.train.get("epochs", 3)), family_train={**s.train, **own})

            if not grid:
                out += [config(method_lr(p, name, s), seed) for seed in seeds]
                continue
            trials = [config(lr, seeds[0]) for lr in grid]
            out += trials
            lr = chosen.get(grid_id(trials[0]))
            if lr is not None:
                out += [config(lr, seed) for seed in seeds[1:]]
    return out


def low_resource_schedule(s, size):
    """(epochs, max_steps) for one train size: s.epochs[size] (paper) or s.steps[size | "default"]."""
    if s.epochs is not None:
        return s.epochs[size], None
    steps = s.steps
    return 1, (steps.get(size, steps.get("default")) if isinstance(steps, dict) else steps)


def _low_resource_plan(p, chosen):
    """Every (size, method, seed) run. A method with a grid (s.lr_grid[method]) first runs each rate of
    it at one size (s.lr_choice_size) with each seed of s.choice_seeds(); with a choice for that grid (the
    best mean validation over those seeds), every size and seed (s.seeds_of(method)) at the chosen rate --
    the paper reports, per task, the hyper-parameters that were best on validation. A method without a
    grid: its one rate (method_lr) at once."""
    s = p.low_resource
    out = []
    for task in s.tasks or p.tasks:
        sizes = [size for size in s.sizes if size <= GLUE_TRAIN_SIZES.get(task, math.inf)]  # RTE: 2,241

        def config(name, size, lr, seed):
            epochs, max_steps = low_resource_schedule(s, size)
            batch = s.train.get("batch_size", p.train.get("batch_size", 32))
            total = max_steps or math.ceil(epochs * math.ceil(size / batch))
            # evaluate about s.evaluations times per run, not once per (tiny) epoch
            eval_every = max(1, math.ceil(total / s.evaluations))
            return run_config(
                p, task=task, method=name, method_args=s.method_args.get(name, {}), backbone=s.backbone,
                train_size=size, lr=lr, seed=seed, epochs=epochs, max_steps=max_steps, eval_every=eval_every,
                family_train=s.train)

        for name in s.methods:
            grid = s.lr_grid.get(name)
            if grid and s.lr_choice_size not in sizes:
                raise ValueError(f"low_resource has a learning-rate grid for {name!r} but its lr_choice_size "
                                 f"{s.lr_choice_size!r} is not one of its sizes {tuple(sizes)} for {task}; "
                                 "set lr_choice_size to the size at which the grid runs")
            if grid:
                trials = [config(name, s.lr_choice_size, lr, seed) for lr in grid for seed in s.choice_seeds()]
                out += trials
                lr = chosen.get(grid_id(trials[0]))
            else:
                lr, trials = method_lr(p, name, s), []
            if lr is not None:
                out += [c for size in sizes for seed in s.seeds_of(name)
                        if (c := config(name, size, lr, seed)) not in trials]
    return out


# ----------------------------------------------------------------------------- notebook 03

def train_split_size(task):
    """Examples in a task's train split: GLUE's are known (no download); the local tasks load in a moment."""
    return GLUE_TRAIN_SIZES.get(task.partition(":")[0]) or len(task_registry.load_task(task).splits["train"])


def teaching_config(profile, method, task, lr=None, method_args=None):
    """One run of notebook 03: the profile's training settings for `method` on `task`, on the profile's
    train size (all of a smaller train split); lr and method_args (the notebook's parameters) override."""
    p = profiles_module.resolve(profile)
    size = p.train_size if p.train_size is not None and p.train_size < train_split_size(task) else None
    return run_config(p, task=task, method=method, method_args=method_args, train_size=size,
                      lr=method_lr(p, method) if lr is None else lr)


def teaching_second_task(profile, requested=None):
    """The second task of 03's adapter swap: `requested` (else the profile's), unless it is the first task
    or has another number of classes; then the first of airline, synthetic, synthetic-pair that fits."""
    p = profiles_module.resolve(profile)
    first = p.tasks[0]
    classes = task_registry.num_labels(first)
    candidates = [requested or p.teaching.second_task, "airline", "synthetic", "synthetic-pair"]
    second = next((t for t in candidates if t and t != first and task_registry.num_labels(t) == classes), None)
    if second is None:  # a study's own data may have a number of classes no packaged task has
        raise ValueError(f"notebook 03's adapter swap needs a second task with {classes} classes, as {first!r} has, "
                         f"and none of {', '.join(t for t in candidates if t)} has them: set teaching second_task "
                         "to such a task, or leave notebook 03 out (--only 04,05,06,07)")
    return second


def _teaching_plan(p, chosen):
    """Notebook 03 with its default parameters: every teaching method on the first task, and the swap
    method on the second task too (both adapters kept for the swap demo: keeps_adapter)."""
    first, swap = p.tasks[0], p.teaching.swap_method
    configs = [teaching_config(p, m, first) for m in p.teaching.methods]
    for task in (first, teaching_second_task(p)):
        if (config := teaching_config(p, swap, task)) not in configs:
            configs.append(config)
    return configs


def keeps_adapter(profile, family, config):
    """Whether a run's trained adapter is saved beside its record, as the family's settings say
    (keeps_adapter): 04 scores its spans from it, 03 swaps it."""
    return profiles_module.resolve(profile).settings(family).keeps_adapter(config)


# ----------------------------------------------------------------------------- budget controls
# The budget control: a few of a family's runs (its settings' `budget_control` entries, every seed, at the
# chosen rate) trained again with budget_factor x the steps and the same number of validations. If the
# conclusions drawn at 1x also hold at 2x (stats.budget_verdict: each claim's move between its two arms, the
# first entry being the reference arm, shown inside stats.MARGIN on validation), the family's budget was
# enough; if not, the budget goes up. How an entry names a run of its family:
_CONTROL_ENTRY = {
    "layer_removal": lambda c: c.task,                                    # a task
    "init_scale": lambda c: c.method_args["init_std"],                    # an init std
    "param_performance": lambda c: (c.method, c.method_args),             # (method, method_args)
    "low_resource": lambda c: (c.method, c.train_size),                   # (method, train size)
}


def longer(config, factor):
    """The same run with factor x the steps (or epochs) and validations as many times as before."""
    t = config.train
    steps = {"max_steps": t.max_steps * factor} if t.max_steps else {"epochs": t.epochs * factor}
    every = {"eval_every": t.eval_every * factor} if t.eval_every else {}
    return replace(config, train=replace(t, **steps, **every))


def _with_any_choice(p, family):
    """The family's runs as if every grid had chosen its first rate: every run the plan can ever list."""
    return _PLANS[family](p, {grid_id(c): c.train.lr for c in _PLANS[family](p, {})})


def budget_controls(profile, family, chosen=None):
    """[(run, its budget control)] for a family: each `budget_control` entry's runs, one per seed, at the rate
    they train with (the chosen one for a grid; left out until that choice is made), and each run at
    budget_factor x the steps. plan() appends the controls, so whoever trains a plan trains them."""
    p = profiles_module.resolve(profile)
    s = p.settings(family) if family in _CONTROL_ENTRY else None
    if s is None or not s.budget_control:
        return []
    chosen = chosen or {}
    main = _PLANS[family](p, chosen)
    pairs = []
    for entry in s.budget_control:
        runs = [c for c in main if _CONTROL_ENTRY[family](c) == entry]
        if not runs and not any(_CONTROL_ENTRY[family](c) == entry for c in _with_any_choice(p, family)):
            raise ValueError(f"{p.name} {family}: budget_control entry {entry!r} names no run of the plan; "
                             f"entries name runs as {family}'s plan does (see planning._CONTROL_ENTRY)")
        if len({c.train.lr for c in runs}) > 1:  # grid trials: the one at the chosen rate, once chosen
            runs = [c for c in runs if chosen.get(grid_id(c)) == c.train.lr]
        one_per_seed = {c.train.seed: c for c in reversed(runs)}  # the first run of each seed
        pairs += [(run, longer(run, s.budget_factor)) for _, run in sorted(one_per_seed.items())]
    return pairs


# ----------------------------------------------------------------------------- the plan

_PLANS = {"teaching": _teaching_plan, "layer_removal": _layer_removal_plan, "init_scale": _init_scale_plan,
          "param_performance": _param_performance_plan, "low_resource": _low_resource_plan}
assert tuple(_PLANS) == TRAINED


def plan(profile, family, chosen=None):
    """The training runs (train.RunConfig) one family needs in a profile, in run order.

    `chosen` ({grid id: learning rate}, from choose_lrs) holds the rates chosen on validation from the
    learning-rate grids; without a choice for a grid the plan lists its trials only (stage 1). A plan
    with every choice made is complete. Budget controls (budget_controls) come last."""
    if family not in _PLANS:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(TRAINED)}")
    p = profiles_module.resolve(profile)
    configs = _PLANS[family](p, chosen or {})
    return configs + [control for _, control in budget_controls(p, family, chosen)]


# ----------------------------------------------------------------------------- work: what the runners run

def training_unit(profile, family, config, control=False, keep_adapter=None):
    """One training run as a unit of work (work.Work), keyed by run_key. Its adapter is saved beside
    the record when the family keeps it (keeps_adapter), or as keep_adapter says."""
    p = profiles_module.resolve(profile)
    key = run_key(config, p, family)
    save = keeps_adapter(p, family, config) if keep_adapter is None else keep_adapter
    spec = {"step": "train", "config": config.to_dict(), "eval_size": eval_size(p, family), "save": save}
    return Work(family, key, spec, marker=ADAPTER_CONFIG if save else None, control=control, label=describe(config))


def _training_work(p, family, store):
    """A training family's plan as units of work: one per run, none needing another's files."""
    chosen = chosen_from(p, family, store_lookup(store, p, family))
    controls = {config_key(run_key(c, p, family)) for _, c in budget_controls(p, family, chosen)}
    return [training_unit(p, family, config, control=config_key(run_key(config, p, family)) in controls)
            for config in plan(p, family, chosen)]


# ----------------------------------------------------------------------------- layer removal's spans

SPANS = "layer_removal_spans"  # the store file of the span scores: evaluation of a stored adapter, no training


def best_runs(records):
    """{task: its record best on validation} (the first best on a tie), tasks in first-seen order: the run
    whose adapters layer removal takes out, span by span."""
    by_task = {}
    for r in records:
        by_task.setdefault(r["task"], []).append(r)
    return {task: max(runs, key=lambda r: r["validation"]) for task, runs in by_task.items()}


def scored_runs(profile, store):
    """{task: RunConfig} of the runs whose spans layer removal scores: per task, the best on validation
    (best_runs) of the family's runs (budget controls aside), once every run of that task is stored."""
    p = profiles_module.resolve(profile)
    lookup = store_lookup(store, p, "layer_removal")
    found = [(c, lookup(c)) for c in _PLANS["layer_removal"](p, chosen_from(p, "layer_removal", lookup))]
    waiting = {c.task for c, r in found if r is None}
    best = best_runs([r for c, r in found if c.task not in waiting])
    return {task: next(c for c, r in found if r is record) for task, record in best.items()}


def span_key(profile, config, split="validation"):
    """The store key of a run's span scores: the run's key, the split scored, how many examples at most
    (validation: the family's eval_size; removal.HELD_OUT: its held_out setting)."""
    p = profiles_module.resolve(profile)
    cap = p.layer_removal.held_out if split == removal.HELD_OUT else eval_size(p, "layer_removal")
    return {"run": run_key(config, p, "layer_removal"), "split": split, "eval_size": cap}


def span_unit(profile, config, split="validation"):
    """Scoring the spans of one stored run on `split` (removal.evaluate_spans) as a unit of work: it reads
    the run's saved adapter, so the run is its need (work.ready trains the run again when the adapter is
    gone)."""
    p = profiles_module.resolve(profile)
    key = span_key(p, config, split)
    spec = {"step": "spans", "config": config.to_dict(), "split": split, "eval_size": key["eval_size"]}
    return Work(SPANS, key, spec, needs=(training_unit(p, "layer_removal", config),),
                label=f"spans of {describe(config)} on {split}")


def held_out_runs(profile, store):
    """{task: [RunConfig]} of the runs whose spans are scored on held-out examples (the setting held_out):
    the scored run (scored_runs), then its budget controls, whose spans show whether the claims survive
    twice the steps. Empty when held_out is None."""
    p = profiles_module.resolve(profile)
    if p.layer_removal.held_out is None:
        return {}
    chosen = chosen_from(p, "layer_removal", store_lookup(store, p, "layer_removal"))
    return _with_controls(p, scored_runs(p, store), chosen)


def _with_controls(p, scored, chosen):
    """{task: [its scored run, then that run's budget controls]} for {task: scored run}."""
    controls = budget_controls(p, "layer_removal", chosen)
    return {task: [run, *[c for r, c in controls if r == run]] for task, run in scored.items()}


def _span_units(p, scored, held_out):
    """Span units: one on validation per scored run (the heatmap's), one on held-out examples per run of
    `held_out` (held_out_runs: the claims')."""
    return ([span_unit(p, c) for c in scored.values()]
            + [span_unit(p, c, removal.HELD_OUT) for runs in held_out.values() for c in runs])


def _layer_removal_work(p, family, store):
    """Layer removal's training runs, then per task whose runs are all stored one span unit on validation
    (the heatmap's) and, where the profile holds examples out, the held-out units its claims read."""
    return _training_work(p, family, store) + _span_units(p, scored_runs(p, store), held_out_runs(p, store))


def span_units_once_trained(profile):
    """The span units layer removal's work will hold once all its runs are stored, before any is: each
    task's first planned run stands in for the one validation will pick, which changes the units' keys but
    not their number, splits or sizes. What a plan's scoring costs before it is trained (study init)."""
    p = profiles_module.resolve(profile)
    stand_in = {}
    for c in _PLANS["layer_removal"](p, {}):
        stand_in.setdefault(c.task, c)
    held_out = {} if p.layer_removal.held_out is None else _with_controls(p, stand_in, {})
    return _span_units(p, stand_in, held_out)


# family -> its units of work given what the store holds (the choices made on its stored grids; the
# runs layer removal scores; the stream's recall steps keyed by its stored adapters)
_WORK = {**{family: _training_work for family in TRAINED}, "layer_removal": _layer_removal_work,
         STREAM: lambda p, family, store: stream.steps(p, store)}


def work(profile, family, store):
    """Every unit of a family's plan (work.Work), in run order, as far as `store` lets it be planned.
    The runners ask again after running the ready ones (work.ready): choices and chains add units."""
    if family not in _WORK:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(_WORK)}")
    return _WORK[family](profiles_module.resolve(profile), family, store)
