"""The one estimate of what a plan costs: every unit of work it will make, counted once, and its seconds.

    from adapterlab.experiments import estimate
    planned = estimate.units(profile, family, store)       # [Planned]: each unit, its kind, stored or not
    e = estimate.of(profile, families, timing, store)      # an Estimate: its units, and seconds of the missing

study init sizes a study with it, `regenerate --dry-run` prints it (costs.dry_run) and the findings page counts
its units (document.total_time): one count and one price, so the three cannot disagree.

A plan is made in stages (planning.py): a learning-rate grid's trials first; once validation has chosen a rate,
the other seeds at that rate and the budget controls of the chosen runs; and, once a family's runs are stored,
the scoring passes its work adds (layer removal's spans: Family.passes). units() lists them all before any is
made: a choice the store has not made yet is stood in for by the grid's first rate, and a scoring pass's run by
the run its family names before training. A stand-in changes the keys of the units after the choice, never their
number, steps or sizes, so the count and the seconds are those of the plan as it will be made.

The price of a unit: a training run is Timing.run_seconds (the backbone's load, its steps, its evaluations), a
scoring pass its examples at Timing.span_seconds; each example scaled (scale) from the timed step's backbone and
tokens to the unit's by their forward FLOPs, the tokens being what the unit's length-bucketed batches pad to on
average (batch_tokens). A unit without a price (a backbone of unknown shape, a scoring pass no speed timed, a
family's own steps) is counted and named, never priced as zero.
"""
import functools
import math
from dataclasses import dataclass, field

import numpy as np

from . import families as registry
from . import planning
from . import profiles as profiles_module
from .results import config_key
from .work import Work
from ..training import tasks as task_registry
from ..training.backbones import default_tokenizer
from ..training.train import RunConfig

# What a unit is, in the order a plan makes them: {kind: its plural}
KINDS = {"grid trial": "grid trials", "fixed-rate run": "fixed-rate runs", "run at a chosen rate": "runs at a chosen rate",
         "budget control": "budget controls", "scoring pass": "scoring passes", "short run": "short runs",
         "step": "steps"}


@dataclass(frozen=True)
class Planned:
    """One unit a plan will make (work.Work), what kind it is (KINDS) and whether the store holds it."""
    unit: Work
    kind: str
    stored: bool = False


@dataclass(frozen=True)
class Estimate:
    """Every unit of the families estimated, and the seconds of those not stored at `timing`'s speed: `seconds`
    sums the priced ones, `unpriced` lists those without a price (see the module docstring)."""
    planned: list
    seconds: float
    unpriced: list = field(default_factory=list)

    @property
    def missing(self):
        return [p for p in self.planned if not p.stored]

    def count(self, kind=None, missing=False):
        """How many units (of one kind; only the missing ones)."""
        return sum(p.kind == kind or kind is None for p in (self.missing if missing else self.planned))

    def by_kind(self, missing=False):
        """'24 grid trials, 12 runs at a chosen rate, ...': the units by kind, in KINDS order."""
        counts = [(kind, self.count(kind, missing)) for kind in KINDS]
        return ", ".join(f"{n} {kind if n == 1 else KINDS[kind]}" for kind, n in counts if n)


# ----------------------------------------------------------------------------- the units

def stand_in_choices(profile, family):
    """{grid id: its first rate} for every learning-rate grid of stage 1: what lists every run of the plan."""
    return {planning.grid_id(c): c.train.lr for c in registry.get(family).plan(profile, {})}


def choices(profile, family, store=None):
    """The rates the plan will train at: the store's choices where its grids are complete, else stand-ins."""
    made = {} if store is None else planning.chosen_from(profile, family, planning.store_lookup(store, profile, family))
    return {**stand_in_choices(profile, family), **made}


def _kind(config, stage_1, grids, controls):
    """The kind of one training run of the plan (KINDS)."""
    key = config_key(config.to_dict())
    if key in controls:
        return "budget control"
    if key not in stage_1:
        return "run at a chosen rate"
    return "grid trial" if len(grids[planning.grid_id(config)]) > 1 else "fixed-rate run"


def units(profile, family, store=None):
    """[Planned] of every unit a family's plan will make (see the module docstring), in run order: its training
    runs (planning.plan with every choice made, budget controls last), then the scoring passes its work adds
    (Family.passes). A family whose units are steps of its own lists planning.work's (no choices to stand in for).
    `store`: a results.ResultStore (its choices are used and its records mark units stored), or None before
    anything is stored (then a family of its own steps, keyed by what the store holds, lists none)."""
    p, family = profiles_module.resolve(profile), registry.get(family)
    if not family.trains_runs:
        found = planning.work(p, family, store) if store is not None else []
        return [Planned(u, "step", _holds(store, u)) for u in found]
    chosen = choices(p, family, store)
    stage_1 = family.plan(p, {})
    grids = {}
    for c in stage_1:
        grids.setdefault(planning.grid_id(c), set()).add(c.train.lr)
    stage_1 = {config_key(c.to_dict()) for c in stage_1}
    controls = {config_key(c.to_dict()) for _, c in planning.budget_controls(p, family, chosen)}
    out = []
    for config in planning.plan(p, family, chosen):
        unit = planning.training_unit(p, family, config, control=config_key(config.to_dict()) in controls)
        out.append(Planned(unit, _kind(config, stage_1, grids, controls), _holds(store, unit)))
    passes = family.passes(p, store) if family.passes else []
    return out + [Planned(u, added_kind(u), _holds(store, u)) for u in passes]


def added_kind(unit):
    """What a unit a family's work adds is, by what its spec asks: a number of training steps and no
    evaluation (06's timing runs) is a short run; else it scores a stored run's adapter (04's spans)."""
    return "short run" if "steps" in unit.spec else "scoring pass"


def _holds(store, unit):
    return store is not None and store.get(unit.key, unit.family) is not None


# ----------------------------------------------------------------------------- the price

# Blocks per stack, width, feed-forward width and vocabulary of the backbones a profile names (their configs)
SHAPES = {"default": dict(encoder=6, decoder=0, d=384, ff=1536, vocab=30522),  # all-MiniLM-L6-v2
          "tiny": dict(encoder=2, decoder=0, d=64, ff=128, vocab=30522),
          "tiny-t5": dict(encoder=2, decoder=2, d=64, ff=128, vocab=30522),
          "bert-base-uncased": dict(encoder=12, decoder=0, d=768, ff=3072, vocab=30522),
          "t5-base": dict(encoder=12, decoder=12, d=768, ff=3072, vocab=32128)}
ANSWER_TOKENS = 4  # a T5 target ("entailment", "3.4") plus end-of-sequence, roughly
VALIDATION_CAP = 2000  # tasks.py: validation is 10% of GLUE's train split, at most 2,000 examples


def forward_flops(shape, tokens):
    """Matmul FLOPs of one example's forward pass: 2 per weight per token, plus attention's T^2 terms."""
    d, ff = shape["d"], shape["ff"]
    encoder = shape["encoder"] * (2 * tokens * (4 * d * d + 2 * d * ff) + 4 * tokens * tokens * d)
    decoder = shape["decoder"] * 2 * ANSWER_TOKENS * (8 * d * d + 2 * d * ff)
    head = 2 * ANSWER_TOKENS * d * shape["vocab"] if shape["decoder"] else 0
    return encoder + decoder + head


def scale(config, timing):
    """How many timed examples one of a run's examples costs: the ratio of their forward FLOPs, which follows
    the backbone and the tokens (batch_tokens) alike. A backbone SHAPES lacks (a study's own model) is scaled
    by its tokens alone when the timing measured that backbone (what study init times), and is None (no
    price) when it did not."""
    tokens = batch_tokens(config.task, config.max_length, config.train.batch_size, config.task_source)
    shape, timed = SHAPES.get(config.backbone), SHAPES.get(timing.backbone)
    if shape is not None and timed is not None:
        return forward_flops(shape, tokens) / forward_flops(timed, timing.max_length)
    return tokens / timing.max_length if config.backbone == timing.backbone else None


# The caches below key on a task's source too (the data a study's task name stands for: RunConfig.task_source):
# a study's data file can change under the same name between two studies read in one process.


@functools.lru_cache(maxsize=64)
def batch_tokens(task, max_length, batch_size, source=None):
    """The tokens a run's training batches pad to on average: its train texts cut at max_length, in
    length-bucketed batches (tasks.padded_length, rounded up), under the packaged tokenizer (the WordPiece
    vocabulary of every BERT in SHAPES; a T5's differs a little). max_length for GLUE, whose texts are not
    read for an estimate (split_sizes: no download)."""
    if task.partition(":")[0] in planning.GLUE_TRAIN_SIZES:
        return max_length
    lengths = task_registry.token_lengths(task_registry.load_task(task, source=source), default_tokenizer())
    return math.ceil(task_registry.padded_length(np.minimum(lengths, max_length), batch_size))


@functools.lru_cache(maxsize=64)
def split_sizes(task, source=None):
    """{split: examples} of a task: GLUE's from its known train size without a download (validation a tenth of
    train, at most VALIDATION_CAP, as tasks.py carves it; test, the official validation set, taken as large);
    any other task's counted."""
    glue = planning.GLUE_TRAIN_SIZES.get(task.partition(":")[0])
    if glue:
        held_out = min(VALIDATION_CAP, round(glue / 9))
        return {"train": glue, "validation": held_out, "test": held_out}
    return {split: len(data) for split, data in task_registry.load_task(task, source=source).splits.items()}


def scored_examples(spec, sizes):
    """How many examples a scoring pass (a unit of Family.passes) scores: validation up to its cap; held-out
    examples, its cap (study init sets a held-out size to what the train split leaves unseen)."""
    cap = spec["eval_size"] or math.inf
    return int(min(cap, sizes["validation"])) if spec["split"] == "validation" else int(cap)


def run_seconds(config, timing, eval_cap=None):
    """A training run's seconds at `timing`'s speed: Timing.run_seconds (the backbone's load, the run's steps at
    its batch, its evaluations on sets capped at eval_cap) with each example scaled (scale); None without a scale."""
    ratio = scale(config, timing)
    if ratio is None:
        return None
    return timing.run_seconds(config, split_sizes(config.task, config.task_source), eval_cap, scale=ratio)


def pass_seconds(spec, timing):
    """A scoring pass's seconds (a unit of Family.passes, by its spec): its examples (scored_examples) at the
    timed seconds per example, scaled to its run's backbone and tokens; None without either."""
    config = RunConfig.from_dict(spec["config"])
    ratio = scale(config, timing)
    if ratio is None or timing.span_seconds is None:
        return None
    return scored_examples(spec, split_sizes(config.task, config.task_source)) * timing.span_seconds * ratio


def short_run_seconds(spec, timing):
    """A short run's seconds: its spec's training steps at the timed step, scaled to its backbone and tokens,
    and a backbone load (each starts in a process of its own); None without a scale."""
    ratio = scale(RunConfig.from_dict(spec["config"]), timing)
    return None if ratio is None else spec["steps"] * timing.step_seconds * ratio + timing.load_seconds


def seconds(planned, timing):
    """A unit's seconds at `timing`'s speed (run_seconds, pass_seconds); None where it has no price (a family's
    own steps among them)."""
    if planned.kind == "step":
        return None
    if planned.kind == "scoring pass":
        return pass_seconds(planned.unit.spec, timing)
    if planned.kind == "short run":
        return short_run_seconds(planned.unit.spec, timing)
    spec = planned.unit.spec
    return run_seconds(RunConfig.from_dict(spec["config"]), timing, spec["eval_size"])


def of(profile, chosen, timing, store=None):
    """The Estimate of the families `chosen` (Family values or names): every unit (units), and the seconds of
    those `store` lacks at `timing`'s speed (a timing.Timing)."""
    p = profiles_module.resolve(profile)
    planned = [u for family in chosen for u in units(p, family, store)]
    priced = [(u, seconds(u, timing)) for u in planned if not u.stored]
    return Estimate(planned, sum(s for _, s in priced if s is not None), [u for u, s in priced if s is None])
