"""The findings of every training notebook, read from its tidy CSV: each paper claim its family declares
(Family.claims), measured on its declared split and judged, with our interval and the paper's own number.

Every number that the notebooks' "Reading the result" cells, FINDINGS.md and the README's table of claims
state comes from here, so no text can contradict the data:

    from adapterlab.report import findings
    print("\\n".join(findings.reading("05", df, budget)))   # markdown lines for one family's table
    findings.claims("05", df, budget)           # [(claim, experiments.judge.Verdict)]: what the lines judge
    findings.budget_control(budget)             # the family's budget controls, judged by budget rule 3

A family's reading (Family.read) is in its module; the pieces every reading shares are here.

Every reading together, as FINDINGS.md and the README's table of claims: adapterlab.report.document.

The statistics are adapterlab.experiments.stats's, and the verdicts adapterlab.experiments.judge's, and only
those: runs that share a seed (and so a subset and a data order) are compared paired by seed and by example, their
interval carrying the noise of the seeds and of the examples (crossed random effects); a claim's hypothesis, split
and members are the ones its family declares, whatever the data show. Convergence is the verdict each run was
trained under (the table's `converged`, stamped by the current rule). `budget` is the family's budget-control
table: a claim is judged "at this budget" unless its own control holds (without the table, every claim that can
move with the budget is). A claim is judged at all only on runs that learned, and, where none of its runs
converged, only with a control of its own that holds (unjudged): otherwise it reads "not judged" and no test is
made.
"""

import math
from dataclasses import dataclass

import pandas as pd

from .csvs import read_csv
from ..experiments import families, profiles, rules, stats
from ..experiments.judge import BUDGET_RULE_VERSION, HOLDS, MOVES, budget_verdict, claim_move, verdict
from . import claims as declared


def pts(value, signed=False):
    """A fraction as points x100: 0.823 -> '82.3'."""
    return f"{value * 100:{'+' if signed else ''}.1f}"


def by_seed(d, a, b, column="label", split=declared.TEST):
    """a - b over the seeds both sides have (the rows whose `column` is a against those where it is b), from
    each run's per-example correctness on `split` (its `<split>_correct` bits): stats.two_level, whose interval
    carries the noise of the seeds and of the examples."""
    bits, count = f"{split}_correct", f"{split}_examples"
    ra, rb = (d[d[column] == x].drop_duplicates("seed").set_index("seed") for x in (a, b))
    seeds = ra.index.intersection(rb.index).sort_values()
    if bits not in d or not len(seeds) or not all(isinstance(x, str) for x in
                                                  [*ra.loc[seeds, bits], *rb.loc[seeds, bits]]):
        raise ValueError(f"the table has no per-example {split} record ({bits}) of {a} and {b} on a seed they "
                         "share; rebuild it from the store (report.tables), whose records keep each run's bits")
    return stats.two_level(list(rb.loc[seeds, bits]), list(ra.loc[seeds, bits]), int(ra[count].iloc[0]), split)


def end_of_grid(lr, grid):
    """"lowest" or "highest" when `lr` is that end of `grid` (space-separated rates, more than one), else None."""
    rates = sorted(float(r) for r in grid.split()) if isinstance(grid, str) else []
    return ("lowest" if lr == rates[0] else "highest" if lr == rates[-1] else None) if len(rates) > 1 else None


def at_grid_end(rows, column="label"):
    """'full, lora': the settings among rows whose chosen learning rate is the lowest or highest of its grid."""
    if "lr_grid" not in rows or "lr" not in rows:
        return ""
    return ", ".join(str(name) for name, g in rows.groupby(column, sort=False)
                     if end_of_grid(g["lr"].iloc[0], g["lr_grid"].iloc[0]))


def judge(claim, diffs, names=(), held=False, grid_end="", runs=None, **fields):
    """(title, Verdict) of a declared claim on its members' differences: its title filled from `fields`, its
    verdict "at this budget" unless the claim cannot move with the budget or its own control `held`. `runs`
    (Runs: the claim's arms against the majority class, and its runs' convergence) decides whether it is judged
    at all (unjudged)."""
    judged = verdict(diffs, claim.hypothesis, claim.paper, claim.margin, claim.unit, claim.paper_value,
                     at_budget=claim.budget and not held, grid_end=grid_end, names=names,
                     log_ratio=claim.log_ratio, split=claim.split,
                     unjudged=unjudged(claim, runs, held) if runs is not None else "")
    return claim.says.format(**fields), judged


@dataclass(frozen=True)
class Runs:
    """What a claim rests on, for deciding whether to judge it: each arm's score minus the majority class on the
    claim's split (stats.over_majority), and the convergence verdict of every run of its arms."""
    gains: tuple
    converged: tuple


def unjudged(claim, runs, held):
    """Why a claim is not judged, or "": stats.NOT_LEARNED when no arm is shown to have learned (stats.learned),
    else stats.NOT_CONVERGED when the claim can move with the budget, none of its runs converged (the current
    convergence rule) and no budget control of its own holds: its verdict would then be about where training
    stopped, not about the methods. One converged run, or a control that holds, is enough to judge it "at this
    budget" (the verdict says so)."""
    if not stats.learned(runs.gains, claim.margin):
        return stats.NOT_LEARNED
    if claim.budget and not held and not any(runs.converged):
        return stats.NOT_CONVERGED
    return ""


def baseline_on(d, split):
    """The majority class's score on `split` in a table: its `baseline_<split>` column where it has one, else its
    `baseline` when the table's own split is that one."""
    if f"baseline_{split}" in d:
        return float(d[f"baseline_{split}"].iloc[0])
    if "baseline" in d and d["split"].iloc[0] == split:
        return float(d["baseline"].iloc[0])
    raise ValueError(f"the table has no majority-class score on the {split} split (baseline_{split}); rebuild it "
                     "from the store (report.tables), whose records keep each split's majority class")


def runs_of(d, arms, column="label", split=declared.TEST):
    """Runs of a claim comparing the rows whose `column` is each of `arms` (one row per seed), on `split`: each
    arm's gain over the majority class from its runs' `<split>_correct` bits, every run's convergence."""
    majority, n = baseline_on(d, split), int(d[f"{split}_examples"].iloc[0])
    rows = [d[d[column] == arm] for arm in arms]
    return Runs(tuple(stats.over_majority(list(r[f"{split}_correct"]), n, majority, split) for r in rows),
                tuple(bool(c) for r in rows for c in r["converged"]))


def interval_text(diff, level=stats.LEVEL, words=""):
    """'[-6.0, -0.2]' in points, the interval at `level` of a stats.Difference (`words` before its ends: '90% CI
    '); zero-width for an exact difference; '(no interval: no noise estimate)' without a noise estimate."""
    if not diff.testable:
        return "(no interval: no noise estimate)"
    low, high = diff.ci(level)
    return f"[{words}{pts(low, True)}, {pts(high, True)}]"


def p_text(p):
    """A p-value as the pages print it: three decimals, and "< 0.001" below them (never "0.000")."""
    return "no test" if math.isnan(p) else "< 0.001" if p < 0.001 else f"{p:.3f}"


def ci_text(diff):
    """'-3.1 [-6.0, -0.2]' in points, the 95% interval of a stats.Difference; an exact one says why its interval
    has no width ('+0.0 [+0.0, +0.0] (identical predictions: no sampling noise)')."""
    exact = ("" if not diff.exact else f" ({stats.IDENTICAL})" if diff.estimate == 0 else " (no sampling noise)")
    return f"{pts(diff.estimate, True)} {interval_text(diff)}{exact}"


# A learning rate chosen on validation by fewer validation examples than this is flagged a near-tie in the
# readings: a choice that a handful of examples decide could go the other way on another validation draw, and a
# claim then rests on a rate that may be the best by chance. A disclosure, not a test: it moves no choice and no
# verdict.
NEAR_TIE_EXAMPLES = 5


def chosen_text(lr, grid, means=None, examples=None, seeds=1):
    """'(chosen on validation from 0.001 0.003 0.01; ahead of 0.001 by 0.6 points, 8 of 1,442 validation examples)':
    the grid (space-separated rates), the choice's margin over the next best rate when the grid's mean
    validation scores (`means`, space-separated in the grid's order: tables.grid_columns) are given
    (choice_margin), and a flag when the choice is an end of the grid: the grid then does not bracket the best
    rate, which may lie beyond it (a wider grid is a new protocol, not a relabelling)."""
    end = end_of_grid(lr, grid)
    beyond = {"lowest": "lower", "highest": "higher"}.get(end)
    margin = choice_margin(lr, grid, means, examples, seeds) if isinstance(means, str) and means else ""
    return f" (chosen on validation from {grid}" + margin + (f"; the grid's {end}: a {beyond} rate was not tried)"
                                                             if end else ")")


def choice_margin(lr, grid, means, examples=None, seeds=1):
    """'; ahead of 0.001 by 0.6 points, 8 of 1,442 validation examples', the margin of the chosen rate's mean
    validation score over the next best rate's in its grid: in points, and, given the number of validation
    examples each run scores (an accuracy's denominator), in examples: the margin times that number. When the
    choice averages several seeds that is the margin of the mean: how many more examples the chosen rate got
    right per seed, on average (a multiple of 1/seeds). Fewer than NEAR_TIE_EXAMPLES is flagged a near-tie, none
    a tie, with the rule that broke it (planning.choose_lrs: the smaller rate). "" for a grid of one rate."""
    scores = dict(zip(grid.split(), (float(m) for m in means.split())))
    chosen = f"{lr:g}"
    others = {rate: score for rate, score in scores.items() if rate != chosen}
    if chosen not in scores or not others:
        return ""
    margin = scores[chosen] - max(others.values())
    nearest = [rate for rate, score in others.items() if score == max(others.values())]
    mean = f" in the mean of {seeds} seeds" if seeds > 1 else ""
    if examples is None:
        return f"; ahead of {' and '.join(nearest)} by {pts(margin)} points{mean}"
    # scores are counts over `examples`, averaged over seeds: a real margin is at least 1/seeds of an example, so
    # rounding away float error (~1e-13 examples) cannot merge two different counts
    apart = round(margin * examples, 6)
    if apart == 0:
        broken = ("the tie-break takes the smaller rate" if all(lr < float(r) for r in nearest) else
                  "taken on the means' float rounding, not by the tie-break (the smaller rate)")
        return f"; a tie with {' and '.join(nearest)}{mean}, 0 of {examples:,} validation examples apart: {broken}"
    near = (f": a near-tie, fewer than {NEAR_TIE_EXAMPLES} examples, that another validation draw could reverse"
            if apart < NEAR_TIE_EXAMPLES else "")
    return (f"; ahead of {' and '.join(nearest)} by {pts(margin)} points, {apart:.3g} of {examples:,} validation "
            f"examples{mean}{near}")


def choice_text(rows):
    """chosen_text of one setting's rows of a family's table (their lr, lr_grid and, where the table carries them,
    lr_grid_validation, lr_grid_seeds, validation_examples, metric); "" without a grid. The margin is counted in
    examples only for accuracy, whose score is a count of examples over validation_examples (the same
    validation split every run of the grid scores)."""
    first = rows.iloc[0]
    if not (isinstance(first.get("lr_grid"), str) and first["lr_grid"]) or "lr" not in rows:
        return ""
    accuracy = first.get("metric") == "accuracy" and pd.notna(first.get("validation_examples"))
    return chosen_text(first["lr"], first["lr_grid"], first.get("lr_grid_validation"),
                       int(first["validation_examples"]) if accuracy else None,
                       int(first["lr_grid_seeds"]) if pd.notna(first.get("lr_grid_seeds")) else 1)


# ----------------------------------------------------------------------------- convergence

def unconverged(df):
    """What the table says about convergence: the verdicts the current rule stamped on each run, and why the
    unconverged ones are not (the rule's two clauses)."""
    current = rules.CONVERGENCE_RULE_VERSION
    versions = sorted({int(v) for v in df["rule_version"].dropna()}) if "rule_version" in df else []
    if "converged" not in df or versions != [current] or df["rule_version"].isna().any():
        raise ValueError(f"the table's runs are not all judged by convergence rule {current} (rule versions "
                         f"{versions or 'not recorded'}); rebuild it from records the current runner stamped "
                         "(report.tables), retraining runs judged by an older rule")
    stored = df["converged"].astype(bool)
    return f"{stored.sum()} of {len(df)} runs converged (rule {current})" + _why_not(df, stored)


def _why_not(df, verdicts):
    """'; not converged under rule 3: 16 still gaining or unmeasured, 2 with a final training loss >= ...' for
    the rows the rule left unconverged: its plateau clause (rules.converged) failed, or its loss clause."""
    CONVERGENCE, current = rules.CONVERGENCE, rules.CONVERGENCE_RULE_VERSION
    if verdicts.all():
        return ""
    plateaued = pd.Series([stats.gain_below_margin(gain, se) for gain, se in zip(df["plateau_gain"],
                                                                                  df["plateau_se"])], index=df.index)
    rising = int((~verdicts & ~plateaued).sum())  # the plateau clause failed: gain too large, or unmeasured
    parts = [f"{rising} still gaining or unmeasured (last-third gain + {CONVERGENCE['z']:.3f} paired SE ≥ "
             f"{CONVERGENCE['margin'] * 100:g} points)"] if rising else []
    if int((~verdicts).sum()) > rising:
        parts.append(f"{int((~verdicts).sum()) - rising} with a final training loss ≥ "
                     f"{CONVERGENCE['loss_ratio']:g} x the class entropy")
    return f"; not converged under rule {current}: " + ", ".join(parts)


def seeds_text(df):
    return df["seed"].nunique() if "seed" in df else 1


def verdict_lines(claims):
    return [f"- {title}: {v.text()}." for title, v in claims]


# ----------------------------------------------------------------------------- budget controls

def _moves(df):
    """Per control arm of a budget-control table (tables.budget_control): (its rows, the reference's rows or
    None, the seeds both have, the claim's move at twice the steps, budget rule 3's verdict on it)."""
    if df is None or df.empty:
        return
    n = int(df["validation_examples"].iloc[0])
    by_arm = {arm: g.set_index("seed") for arm, g in df.groupby("arm")}
    single = int(df["arms"].iloc[0]) == 1
    reference = None if single else by_arm.get(0)
    for arm, g in sorted(by_arm.items()):
        if not single and (arm == 0 or reference is None):
            continue
        seeds = g.index if reference is None else g.index.intersection(reference.index)
        if not len(seeds):
            continue
        arms = [g.loc[seeds, "validation_correct"], g.loc[seeds, "validation_correct_2x"]]
        if reference is not None:
            arms += [reference.loc[seeds, "validation_correct"], reference.loc[seeds, "validation_correct_2x"]]
        move = claim_move(n, *(list(a) for a in arms))
        yield g, reference, seeds, move, budget_verdict(move)


def controls(df):
    """{(setting, reference setting): budget rule 3's verdict} of a family's budget controls, each arm named both
    by its label and by its entry (its plan's words: "0.01", "('compacter++', 4000)"), so that a claim finds
    its own control by either; {} without controls (a family of one arm controls no comparison)."""
    out = {}
    for g, reference, _, _, label in _moves(df):
        if reference is not None:
            for name in ("label", "entry"):
                out[str(g[name].iloc[0]), str(reference[name].iloc[0])] = label
    return out


def held_by_controls(own, pairs):
    """True when every (setting, reference) comparison of a claim has a budget control of its own that holds."""
    return all(own.get((str(a), str(b))) == HOLDS for a, b in pairs)


def budget_control(df):
    """Lines on a family's budget controls (tables.budget_control) under budget rule 3 (budget_verdict):
    each comparison a control measures (an entry minus the reference arm, the first entry; the entry itself when
    it is the only one), its move at twice the steps on validation over the seeds both arms have, and whether it
    holds. A control covers its own comparison and no other claim."""
    moves = list(_moves(df))
    if df is not None and not df.empty and not moves:
        return ["- budget control: its reference arm is not trained yet, so no claim's move can be measured."]
    # an arm is named by its setting's label, or by its entry where the labels do not tell arms apart (05's stds)
    name_of = "label" if moves and df.groupby("arm")["label"].first().is_unique else "entry"
    lines = []
    for g, reference, seeds, move, label in moves:
        name = str(g[name_of].iloc[0]) + ("" if reference is None else f" minus {reference[name_of].iloc[0]}")
        at_1x = (pts(g.loc[seeds, "value"].mean()) if reference is None else
                 pts(g.loc[seeds, "value"].mean() - reference.loc[seeds, "value"].mean(), True))
        lines.append(f"  - {name}: {at_1x} at {g['steps'].iloc[0]} steps; moves {pts(move.estimate, True)} at "
                     f"{g['steps_2x'].iloc[0]} {interval_text(move, 1 - 2 * stats.ALPHA_EQUIVALENCE, '90% CI ')} "
                     f"({move.how}): **{label}**")
    if not lines:
        return []
    verdicts = [label for *_, label in moves]
    held = sum(v == HOLDS for v in verdicts)
    tally = (f"**{held} of {len(verdicts)} hold**" + ("" if MOVES not in verdicts else
                                                       "; **a control moves: its claim needs a larger budget**"))
    head = (f"- budget control (rule {BUDGET_RULE_VERSION}): a comparison's move at twice the steps, on the "
            f"validation split, shown inside ±{stats.MARGIN * 100:g} points (90% interval); a control covers the "
            f"comparison it measures and no other, and a claim without a control of its own that holds is judged "
            f"at this budget; {tally}:")
    return [head, *lines]


def budget_rows(budget, task):
    """The budget-control rows of one task (all of them when the table names no task)."""
    if budget is None or budget.empty or "task" not in budget:
        return budget
    return budget[budget["task"] == task]


# ----------------------------------------------------------------------------- 04 layer removal


# ----------------------------------------------------------------------------- 05 init scale


# ----------------------------------------------------------------------------- 06 parameters vs performance


# ----------------------------------------------------------------------------- 07 low resource


# ----------------------------------------------------------------------------- 08 a stream of tasks


# ----------------------------------------------------------------------------- every family

def reading(family, df, budget=None):
    """A family's reading of its table (a families.Family or its name): markdown lines."""
    return families.get(family).read(df, budget)[0]


def claims(family, df, budget=None):
    """[(claim, experiments.judge.Verdict)] that a family's reading judges, in its order."""
    return families.get(family).read(df, budget)[1]


def load(profile, name, root=None):
    """A table's CSV from <root>/data/results/<profile>/ by its name (a family's own: the family's name; None when
    it is not there)."""
    path = profiles.results_dir(profile, root) / f"{name}.csv"
    return read_csv(path) if path.is_file() else None


def judged(profile, family, root=None):
    """The table a family's claims read (Family.judged_table: layer removal's held-out spans) when it is
    written, else the family's own (whose reading then says what its claims await); None without either."""
    family = families.get(family)
    found = load(profile, family.judged_table, root)
    return found if found is not None else load(profile, family.name, root)
