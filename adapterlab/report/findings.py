"""The findings of every training notebook, read from its tidy CSV: each paper claim with a verdict, our paired
confidence interval and the paper's own number.

Every number that the notebooks' "Reading the result" cells, FINDINGS.md and the README's table of claims
state comes from here, so no text can contradict the data:

    from adapterlab.report import findings
    print("\\n".join(findings.init_scale(df)))   # markdown lines for one family's DataFrame
    findings.claims("init_scale", df)            # [(claim, stats.Verdict)]: what the lines judge
    findings.budget_control(budget)              # the family's budget controls, judged by budget rule 3

Every reading together, as FINDINGS.md and the README's table of claims: adapterlab.report.document.

The statistics are adapterlab.experiments.stats's, and only those: runs that share a seed (and so a subset and a data
order) are compared paired by seed; a claim gets "reproduced", "not reproduced", "reversed" or "inconclusive
(could detect >= X points)"; "flat", "equal" and "on par" are said only when the equivalence test puts the
difference inside stats.MARGIN (1.5 points). Convergence is the verdict each run was trained under (the
table's `converged` and `rule_version`); rows judged by an older rule are re-judged under the current one in
plain sight ("re-verdict under rule 3: X of Y"), never relabelled.
"""
import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pandas as pd

from ..experiments import profiles, rules, stats
from . import labels


def pts(value, signed=False):
    """A fraction as points x100: 0.823 -> '82.3'."""
    return f"{value * 100:{'+' if signed else ''}.1f}"


def by_seed(d, a, b, column="label"):
    """a - b over the seeds both sides have (the rows whose `column` is a against those where it is b). With
    the per-example bits of the split `value` is scored on: stats.two_level, whose interval carries the noise
    of the seeds and of the examples; without them: stats.paired on the scores, the seeds' noise only (its
    `how` says so)."""
    split = d["split"].iloc[0] if "split" in d and len(d) else "test"
    bits, count = f"{split}_correct", f"{split}_examples"
    ra, rb = (d[d[column] == x].drop_duplicates("seed").set_index("seed") for x in (a, b))
    seeds = ra.index.intersection(rb.index).sort_values()
    if bits in d and len(seeds) and all(isinstance(x, str) for x in [*ra.loc[seeds, bits], *rb.loc[seeds, bits]]):
        return stats.two_level(list(rb.loc[seeds, bits]), list(ra.loc[seeds, bits]), int(ra[count].iloc[0]))
    diff = stats.paired(ra.loc[seeds, "value"].to_numpy(), rb.loc[seeds, "value"].to_numpy())
    return replace(diff, how=diff.how + ", seeds only (no per-example record)")


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


def judge(d, a, b, claim, paper, paper_value=None, column="label"):
    """The verdict on a claim about a - b, paired by seed, with what qualifies it: "at this budget" when a run
    behind it is not converged (rule 3), and the settings whose rate sits at an end of its grid."""
    rows = d[d[column].isin((a, b))]
    verdicts, _ = current_verdicts(rows)
    unconverged_here = verdicts is not None and not verdicts.all()
    return stats.verdict(by_seed(d, a, b, column), claim, paper, paper_value=paper_value,
                         at_budget=unconverged_here, grid_end=at_grid_end(rows, column))


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
    """What the table says about convergence: the stored verdicts under the rule each run was trained with
    (`rule_version`), and, where a row was judged by an older rule, its re-verdict under the current rule
    (rules.converged on the row's plateau_gain, plateau_se, final_train_loss and class_entropy), said as such."""
    if "converged" not in df:
        return "these results predate the convergence record"
    current, n, stored = rules.CONVERGENCE_RULE_VERSION, len(df), df["converged"].astype(bool)
    versions = df.get("rule_version", pd.Series(np.nan, index=df.index))
    known = versions.dropna().astype(int)
    if len(known) == n and (known == current).all():
        return f"{stored.sum()} of {n} runs converged (rule {current})" + _why_not(df, stored)
    under = [f"rule {v} for {c}" for v, c in sorted(Counter(known).items())]
    if versions.isna().any():
        under.append(f"rule version not recorded for {versions.isna().sum()}" if len(known) else
                     "rule version not recorded in this table")
    text = f"the table's verdicts: {stored.sum()} of {n} runs converged ({', '.join(under)})"
    if "plateau_gain" in df:
        again = converged_now(df)
        text += f"; re-verdict under rule {current}: {again.sum()} of {n} converged"
        if "class_entropy" not in df:
            text += " (plateau clause only: the table has no class_entropy for the loss clause)"
        text += _why_not(df, again)
    return text


def _why_not(df, verdicts):
    """'; not converged: 16 still gaining or unmeasured, 2 with a final training loss >= ...' for the rows
    that a rule-3 verdict (stored or re-judged) leaves unconverged."""
    CONVERGENCE, current = rules.CONVERGENCE, rules.CONVERGENCE_RULE_VERSION
    if verdicts.all() or "plateau_gain" not in df:
        return ""
    plateaued = pd.Series([stats.gain_below_margin(gain, se) for gain, se, _, _ in _rule_inputs(df)], index=df.index)
    rising = int((~verdicts & ~plateaued).sum())  # the plateau clause failed: gain too large, or unmeasured
    parts = [f"{rising} still gaining or unmeasured (last-third gain + {CONVERGENCE['z']:.3f} paired SE ≥ "
             f"{CONVERGENCE['margin'] * 100:g} points)"] if rising else []
    if int((~verdicts).sum()) > rising:
        parts.append(f"{int((~verdicts).sum()) - rising} with a final training loss ≥ "
                     f"{CONVERGENCE['loss_ratio']:g} x the class entropy")
    return f"; not converged under rule {current}: " + ", ".join(parts)


def _rule_inputs(df):
    """(gain, se, final loss, class entropy) per row, NaN where the table lacks a column."""
    missing = pd.Series(np.nan, index=df.index)
    return zip(*(df.get(c, missing) for c in ("plateau_gain", "plateau_se", "final_train_loss", "class_entropy")))


def converged_now(df):
    """Each row's verdict under the current rule (rules.converged on its columns): for counts by group."""
    return pd.Series([rules.converged(*row) for row in _rule_inputs(df)], index=df.index, dtype=bool)


def current_verdicts(df):
    """(verdict per row, what they are): the stored verdicts when every row was judged by the current rule,
    else the rows re-judged under it; (None, None) for a table without convergence columns."""
    current = rules.CONVERGENCE_RULE_VERSION
    if "converged" not in df:
        return None, None
    if "rule_version" in df and (df["rule_version"] == current).all():
        return df["converged"].astype(bool), f"rule {current}"
    if "plateau_gain" not in df:
        return df["converged"].astype(bool), "the table's verdicts, rule version not recorded"
    return converged_now(df), f"re-verdict under rule {current}"


def _seeds(df):
    return df["seed"].nunique() if "seed" in df else 1


def _verdict_lines(claims):
    return [f"- {title}: {v.text()}." for title, v in claims]


# ----------------------------------------------------------------------------- 04 layer removal

def _span_difference(d, n):
    """(value, diff, paired): value(x) is span x's score, diff(x, y) span x's minus span y's on the same n
    validation examples (a span: (first, last), or None for nothing removed), paired by example when the table
    has the per-example bits (stats.by_example), else with the unpaired SE of two scores (stats.scores:
    conservative)."""
    def row(x):
        return d[(d["first_layer"] == x[0]) & (d["last_layer"] == x[1])].iloc[0]

    def value(x):
        return float(d["full_value"].iloc[0] if x is None else row(x)["value"])

    def bits(x):
        return d["full_correct"].iloc[0] if x is None else row(x)["correct"]

    paired = {"correct", "full_correct"} <= set(d) and d[["correct", "full_correct"]].notna().all(axis=None)

    def diff(x, y):
        return stats.by_example(bits(y), bits(x), n) if paired else stats.scores(value(x), value(y), n)
    return value, diff, paired


def _layer_removal(df):
    lines, claims = [], []
    for task, d in df.groupby("task", sort=False):
        full, base = d["full_value"].iloc[0], d["baseline"].iloc[0]
        n = int(d["eval_examples"].iloc[0])
        layers = int(d["n_layers"].iloc[0]) if "n_layers" in d else int(d["last_layer"].max()) + 1
        value, diff, paired = _span_difference(d, n)
        half = layers // 2
        lower, upper, everything = (0, half - 1), (half, layers - 1), (0, layers - 1)
        how = ("differences are paired by example (every span is scored on the same validation tweets)" if paired
               else "differences use the unpaired SE of two scores, conservative: the spans' per-example record "
                    "is not stored")
        lines.append(f"**Layer removal, {task}** (one run; validation accuracy on {n:,} examples, sampling SE of one "
                     f"score {pts(math.sqrt(full * (1 - full) / n))} points; {how}; "
                     f"{unconverged(d.head(1)).replace('runs', 'run')}):")
        lines.append(f"- every adapter {pts(full)}; lower half (layers 0–{half - 1}) removed {pts(value(lower))}, "
                     f"upper half ({half}–{layers - 1}) removed {pts(value(upper))}, all removed "
                     f"{pts(value(everything))}; majority class {pts(base)}.")
        singles = [diff((i, i), None) for i in range(layers)]
        worst = min(range(layers), key=lambda i: value((i, i)))
        lines.append(f"- one layer removed: at worst {ci_text(diff((worst, worst), None))} points (layer {worst}).")
        claims += [
            (f"{task}: lower layers' adapters removable with a small loss (layers 0–{half - 1} removed vs none)",
             stats.verdict(diff(lower, None), "==", "removing layers 0–4 of 12 barely affects MNLI (Houlsby Fig. 6)")),
            (f"{task}: upper layers' adapters matter more (lower half removed minus upper half removed)",
             stats.verdict(diff(lower, upper), ">", "removing layers 8–11 costs far more than 0–4 (Houlsby Fig. 6)")),
            (f"{task}: any single layer's adapters removable (worst layer vs none)",
             stats.verdict(singles, "==", "at most 2 points for any single layer (Houlsby Fig. 6, diagonal)",
                           names=[f"layer {i}" for i in range(layers)])),
            (f"{task}: all adapters removed falls to the majority class",
             stats.verdict(stats.scores(value(everything), base, n, b_exact=True), "==",
                           "the majority class: 37% MNLI, 69% CoLA (Houlsby Fig. 6)")),
        ]
    return lines + _verdict_lines(claims), claims


def layer_removal(df):
    """04's reading: markdown lines (one run: sampling noise of its scores, verdicts on Houlsby's Fig. 6)."""
    return _layer_removal(df)[0]


# ----------------------------------------------------------------------------- 05 init scale

def _init_scale(df, flat_below=1e-2):
    lines, claims = [], []
    for task, d in df.groupby("task", sort=False):
        base = d["baseline"].iloc[0]
        by = {std: g.set_index("seed")["value"] for std, g in d.groupby("init_std")}
        ref = min(by)
        collapsed = {std: int((v - base < stats.COLLAPSE).sum()) for std, v in by.items()}
        lines += [f"**Init scale, {task}** (validation accuracy, {_seeds(d)} seed(s), {unconverged(d)}; majority "
                  f"class {pts(base)}):",
                  "- seed mean per std: " + ", ".join(f"{s:.0e} {pts(v.mean())}" for s, v in sorted(by.items())) + ".",
                  "- seed median per std: "
                  + ", ".join(f"{s:.0e} {pts(v.median())}" for s, v in sorted(by.items())) + ".",
                  "- best of the seeds per std (the paper's rule: the best of several runs): "
                  + ", ".join(f"{s:.0e} {pts(v.max())}" for s, v in sorted(by.items())) + ".",
                  f"- collapsed runs (ending < {stats.COLLAPSE * 100:g} points above the majority class): "
                  + (", ".join(f"{n} of {len(by[s])} at {s:.0e}" for s, n in sorted(collapsed.items()) if n) or "none")
                  + "."]
        small = sorted(s for s in by if s <= flat_below)
        best = [by[s].max() for s in small]
        if best:
            lines.append(f"- best of the seeds for std ≤ {flat_below:.0e} spans {pts(max(best) - min(best))} points "
                         "(descriptive: a maximum over seeds has no confidence interval).")

        def members(stds, claim, paper):  # each std minus the reference std, paired by seed
            rows = d[d["init_std"].isin([*stds, ref])]
            verdicts, _ = current_verdicts(rows)
            return stats.verdict([by_seed(d, s, ref, "init_std") for s in stds], claim, paper,
                                 at_budget=verdicts is not None and not verdicts.all(),
                                 names=[f"{s:.0e}" for s in stds])

        flat = [s for s in small if s != ref]
        large = [s for s in sorted(by) if s > flat_below]
        if flat:
            claims.append((f"{task}: seed means flat for std ≤ {flat_below:.0e} (each std minus std {ref:.0e}, "
                           "paired by seed)", members(flat, "==", "within about 1 point of the best for std 1e-7 to "
                                                          "1e-2 on MNLI and CoLA (Houlsby Fig. 6, right)")))
        if large:
            claims.append((f"{task}: degrades for std > {flat_below:.0e} (each larger std minus std {ref:.0e})",
                           members(large, "<", "degrades at 1e-1 and above, more on CoLA (Houlsby Fig. 6, right)")))
    return lines + _verdict_lines(claims), claims


def init_scale(df, flat_below=1e-2):
    """05's reading: seed mean, median, best of seeds and collapses per std; verdicts on Fig. 6 (right)."""
    return _init_scale(df, flat_below)[0]


# ----------------------------------------------------------------------------- 06 parameters vs performance

# (setting a, setting b, claim about a - b, the paper's words, the paper's number as a fraction or None where
# it states only a direction); a setting is a `label`, or a method that has one. The number is the one closest
# to our setting, a sentence classification: MNLI where the paper gives MNLI and CoLA, the GLUE mean otherwise
PARAM_CLAIMS = [
    ("layernorm", "full", "<", "LayerNorm only 3.5 (CoLA) to 4 (MNLI) points below full fine-tuning (Houlsby Fig. 4)",
     -0.04),
    ("top-k k=1", "full", "<", "top layer only 77.8 against 84.4 on MNLI (Houlsby Fig. 4)", -0.066),
    ("top-k k=3", "full", "<", "fewer layers fine-tuned: GLUE score 'decreases dramatically' (Houlsby Fig. 3)", None),
    ("houlsby m=64", "top-k k=1", ">", "adapters m=64 83.7 against the top layer's 77.8 on MNLI with a quarter of "
                                       "the parameters (Houlsby Fig. 4)", 0.059),
    ("houlsby m=64", "full", "==", "within 0.4 points of full fine-tuning on GLUE, 3.6% of the parameters "
                                   "(Houlsby Table 1)", None),
    ("compacter", "full", "==", "on par with full fine-tuning, 0.073% of the parameters (Compacter Table 1)", None),
    ("compacter++", "full", "==", "on par with full fine-tuning, 0.047% of the parameters (Compacter Table 1)", None),
    ("bitfit", "full", "<", "below full fine-tuning on GLUE (Compacter Table 1)", -0.0153),
    ("prompt-tuning-R n=100", "full", "<", "Prompt Tuning 'lags behind fine-tuning substantially' (Compacter "
                                           "§4, Table 1)", None),
    ("prompt-tuning-T n=100", "full", "<", "Prompt Tuning 'lags behind fine-tuning substantially' (Compacter "
                                           "§4, Table 1)", None),
    ("head-only", "full", "<", "fine-tuning 'often enjoys better performance than feature-based transfer' "
                               "(Houlsby §1; Table 2: 72.7 for its feature-based baseline against 73.7)", -0.010),
]
WORDS = {">": "above", "<": "below", "==": "on par with"}
# the papers' differences smaller than the margin: no verdict a 1.5-point margin could give
PARAM_UNTESTABLE = ("AdapterDrop −0.65, Adapter-LowRank −0.68 and Intrinsic-SAID −1.05 points against full "
                    "(Compacter §4-5.5)")
# Compacter 5.5's cost claims (T5-base on a 24 GB GPU; here process RSS and seconds on a CPU): (setting, cost
# column, what is claimed, the paper's number). Judged on the ratio to full fine-tuning's cost, paired by seed,
# against stats.COST_MARGIN.
COST_CLAIMS = [
    ("intrinsic-said", "peak_memory_mb", "more peak memory than full fine-tuning",
     "more memory than T5-base fine-tuning on a GPU (Compacter §5.5)", 0.4114),
    ("prompt-tuning-R n=100", "peak_memory_mb", "more peak memory than full fine-tuning",
     "more memory than T5-base fine-tuning on a GPU (Compacter §5.5)", 0.2442),
    ("intrinsic-said", "seconds_per_epoch", "more time per epoch than full fine-tuning",
     "among the slowest to train (Compacter §5.5, Table 3)", None),
    ("prompt-tuning-R n=100", "seconds_per_epoch", "more time per epoch than full fine-tuning",
     "among the slowest to train (Compacter §5.5, Table 3)", None),
]
COST_WORDS = {"peak_memory_mb": "peak memory", "seconds_per_epoch": "time per epoch"}


def cost_ratio(d, label, column):
    """stats.paired of label's cost over full fine-tuning's on the same seed, minus one (a fraction: +0.25
    is 25% more than full fine-tuning)."""
    a = d[d["label"] == label].groupby("seed")[column].mean()
    b = d[d["label"] == "full"].groupby("seed")[column].mean()
    seeds = a.index.intersection(b.index).sort_values()
    ratio = (a[seeds] / b[seeds]).to_numpy()
    return stats.paired(ratio, np.ones_like(ratio))


def _setting(d, name):
    """The label a claim names: the label itself, or the only label of that method (None if neither)."""
    if name in set(d["label"]):
        return name
    found = d[d["method"] == name]["label"].unique()
    return found[0] if len(found) == 1 else None


def _param_performance(df):
    lines, claims = [], []
    for task, d in df.groupby("task", sort=False):
        base = d["baseline"].iloc[0]
        lines.append(f"**Parameters vs performance, {task}** (test accuracy, {_seeds(d)} seed(s), {unconverged(d)}; "
                     f"majority class {pts(base)}):")
        for label, g in d.groupby("label", sort=False):
            grid = g["lr_grid"].iloc[0] if "lr_grid" in g else None
            lr = (f" at lr {g['lr'].iloc[0]:g}" if "lr" in g else "") + (
                chosen_text(g["lr"].iloc[0], grid) if isinstance(grid, str) and "lr" in g else "")
            vs = (f"; minus full, paired by seed: {ci_text(by_seed(d, label, 'full'))}"
                  if label != "full" and "full" in set(d["label"]) else "")
            lines.append(f"- {label}: {pts(g['value'].mean())}{lr}, {g['percent'].iloc[0]:.3f}% trained{vs}.")
        for a, b, claim, paper, paper_value in PARAM_CLAIMS:
            la, lb = _setting(d, a), _setting(d, b)
            if la and lb:
                claims.append((f"{task}: {la} {WORDS[claim]} {lb}", judge(d, la, lb, claim, paper, paper_value)))
        for a, column, what, paper, paper_value in COST_CLAIMS:
            la = _setting(d, a)
            if la and "full" in set(d["label"]) and column in d:
                claims.append((f"{task}: {la} needs {what} ({COST_WORDS[column]}, ratio to full minus one)",
                               stats.verdict(cost_ratio(d, la, column), ">", paper, stats.COST_MARGIN, unit="%",
                                             paper_value=paper_value)))
        counts = Counter(v.label for _, v in claims)
        lines.append("- the papers' separations here, before the correction over all claims: " + ", ".join(
            f"{counts[k]} {k}" for k in stats.VERDICTS if counts[k]) + f" (of {len(claims)}); not tested, the papers' "
            f"own difference being under the {stats.MARGIN * 100:g}-point margin: {PARAM_UNTESTABLE}.")
    return lines + _verdict_lines(claims), claims


def param_performance(df):
    """06's reading: each setting against full fine-tuning paired by seed, an ANOVA, the papers' separations."""
    return _param_performance(df)[0]


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

LOW_RESOURCE_PAPER = "Compacter++ above T5-base fine-tuning in the low-resource setting (Compacter Fig. 4, GLUE " \
                     "subsampled to 100-4,000)"


def _low_resource(df):
    lines, claims = [], []
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
        for size, g in d.groupby("train_size"):
            means = ", ".join(f"{m} {pts(v['value'].mean())}" for m, v in g.groupby("method", sort=False))
            vs = "; ".join(f"{m} − full {ci_text(by_seed(g, m, 'full', 'method'))}"
                           for m in g["method"].unique() if m != "full" and "full" in set(g["method"]))
            lines.append(f"- {int(size):,} examples: {means}" + (f"; paired by seed: {vs}" if vs else "") + ".")
            if {"compacter++", "full"} <= set(g["method"]):
                claims.append((f"{task}: Compacter++ above full fine-tuning at {int(size):,} examples",
                               judge(g, "compacter++", "full", ">", LOW_RESOURCE_PAPER, column="method")))
        verdicts, which = current_verdicts(d)
        if verdicts is not None and not verdicts.all():
            per = ", ".join(f"{m} {(~verdicts[g.index]).sum()} of {len(g)}" for m, g in d.groupby("method", sort=False))
            lines.append(f"- not converged ({which}), by method: {per}; a gap that involves such runs is the gap at "
                         "this budget, not at convergence.")
    return lines + _verdict_lines(claims), claims


def low_resource(df):
    """07's reading: per size, each method and its paired difference to full; verdicts on Compacter's Fig. 4."""
    return _low_resource(df)[0]


# ----------------------------------------------------------------------------- 08 a stream of tasks

# The papers' words for what notebook 08 judges, and Houlsby's growth per task (a share of one model)
PERFECT_MEMORY = ("frozen shared weights give 'perfect memory of previous tasks using a small number of task-specific "
                  "parameters' (Houlsby et al. §4, on continual learning)")
FORGETTING = ("a network re-trained on each new task forgets the earlier ones, catastrophic forgetting (Houlsby et "
              "al. §4, on continual learning)")
COMPACT = ("adapters add 3.6% of the parameters per task (Houlsby abstract), 1.3x the base model in all for nine "
           "GLUE tasks against 9x for one fine-tuned copy per task (Table 1)")
HOULSBY_GROWTH = 0.036


def measured(estimate, claim, paper, how, n, margin=stats.MARGIN, unit="points", paper_value=None):
    """The verdict on a difference measured without noise (file sizes; forgetting that hashes prove to be nil),
    in stats.verdict's labels, decided by the number itself: the direction, the margin, then the paper's number
    as printed (to 0.1). Its p-value is 0, since no sampling stands between the measurement and the claim, so
    Holm's correction keeps it."""
    diff = stats.Difference(float(estimate), math.nan, math.nan, n, how)
    if claim == "==":
        label = "reproduced" if abs(estimate) < margin else "not reproduced"
    else:
        sign = 1 if claim == ">" else -1
        shown = round(sign * estimate * 100, 1)  # the claimed direction made positive, as printed
        paper_shown = None if paper_value is None else round(sign * paper_value * 100, 1)
        label = ("reversed" if shown < 0 else "not reproduced" if shown < margin * 100 else
                 "reproduced" if paper_shown in (None, shown) else stats.SMALLER if paper_shown > shown else stats.LARGER)
    return stats.Verdict(claim, label, paper, diff, margin, unit, paper_value, p=0.0)


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


def _stream(df):
    lines, claims = [], []
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
    for order in orders:
        memory = stream_forgetting(df, "adapters", order)
        proven = measured(memory.estimate, "==", PERFECT_MEMORY, "exact: the same frozen base and adapter files "
                          "(sha256), bit-identical test logits", memory.n)
        # perfect memory is proven where the hashes show the very same model; elsewhere its interval judges it
        remembers = proven if recall[order].all() else stats.verdict(memory, "==", PERFECT_MEMORY)
        # forgetting is measured on trained models, so unconverged sequential steps make it this budget's;
        # perfect memory is proven from hashes, which no budget changes
        steps = df[(df["learner"] == "sequential") & (df["order"] == order)]["converged"].dropna().astype(bool)
        forgets = stats.verdict(stream_forgetting(df, "sequential", order), ">", FORGETTING,
                                at_budget=not steps.all())
        claims += [((f"order {order + 1}: adapters keep perfect memory (earlier tasks' accuracy after the last task "
                     "minus right after their training)"), remembers),
                   ((f"order {order + 1}: sequential fine-tuning forgets (earlier tasks' accuracy right after their "
                     "training minus after the last task)"), forgets)]
    storage = _growth(df, "adapters", orders[0]) - _growth(df, "copies", orders[0])
    claims.append((("adapters store a small part of a model per task, a copy a whole model (bytes added per task, "
                    "adapters minus copies, as a share of one fine-tuned model)"),
                   measured(storage, "<", COMPACT, "exact: measured from the saved files", tasks - 1,
                            stats.COST_MARGIN, "% of a model", HOULSBY_GROWTH - 1)))
    return lines + _verdict_lines(claims), claims


def stream(df):
    """08's reading (stream.csv): each learner's forgetting with its noise and its bill, exact recall, the serving
    cost, the adapters' gap to the copies; verdicts on Houlsby's online setting."""
    return _stream(df)[0]


# ----------------------------------------------------------------------------- every family

READERS = {"layer_removal": _layer_removal, "init_scale": _init_scale, "param_performance": _param_performance,
           "low_resource": _low_resource, "stream": _stream}


def claims(family, df):
    """[(claim, stats.Verdict)] that a family's reading judges, in its order."""
    return READERS[family](df)[1]


def load(profile, family):
    """The family's CSV from data/results/<profile>/ (None when it is not there)."""
    path = profiles.results_dir(profile) / f"{family}.csv"
    return pd.read_csv(path) if path.is_file() else None


def budget_control(df):
    """Lines on a family's budget controls (tables.budget_control) under budget rule 3 (stats.budget_verdict):
    each claim the controls stand for (an entry minus the reference arm, the first entry; the entry itself
    when it is the only one), its move at twice the steps on validation over the seeds both arms have, and
    the family's verdict: passes when every move is shown inside the margin."""
    if df is None or df.empty:
        return []
    n = int(df["validation_examples"].iloc[0])
    by_arm = {arm: g.set_index("seed") for arm, g in df.groupby("arm")}
    single = int(df["arms"].iloc[0]) == 1
    reference = None if single else by_arm.get(0)
    # an arm is named by its setting's label, or by its entry where the labels do not tell arms apart (05's stds)
    name_of = "label" if df.groupby("arm")["label"].first().is_unique else "entry"
    lines, labels = [], []
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
        label = stats.budget_verdict(move)
        labels.append(label)
        name = str(g[name_of].iloc[0]) + ("" if single else f" minus {reference[name_of].iloc[0]}")
        low, high = move.ci(1 - 2 * stats.ALPHA_EQUIVALENCE)
        at_1x = (pts(g.loc[seeds, "value"].mean()) if single else
                 pts(g.loc[seeds, "value"].mean() - reference.loc[seeds, "value"].mean(), True))
        lines.append(f"  - {name}: {at_1x} at {g['steps'].iloc[0]} steps; moves {pts(move.estimate, True)} at "
                     f"{g['steps_2x'].iloc[0]} [90% CI {pts(low, True)}, {pts(high, True)}] ({move.how}): **{label}**")
    if not labels:
        return ["- budget control: its reference arm is not trained yet, so no claim's move can be measured."]
    verdict = ("**passes**: every claim's move is shown inside the margin" if set(labels) == {stats.HOLDS} else
               "**does not pass: this family needs a larger budget** (a claim is shown to move by the margin or "
               "more)" if stats.MOVES in labels else
               "**not shown to pass**: a move could not be measured finely enough to lie inside the margin, so "
               "the family's verdicts hold at this budget only")
    head = (f"- budget control (rule {stats.BUDGET_RULE_VERSION}): each claim's difference at twice the steps, "
            f"on the validation split, its move shown inside ±{stats.MARGIN * 100:g} points (90% interval); {verdict}:")
    return [head, *lines]
