"""The findings of every training notebook, read from its tidy CSV: each paper claim declared in claims.py,
measured on its declared split and judged, with our interval and the paper's own number.

Every number that the notebooks' "Reading the result" cells, FINDINGS.md and the README's table of claims
state comes from here, so no text can contradict the data:

    from adapterlab.report import findings
    print("\\n".join(findings.init_scale(df, budget)))   # markdown lines for one family's table
    findings.claims("init_scale", df, budget)           # [(claim, stats.Verdict)]: what the lines judge
    findings.budget_control(budget)                     # the family's budget controls, judged by budget rule 3

Every reading together, as FINDINGS.md and the README's table of claims: adapterlab.report.document.

The statistics are adapterlab.experiments.stats's, and only those: runs that share a seed (and so a subset and a
data order) are compared paired by seed and by example, their interval carrying the noise of the seeds and of
the examples (crossed random effects); a claim's hypothesis, split and members are the ones claims.py declares,
whatever the data show. Convergence is the verdict each run was trained under (the table's `converged`, stamped
by the current rule). `budget` is the family's budget-control table: a claim is judged "at this budget" unless
its own control holds (without the table, every claim that can move with the budget is).
"""
import math

import numpy as np
import pandas as pd

from ..experiments import families, profiles, rules, stats
from . import claims as declared
from . import labels


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


def _grid_end(lr, grid):
    """"lowest" or "highest" when `lr` is that end of `grid` (space-separated rates, more than one), else None."""
    rates = sorted(float(r) for r in grid.split()) if isinstance(grid, str) else []
    return ("lowest" if lr == rates[0] else "highest" if lr == rates[-1] else None) if len(rates) > 1 else None


def at_grid_end(rows, column="label"):
    """'full, lora': the settings among rows whose chosen learning rate is the lowest or highest of its grid."""
    if "lr_grid" not in rows or "lr" not in rows:
        return ""
    return ", ".join(str(name) for name, g in rows.groupby(column, sort=False)
                     if _grid_end(g["lr"].iloc[0], g["lr_grid"].iloc[0]))


def judge(claim, diffs, names=(), held=False, grid_end="", **fields):
    """(title, Verdict) of a declared claim on its members' differences: its title filled from `fields`, its
    verdict "at this budget" unless the claim cannot move with the budget or its own control `held`."""
    verdict = stats.verdict(diffs, claim.hypothesis, claim.paper, claim.margin, claim.unit, claim.paper_value,
                            at_budget=claim.budget and not held, grid_end=grid_end, names=names,
                            log_ratio=claim.log_ratio, split=claim.split)
    return claim.says.format(**fields), verdict


def ci_text(diff):
    """'-3.1 [-6.0, -0.2]' in points, the 95% interval of a stats.Difference (no interval without noise)."""
    if not diff.known:
        return f"{pts(diff.estimate, True)} (no interval: no noise estimate)"
    low, high = diff.ci()
    return f"{pts(diff.estimate, True)} [{pts(low, True)}, {pts(high, True)}]"


def chosen_text(lr, grid):
    """'(chosen on validation from 0.001 0.003)', flagged when the choice is an end of the grid: the grid then
    does not bracket the best rate, which may lie beyond it (a wider grid is a new protocol, not a relabelling)."""
    end = _grid_end(lr, grid)
    beyond = {"lowest": "lower", "highest": "higher"}.get(end)
    return f" (chosen on validation from {grid}" + (f"; the grid's {end}: a {beyond} rate was not tried)" if end
                                                   else ")")


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


def _seeds(df):
    return df["seed"].nunique() if "seed" in df else 1


def _verdict_lines(claims):
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
        move = stats.claim_move(n, *(list(a) for a in arms))
        yield g, reference, seeds, move, stats.budget_verdict(move)


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


def _held(own, pairs):
    """True when every (setting, reference) comparison of a claim has a budget control of its own that holds."""
    return all(own.get((str(a), str(b))) == stats.HOLDS for a, b in pairs)


def budget_control(df):
    """Lines on a family's budget controls (tables.budget_control) under budget rule 3 (stats.budget_verdict):
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
        low, high = move.ci(1 - 2 * stats.ALPHA_EQUIVALENCE)
        at_1x = (pts(g.loc[seeds, "value"].mean()) if reference is None else
                 pts(g.loc[seeds, "value"].mean() - reference.loc[seeds, "value"].mean(), True))
        lines.append(f"  - {name}: {at_1x} at {g['steps'].iloc[0]} steps; moves {pts(move.estimate, True)} at "
                     f"{g['steps_2x'].iloc[0]} [90% CI {pts(low, True)}, {pts(high, True)}] ({move.how}): **{label}**")
    if not lines:
        return []
    verdicts = [label for *_, label in moves]
    held = sum(v == stats.HOLDS for v in verdicts)
    verdict = (f"**{held} of {len(verdicts)} hold**" + ("" if stats.MOVES not in verdicts else
                                                         "; **a control moves: its claim needs a larger budget**"))
    head = (f"- budget control (rule {stats.BUDGET_RULE_VERSION}): a comparison's move at twice the steps, on the "
            f"validation split, shown inside ±{stats.MARGIN * 100:g} points (90% interval); a control covers the "
            f"comparison it measures and no other, and a claim without a control of its own that holds is judged "
            f"at this budget; {verdict}:")
    return [head, *lines]


def _budget_rows(budget, task):
    """The budget-control rows of one task (all of them when the table names no task)."""
    if budget is None or budget.empty or "task" not in budget:
        return budget
    return budget[budget["task"] == task]


# ----------------------------------------------------------------------------- 04 layer removal

def _spans(d, split, budget=""):
    """(bits, value) of span x's per-example correct bits and score on the table's examples (x: (first, last),
    None for nothing removed, "majority class" for the majority-class predictor), from the table's columns
    correct, full_correct and majority_correct; budget "_2x": the budget control's columns (correct_2x, ...)."""
    def row(x):
        return d[(d["first_layer"] == x[0]) & (d["last_layer"] == x[1])].iloc[0]

    def bits(x):
        column = {None: f"full_correct{budget}", "majority class": "majority_correct"}.get(x)
        if column is not None and column not in d:
            raise ValueError(f"the layer-removal table scored on {split} has no {column}; score the spans with each "
                             "example's correctness of the full model and of the majority-class predictor")
        return d[column].iloc[0] if column else row(x)[f"correct{budget}"]

    def value(x):
        return float(d[f"full_value{budget}"].iloc[0] if x is None else row(x)[f"value{budget}"])
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
    """(Differences, names) of a declared 04 claim's members on one task's table, paired by example on the
    table's own split (_members)."""
    n, split = int(d["eval_examples"].iloc[0]), d["split"].iloc[0]
    bits, _ = _spans(d, split)
    names, pairs = _members(d, claim)
    return [stats.by_example(bits(b), bits(a), n, split) for a, b in pairs], names


def span_moves(d, claim):
    """[stats.Difference] of each member's move at the budget control's steps (its _2x columns): (a - b at 2x)
    - (a - b at 1x), paired by example on the table's split; [] when the table has no budget control."""
    if "correct_2x" not in d:
        return []
    n, split = int(d["eval_examples"].iloc[0]), d["split"].iloc[0]
    (at_1x, _), (at_2x, _) = _spans(d, split), _spans(d, split, "_2x")
    return [stats.claim_move(n, [at_1x(a)], [at_2x(a)], [at_1x(b)], [at_2x(b)], split)
            for a, b in _members(d, claim)[1]]


def _layer_removal(df, budget=None):
    lines, found = [], []
    for task, d in df.groupby("task", sort=False):
        full, base = d["full_value"].iloc[0], d["baseline"].iloc[0]
        n, layers, split = int(d["eval_examples"].iloc[0]), int(d["n_layers"].iloc[0]), d["split"].iloc[0]
        _, value = _spans(d, split)
        half = layers // 2
        worst = min(range(layers), key=lambda i: value((i, i)))
        lines += [f"**Layer removal, {task}** (one run, its spans scored on the {split} split, {n:,} examples; "
                  f"sampling SE of one score {pts(math.sqrt(full * (1 - full) / n))} points; "
                  f"{unconverged(d.head(1)).replace('runs', 'run')}):",
                  f"- every adapter {pts(full)}; lower half (layers 0–{half - 1}) removed {pts(value((0, half - 1)))}, "
                  f"upper half ({half}–{layers - 1}) removed {pts(value((half, layers - 1)))}, all removed "
                  f"{pts(value((0, layers - 1)))}; majority class {pts(base)}.",
                  "- one layer removed, minus every adapter: " + ", ".join(
                      f"layer {i} {pts(value((i, i)) - full, True)}" for i in range(layers))
                  + f" points (at worst layer {worst}; no interval: the worst of {layers} is chosen by the data)."]
        fields = dict(task=task, last_lower=half - 1)
        if split == declared.SELECTION:
            lines.append(f"- its claims await held-out scoring: the spans are scored on the {split} split, where the "
                         "run's best state was chosen, which judges no claim.")
            found += [(c.says.format(**fields), stats.awaiting(c.hypothesis, c.paper, f"{c.split} scoring",
                                                               "spans scored on validation only", c.margin, c.unit,
                                                               c.paper_value, c.split))
                      for c in declared.of("layer_removal")]
            continue
        moves = {c: span_moves(d, c) for c in declared.of("layer_removal")}
        if any(moves.values()):
            lines.append(f"- budget control (rule {stats.BUDGET_RULE_VERSION}): each claim's move at "
                         f"{int(d['steps_2x'].iloc[0])} steps on the same examples, shown inside ±"
                         f"{stats.MARGIN * 100:g} points (90% interval) or not: " + "; ".join(
                             f"{c.a} vs {c.b} {_move_text(m)}" for c, m in moves.items()) + ".")
        found += [judge(claim, *span_members(d, claim),
                        held=bool(moves[claim]) and all(stats.budget_verdict(m) == stats.HOLDS for m in moves[claim]),
                        **fields)
                  for claim in declared.of("layer_removal")]
    return lines + _verdict_lines(found), found


def _move_text(moves):
    """'+0.3 [-0.4, +1.0] holds' for one claim's moves (its worst member's interval when it has several)."""
    verdicts = [stats.budget_verdict(m) for m in moves]
    worst = max(moves, key=lambda m: max(abs(x) for x in m.ci(1 - 2 * stats.ALPHA_EQUIVALENCE)))
    low, high = worst.ci(1 - 2 * stats.ALPHA_EQUIVALENCE)
    label = next((v for v in (stats.MOVES, stats.UNDECIDED) if v in verdicts), stats.HOLDS)
    return (f"{pts(worst.estimate, True)} [{pts(low, True)}, {pts(high, True)}]"
            + (f" (the widest of {len(moves)})" if len(moves) > 1 else "") + f" **{label}**")


def layer_removal(df, budget=None):
    """04's reading: markdown lines (one run: the scores of its spans, and verdicts on Houlsby's Fig. 6 once
    the spans are scored on held-out examples)."""
    return _layer_removal(df, budget)[0]


# ----------------------------------------------------------------------------- 05 init scale

def _init_scale(df, budget=None):
    lines, found = [], []
    for task, d in df.groupby("task", sort=False):
        base = d["baseline"].iloc[0]
        by = {std: g.set_index("seed")["value"] for std, g in d.groupby("init_std")}
        ref = min(by)
        collapsed = {std: int((v - base < stats.COLLAPSE).sum()) for std, v in by.items()}
        lines += [f"**Init scale, {task}** ({d['split'].iloc[0]} accuracy, the figure's, in the lines below; the "
                  f"claims on the test split; {_seeds(d)} seed(s), {unconverged(d)}; majority class {pts(base)}):",
                  "- seed mean per std: " + ", ".join(f"{s:.0e} {pts(v.mean())}" for s, v in sorted(by.items())) + ".",
                  "- seed median per std: "
                  + ", ".join(f"{s:.0e} {pts(v.median())}" for s, v in sorted(by.items())) + ".",
                  "- best of the seeds per std (the paper's rule: the best of several runs): "
                  + ", ".join(f"{s:.0e} {pts(v.max())}" for s, v in sorted(by.items())) + ".",
                  f"- collapsed runs (ending < {stats.COLLAPSE * 100:g} points above the majority class): "
                  + (", ".join(f"{n} of {len(by[s])} at {s:.0e}" for s, n in sorted(collapsed.items()) if n) or "none")
                  + "."]
        own = controls(_budget_rows(budget, task))
        for claim in declared.of("init_scale"):
            low, high = claim.within
            stds = [s for s in sorted(by) if low < s <= high and s != ref]
            if stds:  # each std in the claim's range minus the smallest, paired by seed
                diffs = [by_seed(d, s, ref, "init_std", claim.split) for s in stds]
                found.append(judge(claim, diffs, [f"{s:.0e}" for s in stds], _held(own, [(s, ref) for s in stds]),
                                   task=task, ref=ref))
    return lines + _verdict_lines(found), found


def init_scale(df, budget=None):
    """05's reading: seed mean, median, best of seeds and collapses per std; verdicts on Fig. 6 (right)."""
    return _init_scale(df, budget)[0]


# ----------------------------------------------------------------------------- 06 parameters vs performance

def cost_ratio(d, a, b, column):
    """log(a's cost) - log(b's cost) over the runs of each (stats.log_ratio: unpaired, Welch): exp of it minus
    one is a's cost relative to b's."""
    return stats.log_ratio(d[d["label"] == a].groupby("seed")[column].mean(),
                           d[d["label"] == b].groupby("seed")[column].mean())


def _setting(d, name):
    """The label a claim names: the label itself, or the only label of that method (None if neither)."""
    if name in set(d["label"]):
        return name
    found = d[d["method"] == name]["label"].unique()
    return found[0] if len(found) == 1 else None


def _param_performance(df, budget=None):
    lines, found = [], []
    for task, d in df.groupby("task", sort=False):
        lines.append(f"**Parameters vs performance, {task}** (test accuracy, {_seeds(d)} seed(s), {unconverged(d)}; "
                     f"majority class {pts(d['baseline'].iloc[0])}):")
        for label, g in d.groupby("label", sort=False):
            grid = g["lr_grid"].iloc[0] if "lr_grid" in g else None
            lr = (f" at lr {g['lr'].iloc[0]:g}" if "lr" in g else "") + (
                chosen_text(g["lr"].iloc[0], grid) if isinstance(grid, str) and "lr" in g else "")
            vs = (f"; minus full, paired by seed: {ci_text(by_seed(d, label, 'full'))}"
                  if label != "full" and "full" in set(d["label"]) else "")
            lines.append(f"- {label}: {pts(g['value'].mean())}{lr}, {g['percent'].iloc[0]:.3f}% trained{vs}.")
        own, mine = controls(_budget_rows(budget, task)), []
        for claim in declared.of("param_performance"):
            a, b = _setting(d, claim.a), _setting(d, claim.b)
            if not (a and b) or (claim.column and claim.column not in d):
                continue
            if claim.column:
                mine.append(judge(claim, [cost_ratio(d, a, b, claim.column)], task=task, a=a, b=b))
                continue
            rows = d[d["label"].isin((a, b))]
            mine.append(judge(claim, [by_seed(d, a, b, split=claim.split)], held=_held(own, [(a, b)]),
                              grid_end=at_grid_end(rows), task=task, a=a, b=b))
        counts = {k: sum(v.label == k for _, v in mine) for k in stats.VERDICTS}
        lines.append("- the papers' separations here, before the correction over all claims: " + ", ".join(
            f"{counts[k]} {k}" for k in stats.VERDICTS if counts[k]) + f" (of {len(mine)}); not tested, the papers' "
            f"own difference being under the {stats.MARGIN * 100:g}-point margin: {declared.UNTESTABLE}.")
        found += mine
    return lines + _verdict_lines(found), found


def param_performance(df, budget=None):
    """06's reading: each setting against full fine-tuning paired by seed, the papers' separations."""
    return _param_performance(df, budget)[0]


def efficiency(table):
    """06's efficiency sentences from the efficiency table (tables.param_performance_table), means over seeds:
    Compacter++'s share of the parameters, of full fine-tuning's peak memory and of its training time; then
    the serving latency (batch 1 and 32) of full fine-tuning, prompt tuning (a longer sequence) and LoRA
    unmerged against merged. Measured on the CPU the runs trained on (their records name it)."""
    cpp = table[table["family"] == "compacter++"]
    if not len(cpp) or "memory_vs_full_pct" not in table:
        return []
    c = cpp.iloc[0]
    time_col = "seconds_per_epoch" if "seconds_per_epoch" in table else "train_seconds"
    out = [f"Compacter++ trains {c['percent_trained']:.3f} % of the parameters and needs "
           f"{c['memory_vs_full_pct']:.0f} % of full fine-tuning's peak memory and "
           f"{c['time_vs_full_pct']:.0f} % of its training time ({time_col.replace('_', ' ')})."]
    if "latency_32_ms" not in table:
        return out
    shown = table[table["family"].isin(["full", "prompt-tuning-R", "prompt-tuning-T", "lora"])
                  & table["latency_32_ms"].notna()]
    out.append("Serving latency, median forward pass at batch 1 / 32 (the trained model, right after training): "
               + "; ".join(f"{r.method} {r.latency_1_ms:.1f} / {r.latency_32_ms:.0f} ms" for r in shown.itertuples())
               + ". Prompt tuning runs its prompt tokens through every layer; merging folds LoRA's update into the "
               "weights it sits beside.")
    return out


def smallest_within(df, points=1.0):
    """The label training the fewest parameters whose seed mean is at least full fine-tuning's seed mean
    minus `points` (accuracy points: 0.01 each); None when no method is that close (or no full run).
    What exercise 06.smallest_within checks; it ranks seed means and so claims nothing about noise."""
    full = df[df["method"] == "full"]["value"]
    if not len(full):
        return None
    others = df[df["method"] != "full"].groupby("label", sort=False)
    means, trainable = others["value"].mean(), others["trainable"].first()
    close = trainable[means >= full.mean() - points / 100]
    return close.idxmin() if len(close) else None




# ----------------------------------------------------------------------------- 07 low resource

def _low_resource(df, budget=None):
    lines, found = [], []
    for task, d in df.groupby("task", sort=False):
        lines.append(f"**Low resource, {task}** (test accuracy, {_seeds(d)} seed(s), every method on the same seeded "
                     f"subset, so differences are paired by seed; {unconverged(d)}; majority class "
                     f"{pts(d['baseline'].iloc[0])}):")
        if "lr" in d:
            rates = ", ".join(f"{m} {'/'.join(f'{lr:g}' for lr in g['lr'].unique())}"
                              + (chosen_text(g["lr"].iloc[0], g["lr_grid"].iloc[0])
                                 if "lr_grid" in g and isinstance(g["lr_grid"].iloc[0], str) else "")
                              for m, g in d.groupby("method", sort=False))
            lines.append(f"- learning rates: {rates}.")
        own = controls(_budget_rows(budget, task))
        for size, g in d.groupby("train_size"):
            size = int(size)
            means = ", ".join(f"{m} {pts(v['value'].mean())}" for m, v in g.groupby("method", sort=False))
            vs = "; ".join(f"{m} − full {ci_text(by_seed(g, m, 'full', 'method'))}"
                           for m in g["method"].unique() if m != "full" and "full" in set(g["method"]))
            lines.append(f"- {size:,} examples: {means}" + (f"; paired by seed: {vs}" if vs else "") + ".")
            for claim in declared.of("low_resource"):
                if {claim.a, claim.b} <= set(g["method"]):
                    found.append(judge(claim, [by_seed(g, claim.a, claim.b, "method", claim.split)],
                                       held=_held(own, [((claim.a, size), (claim.b, size))]),
                                       grid_end=at_grid_end(g[g["method"].isin((claim.a, claim.b))], "method"),
                                       task=task, size=size))
        unconverged_runs = ~d["converged"].astype(bool)
        if unconverged_runs.any():
            per = ", ".join(f"{m} {unconverged_runs[g.index].sum()} of {len(g)}"
                            for m, g in d.groupby("method", sort=False))
            lines.append(f"- not converged (rule {rules.CONVERGENCE_RULE_VERSION}), by method: {per}; a gap that "
                         "involves such runs is the gap at this budget, not at convergence.")
    return lines + _verdict_lines(found), found


def low_resource(df, budget=None):
    """07's reading: per size, each method and its paired difference to full; verdicts on Compacter's Fig. 4."""
    return _low_resource(df, budget)[0]


# ----------------------------------------------------------------------------- 08 a stream of tasks

def measured(estimate, claim, how, n):
    """The check of a declared claim measured without noise (file sizes; recall that hashes prove to be exact), in
    stats.verdict's labels, decided by the number itself: the direction, the margin, then the paper's number as
    printed (to 0.1). A check is no sampled hypothesis: it is reported apart from Holm's correction."""
    diff = stats.Difference(float(estimate), math.nan, math.nan, n, how)
    if claim.hypothesis == "==":
        label = "reproduced" if abs(estimate) < claim.margin else "not reproduced"
    else:
        sign = 1 if claim.hypothesis == ">" else -1
        shown = round(sign * estimate * 100, 1)  # the claimed direction made positive, as printed
        paper = None if claim.paper_value is None else round(sign * claim.paper_value * 100, 1)
        label = ("reversed" if shown < 0 else "not reproduced" if shown < claim.margin * 100 else
                 "reproduced" if paper in (None, shown) else stats.SMALLER if paper > shown else stats.LARGER)
    return stats.Verdict(claim.hypothesis, label, claim.paper, diff, claim.margin, claim.unit, claim.paper_value,
                         split=claim.split, check=True)


def joined_bits(bits, counts):
    """Several test splits' correct bits end to end, in train.correct_bits' format (the hex of the packed bits):
    one model's record over several tasks, which stats pairs by example like a single split's."""
    unpacked = [np.unpackbits(np.frombuffer(bytes.fromhex(b), dtype=np.uint8))[:n] for b, n in zip(bits, counts)]
    return np.packbits(np.concatenate(unpacked)).tobytes().hex()


def _joined(cells, tests, seeds):
    """(one joined hex string per seed, the examples they cover) of `tests`, (task, time) pairs, from rows
    indexed by (seed, task, time): every seed is tested on the same test examples of a task."""
    counts = [int(cells.loc[(seeds[0], task, time), "test_examples"]) for task, time in tests]
    return [joined_bits([cells.loc[(seed, task, time), "test_correct"] for task, time in tests], counts)
            for seed in seeds], sum(counts)


def _learner(table, learner, order):
    """(one learner's rows of one order, {task: the time it arrived}, in arrival order)."""
    rows = table[(table["learner"] == learner) & (table["order"] == order)]
    return rows, dict(rows.groupby("task")["time"].min().sort_values())


def stream_matrix(table, learner, order):
    """One learner's accuracy matrix on one order (an index of stream.csv's orders): tasks (rows, in arrival
    order) x tasks seen (columns 1..T), the mean over seeds, NaN before a task arrives."""
    rows, arrived = _learner(table, learner, order)
    mean = rows.groupby(["task", "time"])["value"].mean().unstack("time")
    return mean.reindex(index=list(arrived), columns=range(1, len(arrived) + 1))


def stream_forgetting(table, learner, order, time=None):
    """How much `learner` has forgotten after `time` arrivals of an order (default: all of them): the earlier
    tasks' accuracy right after their own training minus their accuracy now, over every test example of those
    tasks and every seed, with both sources of noise (stats.two_level; test sampling only for one seed).
    Identical predictions give a drop of exactly 0 without a noise estimate."""
    rows, arrived = _learner(table, learner, order)
    time = int(rows["time"].max()) if time is None else time
    earlier, seeds = [t for t, a in arrived.items() if a < time], sorted(rows["seed"].unique())
    cells = rows.set_index(["seed", "task", "time"])
    own, n = _joined(cells, [(t, arrived[t]) for t in earlier], seeds)
    now, _ = _joined(cells, [(t, time) for t in earlier], seeds)
    return stats.two_level(now, own, n)


def stream_drops(table):
    """Per learner, order, earlier task and seed: the task's accuracy right after its own training (own) and
    after the last task (final), the drop own - final paired by example (stats.by_example) with its SE, and
    whether it is beyond its noise (its 95% interval above zero)."""
    rows = []
    for (learner, order), _ in table.groupby(["learner", "order"], sort=False):
        mine, arrived = _learner(table, learner, order)
        last, cells = mine["time"].max(), mine.set_index(["seed", "task", "time"])
        for r in mine[(mine["time"] == mine["task"].map(arrived)) & (mine["time"] < last)].itertuples():
            final = cells.loc[(r.seed, r.task, last)]
            drop = stats.by_example(final["test_correct"], r.test_correct, int(r.test_examples))
            rows.append({"learner": learner, "order": order, "task": r.task, "seed": r.seed, "own": r.value,
                         "final": final["value"], "drop": drop.estimate, "se": drop.se,
                         "beyond_noise": bool(drop.known and drop.ci()[0] > 0)})
    return pd.DataFrame(rows)


def _growth(table, learner, order):
    """What one more task adds to `learner`'s bytes on disk in one order, in units of one fine-tuned model:
    (the bill after the last task - after the first) / (tasks - 1), the mean over seeds."""
    rows, _ = _learner(table, learner, order)
    bill = rows.groupby("time")["stored_models"].mean()
    return (bill.iloc[-1] - bill.iloc[0]) / (bill.index[-1] - bill.index[0])


def _forgetting_text(diff):
    if not diff.known and diff.estimate == 0:
        return "0.0 (identical predictions on every test example)"
    return ci_text(diff) + " points"


def _converged_text(rows):
    """'; converged: 9 of 12 adapter runs, 12 of 12 fine-tuned copies' and, where some did not, what that means
    for a gap between them (empty when the runs' verdicts are not recorded)."""
    runs = {learner: g.drop_duplicates(["task", "seed"])["converged"].dropna().astype(bool)
            for learner, g in rows.groupby("learner", sort=False)}
    if not all(len(r) for r in runs.values()):
        return ""
    counts = ", ".join(f"{int(r.sum())} of {len(r)} {labels.LEARNER_NAMES[learner]}" for learner, r in runs.items())
    budget = "" if all(r.all() for r in runs.values()) else ": a gap between runs not all converged is this budget's"
    return f"; converged: {counts}{budget}"


def _stream(df, budget=None):
    lines, found = [], []
    orders, seeds = sorted(df["order"].unique()), sorted(df["seed"].unique())
    names, examples = df.groupby("order")["order_name"].first(), df.groupby("task")["test_examples"].first()
    tasks = len(names[orders[0]].split(" > "))
    lines.append(f"**A stream of tasks** (notebook 08: {tasks} tweet domains arrive one at a time, in {len(orders)} "
                 f"order(s), {len(seeds)} seed(s); test accuracy on "
                 + (f"{examples.min():,}" if examples.min() == examples.max() else
                    f"{examples.min():,} to {examples.max():,}") + " tweets per task. Forgetting: the earlier tasks' accuracy right after their own training minus after the last "
                 "task, paired by example, its 95% interval over seeds and test examples):")
    drops = stream_drops(df)
    for learner, name in labels.LEARNER_NAMES.items():
        parts = []
        for order in orders:
            mine = drops[(drops["learner"] == learner) & (drops["order"] == order)]
            parts.append(f"order {order + 1}: {_forgetting_text(stream_forgetting(df, learner, order))}, "
                         f"{int(mine['beyond_noise'].sum())} of {len(mine)} task drops beyond their paired noise")
        rows, _ = _learner(df, learner, orders[0])
        stored = rows[rows["time"] == rows["time"].max()][["stored_bytes", "stored_models"]].mean()
        lines.append(f"- {name}: forgetting in " + "; ".join(parts) + f". Stored after {tasks} tasks: "
                     f"{stored['stored_bytes'] / 2**20:,.1f} MiB ({stored['stored_models']:.2f}x one fine-tuned model).")
    recall = df[df["learner"] == "adapters"].groupby(["order", "seed"])["exact_recall"].first().eq(True)
    failed = [f"order {o + 1} seed {s}" for (o, s), ok in recall.items() if not ok]
    lines.append("- exact recall (after the last task every adapter's test logits are bit-identical to those on its "
                 "arrival, and the frozen base's and the adapter files' hashes are unchanged): "
                 + ("holds for every order and seed." if not failed else f"FAILS for {', '.join(failed)}."))
    switch = df.groupby("learner")["switch_seconds"].first()
    lines.append(f"- serving: switching the served task took {1000 * switch['adapters']:.1f} ms by swapping an adapter "
                 f"onto the loaded base and {1000 * switch['copies']:.1f} ms by loading a fine-tuned copy (medians), "
                 f"{switch['copies'] / switch['adapters']:.0f}x longer.")
    last = {learner: _learner(df, learner, orders[0]) for learner in ("adapters", "copies")}
    final = {learner: _joined(rows.set_index(["seed", "task", "time"]), [(t, tasks) for t in arrived], seeds)
             for learner, (rows, arrived) in last.items()}
    gap = stats.two_level(final["copies"][0], final["adapters"][0], final["copies"][1])
    lines.append(f"- adapters minus the fine-tuned copies over every task after the last arrival (order 1): "
                 f"{ci_text(gap)} points (95% CI, {gap.how})"
                 + _converged_text(pd.concat([rows for rows, _ in last.values()])) + ".")
    memory, forgets, storage = declared.of("stream")
    for order in orders:
        kept = stream_forgetting(df, "adapters", order)
        # perfect memory is a check where the hashes prove the very same model; without that proof it is not
        # shown (a nil drop on a sample is no proof of none)
        remembers = (measured(kept.estimate, memory, "exact: the same frozen base and adapter files (sha256), "
                              "bit-identical test logits", kept.n) if recall[order].all() else
                     stats.Verdict(memory.hypothesis, "inconclusive", memory.paper, kept, split=memory.split,
                                   check=True))
        found += [(memory.says.format(order=order + 1), remembers),
                  judge(forgets, [stream_forgetting(df, "sequential", order)], order=order + 1)]
    bill = _growth(df, "adapters", orders[0]) - _growth(df, "copies", orders[0])
    found.append((storage.says, measured(bill, storage, "exact: measured from the saved files", tasks - 1)))
    return lines + _verdict_lines(found), found


def stream(df, budget=None):
    """08's reading (stream.csv): each learner's forgetting with its noise and its bill, exact recall, the serving
    cost, the adapters' gap to the copies; verdicts on Houlsby's online setting."""
    return _stream(df, budget)[0]


# ----------------------------------------------------------------------------- every family

READERS = {"layer_removal": _layer_removal, "init_scale": _init_scale, "param_performance": _param_performance,
           "low_resource": _low_resource, "stream": _stream}


def claims(family, df, budget=None):
    """[(claim, stats.Verdict)] that a family's reading judges, in its order."""
    return READERS[family](df, budget)[1]


def load(profile, family, root=None):
    """The family's CSV from <root>/data/results/<profile>/ (None when it is not there)."""
    path = profiles.results_dir(profile, root) / f"{family}.csv"
    return pd.read_csv(path) if path.is_file() else None


def judged(profile, family, root=None):
    """The table a family's claims read (families.CLAIMS_TABLE: layer removal's held-out spans) when it is
    written, else the family's own (whose reading then says what its claims await); None without either."""
    found = load(profile, families.CLAIMS_TABLE[family], root)
    return found if found is not None else load(profile, family, root)
