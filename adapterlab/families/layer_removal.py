"""Notebook 04, Houlsby et al. Fig. 6 (left, centre): which layers' adapters matter.

One Houlsby model (m=64) is trained per task and seed; then the adapters of every span of layers first..last are
removed, one span at a time, and the model scored again: an L x L heatmap. The spans are scored twice: on
validation (the heatmap, of the first seed's run; the run's best state was chosen there, so it judges nothing)
and on train examples no seed's run saw (the claims: one set for every seed, so the seeds' spans pair by
example and the claims' intervals cross seeds and examples). The paper finds the lower layers' adapters
removable and the upper ones mattering.

Its units of work: the training runs, then per task, once its runs are stored, one unit scoring the spans of
the first seed's run of the setting best on validation (and, held out, one per seed's run of that setting and
per budget control of it): evaluations of a stored adapter, kept in their own store file (SPANS).
"""
import math
from dataclasses import dataclass, field

import pandas as pd

from ..experiments import estimate, running, stats
from ..experiments.judge import BUDGET_RULE_VERSION, HOLDS, MOVES, UNDECIDED, awaiting, budget_verdict, claim_move
from ..experiments.families import Family, register
from ..experiments.study_init import at_steps, control_keys
from ..report.tables import FamilyResult, config_of, run_columns, tidy_frame
from ..report.figures import Figure, Heatmap, span_grid, View, check_columns, converged_rows, majority_line, per_task
from ..report.labels import SCALE
from ..experiments.work import Work
from ..experiments.planning import config_for, training_work, budget_controls, chosen_from, describe, eval_size, mean_score, method_lr, run_key, store_lookup, training_unit
from ..experiments.results import config_key
from ..report.findings import Runs, interval_text, judge, pts, unconverged, verdict_lines
from ..report import figures as F
from ..report import labels
from ..experiments.profiles import Common, resolve
from ..report.claims import FIG6, HELD_OUT, SELECTION, accuracy_claim
from ..training import removal
from ..training import train as T

NAME = "layer_removal"
SPLIT = "validation"  # its table's `value`: the heatmap's; the claims read HELD_OUT_TABLE


# ----------------------------------------------------------------------------- settings

@dataclass(frozen=True)
class LayerRemoval(Common):
    """Notebook 04 (Houlsby Fig. 6 left/centre): Houlsby runs, the best on validation ablated."""
    method_args: dict = field(default_factory=dict)  # Houlsby's settings (bottleneck)
    lrs: tuple | None = None  # the learning-rate grid; None: the method's rate
    epochs: tuple | None = None  # the epochs grid; None: the profile's epochs
    keep_adapter: bool = True  # the best run's adapter is what the spans remove layers from
    # the seeds each setting trains with (its budget control too): the heatmap shows the first seed's run; the
    # claims pair the seeds' spans on one held-out set and judge them with seeds and examples crossed
    seeds: tuple = (0,)
    # the claims' split: up to this many train examples that none of the seeds' subsets holds (tasks.unused, in
    # the first seed's order), on which every seed's run (and budget control) is span-scored again; None: the
    # claims await held-out scoring
    held_out: int | None = None

    def grids(self):
        """[(setting, learning-rate grid)] a study checks: each needs two rates or more."""
        return [("lrs", self.lrs)]


PROFILES = {
    "smoke": dict(method_args=dict(bottleneck=16), held_out=200),
    # one model per seed, 240 steps: at twice the steps (its budget control) its score moves less than the
    # margin; three seeds so that the claims' intervals carry the seeds' noise, not only the examples'
    "default": dict(method_args=dict(bottleneck=64), train=dict(max_steps=240, eval_every=40), seeds=(0, 1, 2),
                       budget_control=("airline",), held_out=6000),
    # Houlsby Fig. 6 left/centre (BERT-base, adapter size 64) after its GLUE protocol: lr {3e-5, 3e-4, 3e-3}
    # x epochs {3, 20}, the best on validation is the model whose adapters are removed
    "paper": dict(method_args=dict(bottleneck=64), lrs=(3e-5, 3e-4, 3e-3), epochs=(3, 20)),
}


# ----------------------------------------------------------------------------- plan: runs, then their spans

def plan(p, chosen):
    """One Houlsby model per task and seed (the paper's: one per point of its grid of rates and epochs)."""
    s = p.settings(NAME)
    lrs = s.lrs or (method_lr(p, "houlsby"),)
    epochs = s.epochs or (p.train.get("epochs", 3),)
    return [
        config_for(p, task=task, method="houlsby", method_args=s.method_args, lr=lr, epochs=e, seed=seed,
                   family_train=s.train)
        for task in s.tasks or p.tasks for lr in lrs for e in epochs for seed in s.seeds
    ]


SPANS = "layer_removal_spans"  # the store file of the span scores: evaluation of a stored adapter, no training


def _setting(config):
    """What a setting's runs of every seed share: a run's config (a record's dict) without its seed."""
    return config_key({**config, "train": {k: v for k, v in config["train"].items() if k != "seed"}})


def best_seeds(records):
    """{task: [the records of its setting best on validation, one per seed, by seed]}, tasks in first-seen
    order: the setting (rate, epochs) with the best mean validation score over its seeds (the first best on a
    tie), whose runs' adapters layer removal takes out, span by span."""
    by_task = {}
    for r in records:
        by_task.setdefault(r["task"], {}).setdefault(_setting(r["config"]), []).append(r)

    def mean_validation(runs):
        return mean_score([r["validation"] for r in runs])
    return {task: sorted(max(settings.values(), key=mean_validation), key=lambda r: r["config"]["train"]["seed"])
            for task, settings in by_task.items()}


def best_runs(records):
    """{task: the first seed's record of its setting best on validation} (best_seeds): the run whose spans the
    heatmap shows."""
    return {task: runs[0] for task, runs in best_seeds(records).items()}


def scored_seeds(profile, store):
    """{task: [RunConfig, one per seed]} of the runs whose spans layer removal scores: per task, the setting best
    on validation (best_seeds) of the family's runs (budget controls aside), once every run of that task is
    stored."""
    p = resolve(profile)
    lookup = store_lookup(store, p, NAME)
    found = [(c, lookup(c)) for c in plan(p, chosen_from(p, NAME, lookup))]
    waiting = {c.task for c, r in found if r is None}
    best = best_seeds([r for c, r in found if c.task not in waiting])
    return {task: [next(c for c, r in found if r is record) for record in records]
            for task, records in best.items()}


def scored_runs(profile, store):
    """{task: RunConfig} of the runs whose spans the heatmap shows: each task's first seed of scored_seeds."""
    return {task: runs[0] for task, runs in scored_seeds(profile, store).items()}


def held_out_seeds(settings):
    """The seeds whose subsets the held-out examples avoid, the first one's order theirs: every seed the
    family trains, so that all of its runs are scored on one set of examples none of them saw."""
    return tuple(settings.seeds)


def span_key(profile, config, split="validation"):
    """The store key of a run's span scores: the run's key, the split scored, how many examples at most
    (validation: the family's eval_size; removal.HELD_OUT: its held_out setting) and, for a held-out set that
    avoids other seeds' subsets than the run's own, those seeds ("unseen_by"): the held-out set's identity,
    so that a run scored on a set shared by several seeds is another unit than on the set of its seed alone."""
    p = resolve(profile)
    s = p.settings(NAME)
    if split != removal.HELD_OUT:
        return {"run": run_key(config, p, NAME), "split": split, "eval_size": eval_size(p, NAME)}
    key = {"run": run_key(config, p, NAME), "split": split, "eval_size": s.held_out}
    seeds = held_out_seeds(s)
    return key if seeds == (config.train.seed,) else {**key, "unseen_by": list(seeds)}


def span_unit(profile, config, split="validation"):
    """Scoring the spans of one stored run on `split` (removal.evaluate_spans) as a unit of work: it reads
    the run's saved adapter, so the run is its need (work.ready trains the run again when the adapter is
    gone). Held out, the spec names the seeds whose subsets the examples avoid."""
    p = resolve(profile)
    key = span_key(p, config, split)
    spec = {"step": "spans", "config": config.to_spec(), "split": split, "eval_size": key["eval_size"]}
    if split == removal.HELD_OUT:
        spec["seeds"] = list(held_out_seeds(p.settings(NAME)))
    return Work(SPANS, key, spec, needs=(training_unit(p, NAME, config),),
                label=f"spans of {describe(config)} on {split}")


def held_out_runs(profile, store):
    """{task: [[a seed's scored run, then its budget controls] for each seed]} of the runs whose spans are
    scored on held-out examples (the setting held_out): the scored runs (scored_seeds), each followed by its
    budget controls, whose spans show whether the claims survive twice the steps. Empty when held_out is None."""
    p = resolve(profile)
    if p.settings(NAME).held_out is None:
        return {}
    chosen = chosen_from(p, NAME, store_lookup(store, p, NAME))
    return _with_controls(p, scored_seeds(p, store), chosen)


def _with_controls(p, scored, chosen):
    """{task: [[a seed's run, then its budget controls] for each seed]} for {task: [scored run per seed]}."""
    controls = budget_controls(p, NAME, chosen)
    return {task: [[run, *[c for r, c in controls if r == run]] for run in runs] for task, runs in scored.items()}


def _span_units(p, scored, held_out):
    """Span units: one on validation per scored run (the heatmap's: {task: run}), one on held-out examples per
    run of `held_out` (held_out_runs: the claims')."""
    return ([span_unit(p, c) for c in scored.values()]
            + [span_unit(p, c, removal.HELD_OUT) for groups in held_out.values() for runs in groups for c in runs])


def work(p, family, store):
    """Layer removal's training runs, then per task whose runs are all stored one span unit on validation
    (the heatmap's) and, where the profile holds examples out, the held-out units its claims read."""
    return training_work(p, family, store) + _span_units(p, scored_runs(p, store), held_out_runs(p, store))


def span_units_to_come(profile, store=None):
    """The span units layer removal's work will hold once all its runs are stored: per task whose runs `store`
    holds, those of its scored runs (scored_seeds); for a task still training, its first planned run of each
    seed stands in for the one validation will pick, which changes the units' keys but not their number,
    splits or sizes. What a plan's scoring will cost before it is trained (estimate.units); `store`: None
    before any run."""
    p = resolve(profile)
    stand_in = {}
    for c in plan(p, {}):
        stand_in.setdefault(c.task, {}).setdefault(c.train.seed, c)
    seeds = {task: list(by_seed.values()) for task, by_seed in stand_in.items()}
    if store is not None:
        seeds |= scored_seeds(p, store)
    chosen = estimate.choices(p, NAME, store)
    held_out = {} if p.settings(NAME).held_out is None else _with_controls(p, seeds, chosen)
    return _span_units(p, {task: runs[0] for task, runs in seeds.items()}, held_out)


def score_spans(spec, needs, out):
    """The worker of a span unit (span_unit): every span of the run's saved adapter (its need's
    files) scored on the spec's split (held out: avoiding the subsets of the spec's seeds)."""
    return removal.evaluate_spans(T.RunConfig.from_dict(spec["config"]), needs[0], spec["eval_size"], spec["split"],
                                  progress=spec.get("progress", False), seeds=spec.get("seeds"))


# ----------------------------------------------------------------------------- table

def stored_spans(profile, records, root=None):
    """{task: span record} of the runs layer removal ablated (best_runs of the family's records),
    read from the store under `root` (SPANS), where their units of work (span_unit)
    put them."""
    p = resolve(profile)
    store = running.store_of(p, root=root)
    return {task: store.get(span_key(p, config_of(best)), SPANS)
            for task, best in best_runs(records).items()}


def stored_held_out_spans(profile, records, root=None):
    """{task: [[(RunConfig, its span record) of a seed's scored run, then of each of its budget controls] for
    each seed]} on held-out examples (held_out_runs; {} when the profile holds none out), from the store under
    `root`."""
    p = resolve(profile)
    store = running.store_of(p, root=root)
    return {task: [[(c, store.get(span_key(p, c, removal.HELD_OUT), SPANS)) for c in runs] for runs in groups]
            for task, groups in held_out_runs(p, store).items()}


def _span_rows(p, task, best, s):
    """One row per span of one task's span record `s` of the run `best` (its record)."""
    config = config_of(best)
    key = run_key(config, p, NAME)
    bits = s.get("correct", {})  # absent from span records stored before they kept it
    correct = {(i, j): b for i, j, b in bits.get("spans", [])}
    return [dict(task=task, first_layer=i, last_layer=j, metric=s["metric"], value=value,
                 full_value=s["full"], baseline=s["majority"], drop=value - s["full"],
                 correct=correct.get((i, j)), full_correct=bits.get("full"),
                 n_removed=j - i + 1, n_layers=s["layers"], backbone=config.backbone,
                 **run_columns(best),
                 epochs=best["steps"] * config.train.batch_size / best["train_examples"],
                 eval_examples=s["eval_examples"], run_key=config_key(key))
            for i, j, value in s["spans"]]


def build_tables(profile, records, spans, held_out):
    """The layer-removal table from the family's run records and {task: span record} (stored_spans).
    Houlsby Fig. 6 left/centre: the adapters of layers first..last removed, scored on validation.

    One row per span (i <= j), n(n+1)/2 rows per task for n blocks. Columns:
      task, first_layer, last_layer (0-based block indices, inclusive), metric, value
      full_value   the same model with no adapter removed (same validation examples)
      baseline     majority-class score on those validation examples
      drop         value - full_value (<= 0 when removing hurts)
      n_removed    last_layer - first_layer + 1;  n_layers: blocks in the model
      backbone, lr, steps, epochs (passes over the train set), eval_examples,
      run_key (the store key of the trained run)
      correct, full_correct  which examples the span (and the unablated model) classifies right,
                   train.correct_bits hex (empty for span records stored without them, or a metric
                   other than accuracy): differences between spans pair by example (stats.by_example)
    The all-removed cell is first_layer=0, last_layer=n_layers-1; the diagonal is single layers.
    timings: {"cached_seconds", "naive_seconds", "examples"} summed over the tasks' span records.

    `held_out` ({task: span records per seed}, stored_held_out_spans) gives the extra table HELD_OUT_TABLE, what
    the claims read: the same columns for the spans of every seed's run scored on one set of examples no seed's
    run trained on (one row per span and seed), with majority_correct (the majority-class predictor's bits) and,
    from the seed's budget control, value_2x, full_value_2x, correct_2x, full_correct_2x and steps_2x on the
    same examples."""
    p = resolve(profile)
    best = best_runs(records)
    rows = [row for task, run in best.items() for row in _span_rows(p, task, run, spans[task])]
    timings = [s["timing"] for s in spans.values() if s.get("timing")]
    return FamilyResult(NAME, tidy_frame(rows, FAMILY),
                        extra={HELD_OUT_TABLE: held_out_table(p, best_seeds(records), held_out)} if held_out else {},
                        timings={k: sum(t[k] for t in timings) for k in ("cached_seconds", "naive_seconds", "examples")}
                        if timings else None)


HELD_OUT_TABLE = "layer_removal_held_out"  # the spans on held-out examples: what 04's claims read


def held_out_table(p, best, held_out):
    """The spans of each task's scored runs on held-out examples (build_tables's HELD_OUT_TABLE), from `best`
    ({task: the scored runs' records}, best_seeds) and `held_out` (stored_held_out_spans)."""
    rows = []
    for task, groups in held_out.items():
        record_of = {r["config"]["train"]["seed"]: r for r in best[task]}
        for (config, s), *controls in groups:
            rows += _held_out_rows(p, task, record_of[config.train.seed], s, controls)
    return tidy_frame(rows, FAMILY).assign(split=removal.HELD_OUT)


def _held_out_rows(p, task, run, s, controls):
    """The rows of one seed's run (its record `run`, its held-out span record `s`) with the majority class's
    bits and its budget controls' columns ([(RunConfig, span record)])."""
    mine = _span_rows(p, task, run, s)
    for row in mine:
        row["majority_correct"] = s["correct"]["majority"]
    for config, control in controls:  # budget_factor x the steps, scored on the same examples
        at_2x = {(i, j): (v, b) for (i, j, v), (_, _, b) in zip(control["spans"], control["correct"]["spans"])}
        for row in mine:
            row["value_2x"], row["correct_2x"] = at_2x[row["first_layer"], row["last_layer"]]
            row.update(full_value_2x=control["full"], full_correct_2x=control["correct"]["full"],
                       steps_2x=config.train.max_steps)
    return mine


def build(profile, records, root=None):
    """The family's table from its runs' records and the span scores their units stored under `root`."""
    return build_tables(profile, records, stored_spans(profile, records, root),
                        stored_held_out_spans(profile, records, root))


# ----------------------------------------------------------------------------- figure


def figure(df, span=None):
    """Houlsby Fig. 6 left/centre, per task: the validation score with the adapters of layers first..last
    removed ("score") and its change against no removal. One trained model, so no error bars; `span`
    (first, last) outlines one span (the explorer's pick)."""
    check_columns(df, ["task", "first_layer", "last_layer", "value", "full_value"], NAME)
    views = {}
    for t, rows, prefix in per_task(df):
        (z, layers, full), metric = span_grid(rows), str(rows["metric"].iloc[0])
        unit, n, majority = labels.metric_unit(metric), len(layers), majority_line(rows)
        outline = [(k, k, "black") for k in range(n)] + [(0, n - 1, "white")]
        outline += [(layers.index(span[0]), layers.index(span[1]), "#E69F00")] if span else []
        facts = [f"no removal {full * SCALE:.1f}{unit}", f"all removed {z[0, -1] * SCALE:.1f}{unit}",
                 *[f"majority class {y:.1f}{unit}" for _, y, _ in majority]]
        run = "one trained model, no error bars" + "; ✕ its run did not converge" * (not converged_rows(rows).all())
        for mode, rel in (("score", False), ("change vs. no removal", True)):
            views[prefix + mode] = View(
                f"{t}: {'change in ' * rel}validation {labels.metric_name(metric)} with adapters removed from layers "
                f"first…last\n{' · '.join(facts)}\n{run}; outlined: one layer; white: all layers",
                "last layer with adapters removed", "first layer with adapters removed", False, task=t,
                heatmap=Heatmap(((z - full * rel) * SCALE).tolist(), layers,
                                labels.metric_label(metric, rel) + " vs. no removal" * rel, rel,
                                {"no removal": full * SCALE * (not rel), **{k: y - full * SCALE * rel
                                                                           for k, y, _ in majority}}, outline,
                                hover="layers %{y}–%{x} removed: %{z:.2f}"))
    return Figure("layer_removal", views)


# ----------------------------------------------------------------------------- claims and reading

# each seed's trained model with the adapters of some layers removed, paired by example with it on one set of
# held-out examples, the seeds and the examples crossed (stats.two_level)
CLAIMS = (
    accuracy_claim(NAME, "{task}: lower layers' adapters removable with a small loss (layers 0–{last_lower} "
                   "removed vs none)", "==", "lower half removed", "none removed",
                   f"removing layers 0–4 of 12 barely affects MNLI ({FIG6})", split=HELD_OUT),
    accuracy_claim(NAME, "{task}: upper layers' adapters matter more (lower half removed minus upper half "
                   "removed)", ">", "lower half removed", "upper half removed",
                   f"removing layers 8–11 costs far more than 0–4 ({FIG6})", split=HELD_OUT),
    accuracy_claim(NAME, "{task}: any single layer's adapters removable (each layer removed vs none)", "==",
                   "one layer removed", "none removed", f"at most 2 points for any single layer ({FIG6}, diagonal)",
                   split=HELD_OUT, margin=0.02, members="each layer"),
    accuracy_claim(NAME, "{task}: all adapters removed falls to the majority class (paired by example with "
                   "the majority-class predictor)", "==", "all removed", "majority class",
                   f"the majority class: 37% MNLI, 69% CoLA ({FIG6})", split=HELD_OUT),
)


def _per_seed(d):
    """One task's table as one frame per seed's run, in seed order (the whole table when it names no seed)."""
    return [g for _, g in d.groupby("seed", sort=True)] if "seed" in d else [d]


def _spans(d, split, budget=""):
    """(bits, value) of span x on the table's examples (x: (first, last), None for nothing removed, "majority
    class" for the majority-class predictor): bits(x), each seed's per-example correct bits (a list in seed
    order, what stats.two_level pairs), and value(x), its score's mean over the seeds; from the table's columns
    correct, full_correct and majority_correct; budget "_2x": the budget control's columns (correct_2x, ...)."""
    runs = _per_seed(d)

    def row(g, x):
        return g[(g["first_layer"] == x[0]) & (g["last_layer"] == x[1])].iloc[0]

    def one(g, x):
        column = {None: f"full_correct{budget}", "majority class": "majority_correct"}.get(x)
        if column is not None and column not in g:
            raise ValueError(f"the layer-removal table scored on {split} has no {column}; score the spans with each "
                             "example's correctness of the full model and of the majority-class predictor")
        return g[column].iloc[0] if column else row(g, x)[f"correct{budget}"]

    def bits(x):
        return [one(g, x) for g in runs]

    def value(x):
        return sum(float(g[f"full_value{budget}"].iloc[0] if x is None else row(g, x)[f"value{budget}"])
                   for g in runs) / len(runs)
    return bits, value


def _members(d, claim):
    """(names, [(span a, span b)]) of a declared 04 claim's members: span a's score minus span b's (claims.py
    names them: "lower half removed", "majority class", ...), or each layer removed alone against none."""
    layers, half = int(d["n_layers"].iloc[0]), int(d["n_layers"].iloc[0]) // 2
    span = {"none removed": None, "lower half removed": (0, half - 1), "upper half removed": (half, layers - 1),
            "all removed": (0, layers - 1), "majority class": "majority class"}
    if claim.members:
        return [f"layer {i}" for i in range(layers)], [((i, i), span[claim.b]) for i in range(layers)]
    return [], [(span[claim.a], span[claim.b])]


def span_members(d, claim):
    """(Differences, names) of a declared 04 claim's members on one task's table (_members): a - b paired by
    seed and by example on the table's own split, seeds and examples crossed (stats.two_level; one seed: the
    interval of that run, its examples' sampling only)."""
    n, split = int(d["eval_examples"].iloc[0]), d["split"].iloc[0]
    bits, _ = _spans(d, split)
    names, pairs = _members(d, claim)
    return [stats.two_level(bits(b), bits(a), n, split) for a, b in pairs], names


def span_moves(d, claim):
    """[stats.Difference] of each member's move at the budget control's steps (its _2x columns): (a - b at 2x)
    - (a - b at 1x), over the seeds that have a control, paired by seed and example on the table's split; []
    when no seed has one."""
    if "correct_2x" not in d:
        return []
    controlled = d[d["correct_2x"].map(lambda bits: isinstance(bits, str))]
    if not len(controlled):
        return []
    n, split = int(d["eval_examples"].iloc[0]), d["split"].iloc[0]
    (at_1x, _), (at_2x, _) = _spans(controlled, split), _spans(controlled, split, "_2x")
    return [claim_move(n, at_1x(a), at_2x(a), at_1x(b), at_2x(b), split) for a, b in _members(d, claim)[1]]


def _runs_text(d, split, n):
    """'one run, its spans scored on the held-out split, 6,000 examples' or, for several seeds, '3 runs (seeds
    0, 1, 2), their spans scored on the same 6,000 examples of the held-out split'."""
    seeds = [int(g["seed"].iloc[0]) for g in _per_seed(d)] if "seed" in d else [0]
    if len(seeds) == 1:
        return f"one run, its spans scored on the {split} split, {n:,} examples"
    return (f"{len(seeds)} runs (seeds {', '.join(map(str, seeds))}), their spans scored on the same {n:,} examples "
            f"of the {split} split")


def read(df, budget=None):
    """04's reading: one run's spans, and verdicts on Houlsby's Fig. 6 once the spans are scored on held-out
    examples."""
    lines, found = [], []
    for task, d in df.groupby("task", sort=False):
        n, layers, split = int(d["eval_examples"].iloc[0]), int(d["n_layers"].iloc[0]), d["split"].iloc[0]
        bits, value = _spans(d, split)
        runs = _per_seed(d)
        full, base = value(None), sum(float(g["baseline"].iloc[0]) for g in runs) / len(runs)
        converged = unconverged(pd.concat([g.head(1) for g in runs]))
        means = "" if len(runs) == 1 else "seed means: "
        half = layers // 2
        worst = min(range(layers), key=lambda i: value((i, i)))
        lines += [f"**Layer removal, {task}** ({_runs_text(d, split, n)}; "
                  f"sampling SE of one score {pts(math.sqrt(full * (1 - full) / n))} points; "
                  f"{converged.replace('runs', 'run') if len(runs) == 1 else converged}):",
                  f"- {means}every adapter {pts(full)}; lower half (layers 0–{half - 1}) removed {pts(value((0, half - 1)))}, "
                  f"upper half ({half}–{layers - 1}) removed {pts(value((half, layers - 1)))}, all removed "
                  f"{pts(value((0, layers - 1)))}; majority class {pts(base)}.",
                  f"- {means}one layer removed, minus every adapter: " + ", ".join(
                      f"layer {i} {pts(value((i, i)) - full, True)}" for i in range(layers))
                  + f" points (at worst layer {worst}; no interval: the worst of {layers} is chosen by the data)."]
        fields = dict(task=task, last_lower=half - 1)
        if split == SELECTION:
            lines.append(f"- its claims await held-out scoring: the spans are scored on the {split} split, where the "
                         "run's best state was chosen, which judges no claim.")
            found += [(c.says.format(**fields), awaiting(c.hypothesis, c.paper, f"{c.split} scoring",
                                                         "spans scored on validation only", c.margin, c.unit,
                                                         c.paper_value, c.split))
                      for c in CLAIMS]
            continue
        moves = {c: span_moves(d, c) for c in CLAIMS}
        if any(moves.values()):
            lines.append(f"- budget control (rule {BUDGET_RULE_VERSION}): each claim's move at "
                         f"{int(d['steps_2x'].iloc[0])} steps on the same examples, shown inside ±"
                         f"{stats.MARGIN * 100:g} points (90% interval) or not: " + "; ".join(
                             f"{c.a} vs {c.b} {_move_text(m)}" for c, m in moves.items()) + ".")
        # what every claim rests on: the runs, every adapter in place, against the majority-class predictor
        gate = Runs((stats.two_level(bits("majority class"), bits(None), n, split),),
                    tuple(bool(g["converged"].iloc[0]) for g in runs))
        found += [judge(claim, *span_members(d, claim),
                        held=bool(moves[claim]) and all(budget_verdict(m) == HOLDS for m in moves[claim]),
                        runs=gate, **fields)
                  for claim in CLAIMS]
    return lines + verdict_lines(found), found


def _move_text(moves):
    """'+0.3 [-0.4, +1.0] holds' for one claim's moves (its worst member's interval when it has several)."""
    verdicts = [budget_verdict(m) for m in moves]
    level = 1 - 2 * stats.ALPHA_EQUIVALENCE
    worst = max(moves, key=lambda m: max(abs(x) for x in m.ci(level)) if m.testable else math.inf)
    label = next((v for v in (MOVES, UNDECIDED) if v in verdicts), HOLDS)
    return (f"{pts(worst.estimate, True)} {interval_text(worst, level)}"
            + (f" (the widest of {len(moves)})" if len(moves) > 1 else "") + f" **{label}**")


# ----------------------------------------------------------------------------- study init

def held_out_size(default, n_train, seeds=1):
    """How many train examples 04 scores its claims on, unseen by any of its `seeds` runs: the default profile's
    held_out, as far as the part of the train split that the seeds' train_size subsets surely leave out holds
    them (their union is at most seeds x train_size; 0: none, the runs train on all)."""
    return min(default.settings(NAME).held_out, max(0, n_train - seeds * default.train_size))


def study(s, scale):
    """What `study init` writes for 04: the default profile's settings `s` at the study's scale."""
    keys = [("method_args", dict(s.method_args), "notebook 04: a Houlsby model (adapter size m) per seed, whose "
                                                 "adapters are then removed span by span"),
            ("seeds", list(scale.seeds), "its claims cross the seeds' runs with the held-out examples"),
            ("train", at_steps(s.train, scale.steps), "its steps (at least what the pilot found a run needs here), "
                                                      "validated every eval_every steps"),
            *control_keys([scale.task], scale)]
    held_out = held_out_size(scale.default, scale.n_train, len(scale.seeds))
    if held_out:
        keys.append(("held_out", held_out, "its claims are judged on this many train examples its run never saw "
                                           "(the heatmap stays on validation, where the run's best state was "
                                           "chosen); leave out: the claims await held-out scoring"))
    return keys


FAMILY = register(Family(
    NAME, "04_layer_removal", LayerRemoval, PROFILES, split=SPLIT, plan=plan,
    control_entry=lambda c: c.task,  # a budget_control entry names a task
    work=work, passes=span_units_to_come, steps={"spans": score_spans},
    columns=("task", "first_layer", "last_layer", "metric", "value"), build=build, read=read, claims=CLAIMS,
    claims_table=HELD_OUT_TABLE,
    figures={"layer_removal": F.Entry(figure, "layer_removal.csv",
                                     {"layer_removal_heatmap": ["score"],
                                      "layer_removal_heatmap_relative": ["change vs. no removal"]},
                                     {"layer_removal_heatmap": None})},
    filters={"task": "task"}, study=study))
