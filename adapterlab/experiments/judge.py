"""Judging a declared claim: a paper's claim read on our differences (stats.Difference) by the test declared
for it before the data (verdict), every claim of a study corrected together by Holm's procedure (holm), and
the budget rule that says whether a claim moves at twice the steps (claim_move, budget_verdict). Apart from
the estimators (stats) because a verdict is a decision taken on the differences they measure: this module adds
the claim, its level and its words, and measures only with stats' estimators.

    d = stats.two_level(cpp_bits, full_bits, n)
    v = judge.verdict([d], ">", paper="Compacter++ above full at 100 examples (Fig. 4)", paper_value=0.02)
    judge.holm([v1, v2, ...])              # every verdict read again at its level after Holm's correction
    judge.budget_verdict(judge.claim_move(n, b1, b2, a1, a2))   # does the claim move at twice the steps?

How a claim is judged (verdict): its hypothesis is declared before the data, in the paper's direction (a
one-sided test) or as equivalence within a margin (TOST), and only that test's p-value enters Holm's
correction together with the tests of the opposite conclusions ("not reproduced", "reversed"; opposite_ps),
so that the chance of any false conclusion over the family, the paper's or the opposite, is at most 5% (holm).
"""
import math
from dataclasses import dataclass, replace

import numpy as np

from .permutation import Permutation
from .stats import (ALPHA, LARGER, LEVEL, MARGIN, SMALLER, UNTESTED, Arms, Crossed, Difference, above, below,
                    coverage_note, crossed, detectable, directional, equivalent, tost, unpack)

# A cost difference worth seeing, as a fraction of full fine-tuning's cost (time per epoch, peak memory): 5%,
# fixed before the runs it judges. Why 5%: a fifth of the smallest overhead the paper draws a conclusion from
# (Prompt Tuning's +24.42% memory, Compacter 5.5), and about the spread of one setting's cost over seeds on one
# CPU (coefficient of variation 3-6% for peak RSS, 1-10% for time per epoch, two seeds of each of 06's
# settings): a smaller difference is not one this measurement can show. Costs are judged as log ratios, so the
# margin is log(1.05) there.
COST_MARGIN = 0.05


def _df_text(df):
    return "normal" if math.isinf(df) else f"df {df:,.0f}" if df >= 10 else f"df {df:.1f}"


@dataclass(frozen=True)
class Verdict:
    """A paper claim judged on our data. claim is the hypothesis declared before the data: ">" (a above b) or
    "<" (a below b), one-sided, or "==" (a equals b within the margin, TOST). members are the comparisons the
    claim is made of (the claim holds when every one does) and diff the one that decides, the member with the
    largest p-value; p is that p-value (an intersection-union test), what Holm's correction adjusts. label is
    read at `level`: ALPHA before Holm, the claim's own Holm level after. paper is the paper's claim in words
    and paper_value its own number in the difference's units (None when it states only a direction). at_budget
    marks a verdict its own budget control does not hold; grid_end names settings whose learning rate sits at
    an end of its grid. check: an exact measurement (no sampling), reported apart from the tested claims."""

    claim: str
    label: str
    paper: str
    diff: Difference
    margin: float = MARGIN
    unit: str = "points"  # how x100 of the difference reads: accuracy points, or "%" of a cost (log_ratio)
    paper_value: float | None = None
    p: float = math.nan
    at_budget: bool = False
    grid_end: str = ""
    members: tuple = ()
    names: tuple = ()  # each member's name, where there are several
    level: float = ALPHA
    holm_p: float | None = None
    log_ratio: bool = False  # diff is a difference of logarithms: printed as exp(x) - 1
    check: bool = False
    split: str = ""  # what it is measured on: "test", "held-out", "per training run", "saved files"

    @property
    def detectable(self):
        return detectable(self.diff, self.claim, self.level)

    @property
    def decided_by(self):
        """The name of the member that decides (empty for a claim of one comparison)."""
        if len(self.members) < 2 or not self.names:
            return ""
        return next(name for name, member in zip(self.names, self.members) if member is self.diff)

    def _scaled(self, x):
        return (math.expm1(x) if self.log_ratio else x) * 100

    @property
    def judged(self):
        """False for a claim not judged or not run (UNTESTED): no test, no place in Holm's family."""
        return not self.label.startswith(UNTESTED)

    @property
    def in_family(self):
        """True for one of Holm's family (holm): a claim judged by its test. An exact check is no hypothesis, and a
        claim not judged or not run is no test; neither draws a conclusion or dilutes the others' level."""
        return self.judged and not self.check

    @property
    def one_run(self):
        """True when every member rests on one run per arm (one seed): the verdict is about those runs."""
        return all(isinstance(d.design, Crossed) and d.design.seeds == 1 for d in self.members) and \
            bool(self.members)

    def __str__(self):
        label = self.label
        if not self.judged:
            return label
        if label == "inconclusive":
            if not self.diff.known:
                label = "inconclusive (no noise estimate)"
            elif self.claim == "==":
                label = f"inconclusive (could show equivalence within ±{self._scaled(self.detectable):.1f} {self.unit})"
            else:
                label = f"inconclusive (could detect ≥ {self._scaled(self.detectable):.1f} {self.unit})"
        return (label + (" at this budget" if self.at_budget else "")
                + (", about these runs (1 seed)" if self.one_run else "")
                + (f" (rate at the grid's end: {self.grid_end})" if self.grid_end else ""))

    def hypothesis(self):
        """The test declared before the data, in words: 'Δ > 0 (one-sided)', 'Δ within ±1.5 points (TOST)' (Δ = a -
        b; for a cost, the ratio a / b against 1), for each member where there are several."""
        if self.check:
            return "exact check"
        if self.claim == "==":
            what = f"Δ within ±{self._scaled(self.margin):g} {self.unit} (TOST)"
        else:
            what = f"{'a / b' if self.log_ratio else 'Δ'} {self.claim} {1 if self.log_ratio else 0} (one-sided)"
        return (f"each of {len(self.members)}: " if len(self.members) > 1 else "") + what

    def deciding(self, level=None):
        """(low, high, words) of the interval the pre-declared test reads at `level` (default: the verdict's):
        for a direction the one-sided bound on the claimed side, the other end open; for "==" the 1 - 2 level
        interval against the margin."""
        level = self.level if level is None else level
        if self.claim == "==":
            low, high = self.diff.ci(1 - 2 * level)
            return low, high, f"{1 - 2 * level:.{_digits(level)}%} CI vs margin ±{self._scaled(self.margin):g}"
        low, high = self.diff.ci(1 - 2 * level)
        words = f"one-sided {1 - level:.{_digits(level)}%}"
        if self.claim == ">":
            return low, math.inf, f"{words} lower bound"
        return -math.inf, high, f"{words} upper bound"

    def decides_text(self, level=None):
        """'one-sided 95% upper bound -0.1' or '90% CI vs margin ±1.5: [-2.0, +0.2]'."""
        low, high, words = self.deciding(level)
        if self.claim == "==":
            return f"{words}: [{self._scaled(low):+.1f}, {self._scaled(high):+.1f}]"
        return f"{words} {self._scaled(high if math.isinf(low) else low):+.1f}"

    def estimator(self):
        """'seeds x test examples (3 x 1,443), crossed, df 1,442': how the noise was estimated."""
        if not self.diff.known or isinstance(self.diff.design, Permutation):
            return self.diff.how
        return f"{self.diff.how}, {_df_text(self.diff.df)}{coverage_note(self.diff)}"

    def numbers(self):
        """'-3.1 [-6.0, -0.2] points (95% CI; one-sided 95% upper bound -0.8; seeds x test examples ..., df 8)':
        the estimate, its two-sided 95% interval, and the bound or interval the pre-declared test reads."""
        if self.label.startswith("awaiting"):
            return f"no number yet ({self.diff.how})"
        if math.isnan(self.diff.estimate):
            return f"no number ({self.diff.how})"
        if not self.diff.testable:
            return f"{self._scaled(self.diff.estimate):+.1f} {self.unit} ({self.diff.how}: no noise estimate)"
        low, high = self.diff.ci(LEVEL)
        member = f"deciding: {self.decided_by}; " if self.decided_by else ""
        return (f"{self._scaled(self.diff.estimate):+.1f} [{self._scaled(low):+.1f}, {self._scaled(high):+.1f}] "
                f"{self.unit} ({LEVEL:.0%} CI; {member}{self.decides_text(ALPHA)}; {self.estimator()})")

    def interval(self):
        """'-1.0 [-2.0, +0.1] points; one-sided 95% upper bound +0.2': the estimate, its 95% interval (and the
        member that decides) and the bound the declared test reads at 5%; the numbers alone without noise."""
        if not self.diff.testable:
            return self.numbers()
        low, high = self.diff.ci(LEVEL)
        member = f"; deciding: {self.decided_by}" if self.decided_by else ""
        return (f"{self._scaled(self.diff.estimate):+.1f} [{self._scaled(low):+.1f}, {self._scaled(high):+.1f}] "
                f"{self.unit}{member}; {self.decides_text(ALPHA)}")

    def size(self):
        """'3 seeds x 1,443 examples', '1,442 examples', '3 runs each': what the estimate averages over."""
        design = self.diff.design
        if isinstance(design, Crossed):
            return (f"{design.seeds} seeds x {design.examples:,} examples" if design.seeds > 1 else
                    f"{design.examples:,} examples")
        if isinstance(design, Arms):
            return f"{self.diff.n} runs each"
        if isinstance(design, Permutation):
            return f"{len(design.a)} and {len(design.b)} runs"
        return f"n = {self.diff.n}" if self.diff.n else "—"

    def paper_text(self):
        if self.paper_value is None:
            return self.paper
        return f"{self._scaled(self.paper_value):+.1f} {self.unit}: {self.paper}"

    def text(self):
        """The one line every reading prints: verdict, our numbers, the paper's."""
        return f"**{self}**: here {self.numbers()}; paper: {self.paper_text()}"


def _digits(level):
    """Decimals that show a level's confidence: 95% and 90% as such, Holm's 99.8% with one more."""
    return 0 if round(level * 100, 6).is_integer() else 1

def _member_p(diff, claim, margin):
    return tost(diff, margin) if claim == "==" else directional(diff, claim)


def _read(claim, members, level, margin, paper_value, opposite=True):
    """(label, p, deciding member) of a pre-declared claim made of `members` at `level` (verdict's rules);
    without `opposite`, "inconclusive" wherever the declared test does not reject (holm tests the opposite
    conclusions as hypotheses of their own)."""
    ps = [_member_p(d, claim, margin) for d in members]
    if any(math.isnan(p) for p in ps):
        return "inconclusive", math.nan, next(d for d, p in zip(members, ps) if math.isnan(p))
    p = max(ps)
    decider = members[ps.index(p)]
    sign = -1 if claim == "<" else 1
    if p < level:
        if claim == "==":
            return "reproduced", p, decider
        low, high = sorted(sign * x for x in decider.ci(1 - level))
        target = margin if paper_value is None else sign * paper_value
        if target > high:
            return SMALLER, p, decider
        return (LARGER if paper_value is not None and target < low else "reproduced"), p, decider
    if not opposite:
        return "inconclusive", p, decider
    # the opposite readings: some member's two-sided interval, Bonferroni over the members (a union)
    intervals = [sorted(sign * x for x in d.ci(1 - level / len(members))) for d in members]
    if claim == "==":
        apart = any(low > margin or high < -margin for low, high in intervals)
        return ("not reproduced" if apart else "inconclusive"), p, decider
    if any(high < 0 for _, high in intervals):
        return "reversed", p, decider
    if any(high < margin for _, high in intervals):
        return "not reproduced", p, decider
    return "inconclusive", p, decider


def verdict(diffs, claim, paper, margin=MARGIN, unit="points", paper_value=None, at_budget=False, grid_end="",
            names=(), log_ratio=False, split="", unjudged=""):
    """Judge a paper's claim about a - b, declared before the data, on our differences `diffs` (one Difference,
    or one per member of a claim that holds only when each member does). Only the declared test gives p:

      claim ">" or "<": the one-sided test of the paper's direction (H0: no difference or the other way);
      claim "==": equivalence within +-margin (TOST);
      several members: the largest of their p-values (intersection-union: every member must hold).

    The label, at level alpha (holm() reads it again at the claim's corrected level):
      reproduced      the declared test rejects; for a direction, the paper's number (or, where the paper
                      gives none, a difference of margin or more) lies inside our two-sided 1 - alpha interval;
      direction reproduced, smaller / larger effect
                      the direction is shown, and the paper's number (or the margin) lies above / below it;
      reversed        the test does not reject, and a member's two-sided 1 - alpha/k interval (k members:
                      Bonferroni) lies on the other side of zero;
      not reproduced  likewise, a member's interval lies below the margin on the claimed side ("==": outside
                      +-margin): no difference worth seeing, or none the equivalence allows;
      inconclusive    otherwise.
    A cost ratio is judged on stats.log_ratio differences with margin log(1 + COST_MARGIN) and unit "%".
    unjudged: why the claim is not judged at all (stats.NOT_LEARNED, stats.NOT_CONVERGED): that is its label,
    with no p-value, and its differences are kept only to be shown.
    """
    if claim not in (">", "<", "=="):
        raise ValueError(f"unknown claim {claim!r}; use '>' (a above b), '<' (a below b) or '==' (equal within "
                         "the margin)")
    members = (diffs,) if isinstance(diffs, Difference) else tuple(diffs)
    if not members:
        raise ValueError("verdict() needs at least one Difference; a claim of several comparisons gives each")
    label, p, decider = _read(claim, members, ALPHA, margin, paper_value)
    if unjudged:
        label, p, at_budget = unjudged, math.nan, False
    return Verdict(claim, label, paper, decider, margin, unit, paper_value, p, at_budget, grid_end, members,
                   tuple(names), log_ratio=log_ratio, split=split)


def awaiting(claim, paper, what, reason="", margin=MARGIN, unit="points", paper_value=None, split=""):
    """A declared claim whose data do not exist yet (what: 'held-out scoring'; reason: why): no verdict, no
    p-value; it counts in Holm's family all the same, which was fixed before the data."""
    return Verdict(claim, f"awaiting {what}", paper, Difference(math.nan, math.nan, math.nan, 0, reason or what),
                   margin, unit, paper_value, split=split)


def opposite_ps(claim, members, margin=MARGIN):
    """(p of "not reproduced", p of "reversed") of a claim made of `members`: the tests of the conclusions
    opposite to the paper's, each a hypothesis of its own in Holm's family (holm). They are read from the
    two-sided interval, as every interval printed is: a p-value is twice the one-sided one, so that it is below a
    level exactly when the two-sided interval at 1 - level excludes the null. Some member must show it (a union),
    so each is the smallest member p times the number of members (Bonferroni).

      ">" / "<"   not reproduced: H0 the difference on the claimed side is the margin or more;
                  reversed: H0 it is zero or more (on the claimed side);
      "=="        not reproduced: H0 the difference lies within +-margin, shown outside on either side; no
                  "reversed" (NaN).
    _read at the same level draws the same conclusions from the intervals. NaN without a noise estimate. A
    permutation test's difference reads its own test at the shifts these hypotheses name (above, below)."""
    if not all(d.testable for d in members):
        return math.nan, math.nan
    k = len(members)
    if claim == "==":
        outside = [2 * min(above(d, margin), below(d, -margin)) for d in members]
        return float(min(1.0, k * min(outside))), math.nan
    # the claimed side made positive: a "<" claim's difference read from the other end
    short = [2 * (below(d, margin) if claim == ">" else above(d, -margin)) for d in members]
    other_side = [2 * (below(d) if claim == ">" else above(d)) for d in members]
    return float(min(1.0, k * min(short))), float(min(1.0, k * min(other_side)))


def holm_levels(ps, alpha=ALPHA):
    """(adjusted p, level) of each p-value under Holm's step-down procedure (Holm 1979): the k-th smallest is
    compared with alpha / (m - k + 1), and once one fails every larger one fails too; each is read at its own
    level, alpha / (m - k + 1), lowered to alpha x p / adjusted p where a smaller p-value's failure holds it back
    (so that it rejects exactly when its adjusted p is below alpha). NaN (no test) counts in m and rejects
    nothing."""
    adjusted, shares = conclusions_adjusted(ps, {})
    return adjusted, [_level(p, a, s, alpha) for p, a, s in zip(ps, adjusted, shares)]


def conclusions_adjusted(ps, follows):
    """Adjusted p-values of a family of hypotheses tested by Holm's procedure, where some hypotheses start with
    no share of the level and follow another: follows = {j: i} tests j once i is rejected, at the level i was
    rejected at (a graphical procedure, Bretz et al. 2009: the edge i -> j carries all of i's level; j, once
    rejected, passes it on equally to the hypotheses still open, as Holm's do). "Reversed" follows "not
    reproduced": it is tested only where the difference is shown on the other side of the margin, so it costs
    the paper's conclusions nothing. Without followers this is Holm's step-down procedure. Returns (adjusted
    p-values, shares): the adjusted p of a hypothesis is the smallest family-wise level at which it is rejected
    (1 when it never can be; NaN for a hypothesis without a test, which still counts in the family), its share
    the fraction of that level it is tested with at its step (Holm's 1 / (m - k + 1))."""
    m = len(ps)
    led = set(follows)
    open_ = [i for i in range(m) if i not in led]  # equal shares of what no follower holds
    held, adjusted, worst = {}, [math.nan] * m, 0.0  # held: follower -> its share, once its leader fell
    shares = [math.nan] * m
    while open_ or held:
        share = (1.0 - sum(held.values())) / len(open_) if open_ else 0.0
        candidates = [(ps[i] / share, i) for i in open_ if share > 0 and not math.isnan(ps[i])]
        candidates += [(ps[j] / w, j) for j, w in held.items() if w > 0 and not math.isnan(ps[j])]
        if not candidates:
            break
        ratio, i = min(candidates)
        worst = max(worst, ratio)
        adjusted[i], shares[i] = min(1.0, worst), held.get(i, share)
        if i in held:
            del held[i]
        else:
            open_.remove(i)
            for j, leader in follows.items():
                if leader == i:
                    held[j] = share
    return [a if not math.isnan(a) or math.isnan(p) else 1.0 for a, p in zip(adjusted, ps)], shares


def _level(p, adjusted, share, alpha=ALPHA):
    """The level a hypothesis is read at: its share of alpha, lowered to alpha x p / adjusted p where an earlier
    failure holds it back (so that it rejects exactly when its adjusted p is below alpha)."""
    if math.isnan(adjusted) or math.isnan(share):
        return math.nan
    return min(alpha * share, alpha * p / adjusted if adjusted > 0 else alpha)


def holm(verdicts, alpha=ALPHA):
    """The verdicts after Holm's correction over every conclusion they can draw (verdict rules 4): each claim's
    declared test (the paper's conclusion), and the tests of the opposite conclusions (opposite_ps: "not
    reproduced", and "reversed" for a direction) are one family, so the chance of any false conclusion, the
    paper's or the opposite, is at most alpha. A claim reads "reproduced" (or a direction with a smaller or
    larger effect, its interval at its level) when its declared test rejects at its Holm level; else "reversed"
    or "not reproduced" when that test rejects at its own level; else "inconclusive". holm_p and level are the
    declared test's. Claims without a p-value (no noise estimate, awaiting data) count in the family with their
    hypotheses and keep their label; checks are not hypotheses and must not be passed in. A claim not judged
    (its runs did not learn, or did not converge with no control of its own that holds) or not run is no test:
    it leaves the family, so it neither draws a conclusion nor dilutes the others' level, and comes back as it
    was (holm_p NaN)."""
    verdicts = list(verdicts)
    if any(v.check for v in verdicts):
        raise ValueError("holm() corrects tested claims only; report exact checks apart (Verdict.check)")
    if not all(v.in_family for v in verdicts):
        tested = iter(holm([v for v in verdicts if v.in_family], alpha))
        return [next(tested) if v.in_family else replace(v, holm_p=math.nan) for v in verdicts]
    opposite = [opposite_ps(v.claim, v.members, v.margin) if v.members else (math.nan, math.nan)
                for v in verdicts]
    m = len(verdicts)
    ps = [v.p for v in verdicts] + [nr for nr, _ in opposite]
    directional_claims = [i for i, v in enumerate(verdicts) if v.claim != "=="]
    ps += [opposite[i][1] for i in directional_claims]
    reversed_at = dict(zip(directional_claims, range(2 * m, len(ps))))
    adjusted, shares = conclusions_adjusted(ps, {r: m + i for i, r in reversed_at.items()})  # "reversed" follows
    levels = [_level(p, a, s, alpha) for p, a, s in zip(ps, adjusted, shares)]
    out = []
    for i, v in enumerate(verdicts):
        if math.isnan(adjusted[i]) or not v.members:
            out.append(replace(v, holm_p=adjusted[i]))
            continue
        label, _, decider = _read(v.claim, v.members, levels[i], v.margin, v.paper_value, opposite=False)
        if label == "inconclusive":
            r = reversed_at.get(i)
            if r is not None and adjusted[r] < alpha:
                label = "reversed"
            elif adjusted[m + i] < alpha:
                label = "not reproduced"
        out.append(replace(v, label=label, diff=decider, level=levels[i], holm_p=adjusted[i]))
    return out


# Budget rule 3 (claim_move, budget_verdict): a budget is enough when no claim moves by the margin at twice the
# steps: each claim's move is measured on validation with seeds and examples crossed, and a control covers the
# comparison it measures and no other (a claim whose own control does not hold is judged at this budget)
BUDGET_RULE_VERSION = 3
HOLDS, MOVES, UNDECIDED = "holds", "moves", "undecided"


def claim_move(n, b1, b2, a1=None, a2=None, split="validation"):
    """(b - a at 2x) - (b - a at 1x) over the seeds, from the runs' correct bits on the same n examples of
    `split` (validation; layer removal's held-out examples): b1, b2 (and a1, a2) are lists with one hex string per seed, aligned by seed. Without a (a family
    with one control entry) it is b's own gain at 2x. A Difference with both sources of noise (crossed)."""
    if a1 is None:
        a1 = a2 = [None] * len(b1)
    if not len(b1) or len({len(b1), len(b2), len(a1), len(a2)}) > 1:
        raise ValueError(f"claim_move() needs one run per seed of each arm at both budgets, aligned by seed; got "
                         f"{len(b1)}, {len(b2)}, {len(a1)} and {len(a2)} (drop the seeds some runs lack)")

    def arm(bits):
        return unpack(bits, n) if bits is not None else np.zeros(n, dtype=np.int8)

    d = np.stack([(arm(y2) - arm(x2)) - (arm(y1) - arm(x1)) for x1, y1, x2, y2 in zip(a1, b1, a2, b2)])
    return crossed(d, split)


def budget_verdict(move, margin=MARGIN):
    """Budget rule 3 on one claim's move: HOLDS when shown inside +-margin (TOST), MOVES when its two-sided 95%
    interval lies beyond it on one side, else UNDECIDED (the move could not be measured finely enough)."""
    if equivalent(move, margin):
        return HOLDS
    low, high = move.ci(LEVEL)
    if move.known and (low > margin or high < -margin):
        return MOVES
    return UNDECIDED
