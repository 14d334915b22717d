"""The statistics every reading uses (findings, notebook text, figures): one place, tested on textbook cases.

    d = stats.two_level(cpp_bits, full_bits, n)  # seeds and test examples: both sources of noise
    d = stats.paired(cpp, full)            # seeds share their subset and data order: pair them
    d = stats.welch(a, b)                  # runs that share nothing: Welch's unpaired difference
    d.ci(0.95), stats.equivalent(d), stats.detectable(d)
    v = stats.verdict(d, ">", paper="Compacter++ above full at 100 examples (Fig. 4)", paper_value=0.02)
    stats.holm([v1, v2, ...])              # the same verdicts after Holm's correction over all of them

Values are in the data's own units (accuracy as a fraction, 0.823); text says points (x100).

Why pair: two runs with the same seed train on the same subset in the same order, so much of their noise is
shared; the difference of each seed's pair cancels it, and its SE is the spread of those differences over
seeds. Comparing the two seed means as if independent (Welch) keeps that shared noise and can hide a
difference that every seed shows.

Why two levels: a claim is about the methods, not about these 1,443 test tweets, so its interval carries the
noise of training (the spread over seeds) and of the test sample (the spread over examples). two_level adds
the two variances (the seed term with n_seeds - 1 degrees of freedom, the example term with many, joined by
Welch-Satterthwaite); bootstrap_two_level resamples seeds and examples together and checks it (tested: the
two agree on a simulated case). A comparison of single runs covers test sampling only, and says so.

Why a margin: "equal", "flat" or "on par" is a claim too, and a wide interval around zero does not make it.
It is made only by an equivalence test (TOST): both one-sided tests reject a difference as large as MARGIN,
which is the same as the 90% confidence interval lying inside (-MARGIN, +MARGIN). Otherwise the honest text
is "inconclusive (could detect >= X points)": the smallest true difference it finds 80% of the time.
"""
import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as dist

# A difference worth seeing: 1.5 accuracy points, fixed before the runs it judges (docs/protocol.md). Why 1.5:
# it is below every separation the papers draw a conclusion from that we test (LayerNorm-only -3.5 to -4,
# top-layer and low-resource gaps of several points, single-layer removal "at most 2%"), and it is about the
# sampling noise of one score here (SE 1.0 point on the 1,443 test tweets at 82%), so a smaller difference
# would be a claim about noise, not about methods. The convergence rule uses the same
# number: a last-third gain below it is not a gain worth training for.
MARGIN = 0.015
# A run "collapsed" when it ends less than 3 points above the majority class: about 2.5 sampling SE of one
# score at the ~63% majority rate on the 1,442 validation tweets, so it is not shown to beat always answering
# the majority class. One rule for every family.
COLLAPSE = 0.03
LEVEL = 0.95  # two-sided confidence of every interval we print (and of "reproduced" / "reversed")
Z_TWO_SIDED = float(dist.norm.ppf(0.975))  # 1.960: the two-sided 95% interval of a normal difference
Z_ONE_SIDED = float(dist.norm.ppf(0.95))  # 1.645: the one-sided 95% bound of a gain measured on many examples
ALPHA_EQUIVALENCE = 0.05  # TOST at 5%: the 90% interval inside the margin
POWER = 0.8  # `detectable` answers: which true difference would this comparison find 80% of the time?

# The vocabulary keeps sign and size apart: "reproduced" needs the direction AND the paper's own number inside
# the interval; the sign alone is "direction reproduced, smaller (larger) effect".
SMALLER, LARGER = "direction reproduced, smaller effect", "direction reproduced, larger effect"
VERDICTS = ("reproduced", SMALLER, LARGER, "not reproduced", "reversed", "inconclusive")
ALPHA = 1 - LEVEL  # every test's level, before Holm's correction over the claims


@dataclass(frozen=True)
class Difference:
    """A difference of means a - b with its standard error and the degrees of freedom of its t distribution
    (math.inf: normal). se is NaN when there is no noise estimate (one seed), and a zero SE is none either: two
    arms that agree on every example, or seeds that all moved alike, show no spread, which is not evidence of
    no noise, and no t statistic can be formed from it."""

    estimate: float
    se: float
    df: float
    n: int  # pairs (paired), runs of a (welch), examples (paired by example)
    how: str  # "paired by seed", "unpaired (Welch)", ...

    def ci(self, level=LEVEL):
        """The two-sided t interval estimate +- t_{(1+level)/2, df} x SE (NaNs without a noise estimate)."""
        half = self.half_width(level)
        return self.estimate - half, self.estimate + half

    def half_width(self, level=LEVEL):
        return float(dist.t.ppf(0.5 + level / 2, self.df) * self.se) if self.known else math.nan

    @property
    def known(self):
        return self.se > 0  # False for NaN too


def paired(a, b, how="paired by seed"):
    """a - b paired by position (a[i] and b[i] share seed and subset): the mean of the per-pair differences,
    SE = sd(differences) / sqrt(n), df = n - 1 (Student's paired t). No noise estimate (SE NaN) from one pair
    or from differences that are all equal."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired() needs two 1-D arrays of equal length (one value per seed), got {a.shape} and "
                         f"{b.shape}; align them by seed first (drop seeds that only one side has)")
    d = a - b
    n = len(d)
    sd = d.std(ddof=1) if n >= 2 else 0.0
    # Identical differences (two seeds that both moved by the same 0.2 points: scores come in steps of one
    # example) show no spread, which is not evidence of no noise: no interval rather than a zero-width one.
    se = sd / math.sqrt(n) if sd > 0 else math.nan
    return Difference(float(d.mean()), float(se), n - 1 if sd > 0 else math.nan, n, how)


def welch(a, b):
    """mean(a) - mean(b) for runs that share no seed or subset: SE = sqrt(s_a^2/n_a + s_b^2/n_b) with the
    Welch-Satterthwaite degrees of freedom. b may be a number known exactly (the majority class): then it is
    the one-sample t interval of a, df = n_a - 1."""
    a = np.asarray(a, dtype=float)
    if np.ndim(b) == 0:
        n = len(a)
        se = a.std(ddof=1) / math.sqrt(n) if n >= 2 else math.nan
        df = n - 1 if n >= 2 else math.nan
        return Difference(float(a.mean() - float(b)), float(se), df, n, "against an exact value")
    b = np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return Difference(float(a.mean() - b.mean()), math.nan, math.nan, len(a), "unpaired (Welch)")
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if se > 0 else len(a) + len(b) - 2
    return Difference(float(a.mean() - b.mean()), se, df, len(a), "unpaired (Welch)")


def scores(p_a, p_b, n, b_exact=False):
    """p_a - p_b for two accuracies measured on the same n examples when only the scores are stored (no
    per-example record): SE = sqrt(p_a(1-p_a)/n + p_b(1-p_b)/n), normal. Conservative: two models scored on
    the same examples agree on most of them, so the paired SE (paired_difference) is smaller. b_exact: p_b is
    known without noise (the majority class of the split), so only p_a's sampling SE counts."""
    se = math.sqrt(p_a * (1 - p_a) / n + (0.0 if b_exact else p_b * (1 - p_b) / n))
    how = f"one score on {n:,} examples against an exact value" if b_exact else \
        f"two scores on {n:,} examples, unpaired (binomial)"
    return Difference(float(p_a - p_b), se, math.inf, n, how)


def _bits(hex_bits, n):
    return np.unpackbits(np.frombuffer(bytes.fromhex(hex_bits), dtype=np.uint8))[:n].astype(np.int8)


def paired_difference(a, b, n):
    """(accuracy of b - accuracy of a, its standard error) from two classifiers' correct bits on the same n
    examples (train.correct_bits: hex of the packed bits). The mean of the per-example differences (+1, 0, -1),
    d = (b_only - a_only) / n, and SE = sqrt(((b_only + a_only) / n - d^2) / (n - 1)): only the examples they
    disagree on count, so this SE is far below that of two independent scores."""
    bits_a, bits_b = _bits(a, n).astype(bool), _bits(b, n).astype(bool)
    only_b, only_a = int((bits_b & ~bits_a).sum()), int((bits_a & ~bits_b).sum())
    d = (only_b - only_a) / n
    return d, math.sqrt(max(0.0, (only_b + only_a) / n - d * d) / (n - 1))


def by_example(a, b, n):
    """b - a for two classifiers' correct bits on the same n examples (paired_difference) as a Difference:
    normal, since n is large (hundreds of examples)."""
    d, se = paired_difference(a, b, n)
    return Difference(d, se, math.inf, n, f"paired by example on {n:,}")


def example_differences(a, b, n):
    """(seeds, n) int8 array of b - a per seed and test example (+1, 0, -1) from aligned lists of correct bits
    (train.correct_bits: one hex string per seed, a[i] and b[i] sharing seed and subset)."""
    if len(a) != len(b) or not len(a):
        raise ValueError(f"two_level() needs one run of each side per seed, aligned by seed; got {len(a)} and "
                         f"{len(b)} runs (drop the seeds that only one side has)")
    return np.stack([_bits(y, n) - _bits(x, n) for x, y in zip(a, b)])


def two_level(a, b, n):
    """b - a averaged over seeds and test examples, with both sources of noise (the variance sum):
    SE^2 = var(per-seed differences) / seeds + var(per-example differences, averaged over seeds) / n,
    the first with seeds - 1 degrees of freedom, the second with n - 1, joined by Welch-Satterthwaite.
    Integer sums until the last division, so the result is the same on every CPU. One seed: the example
    term alone, and `how` says that the interval covers test sampling only."""
    return _two_level(example_differences(a, b, n), n, "test")


def _two_level(d, n, split):
    """The mean of a (seeds, n) integer array of per-seed, per-example differences with the variance-sum SE
    (two_level)."""
    seeds = d.shape[0]
    per_seed = d.sum(axis=1) / n
    per_example = d.sum(axis=0) / seeds
    v_example = per_example.var(ddof=1) / n
    if seeds == 1:
        return Difference(float(per_seed[0]), math.sqrt(v_example), math.inf, n,
                          f"one run each, paired by example on {n:,}: {split} sampling only")
    v_seed = per_seed.var(ddof=1) / seeds
    se = math.sqrt(v_seed + v_example)
    df = ((v_seed + v_example) ** 2 / (v_seed ** 2 / (seeds - 1) + v_example ** 2 / (n - 1))
          if se > 0 else math.nan)
    return Difference(float(per_seed.mean()), se if se > 0 else math.nan, df, seeds,
                      f"seeds and {split} examples ({seeds} seeds x {n:,})")


def bootstrap_two_level(a, b, n, replicates=4000, level=LEVEL, seed=0):
    """The percentile interval of b - a from a paired two-level bootstrap: each replicate draws the seeds with
    replacement and, independently, the test examples with replacement (the same examples for every run, so
    the pairing by example is kept). The check on two_level: with many seeds the two agree."""
    d = example_differences(a, b, n).astype(np.int64)
    rng = np.random.default_rng(seed)
    seeds = d.shape[0]
    estimates = np.empty(replicates)
    for r in range(replicates):
        weights = np.bincount(rng.integers(0, n, n), minlength=n)  # examples drawn, with their counts
        per_seed = d @ weights  # integer: exact on every CPU
        estimates[r] = per_seed[rng.integers(0, seeds, seeds)].sum() / (seeds * n)
    return tuple(np.quantile(estimates, [(1 - level) / 2, (1 + level) / 2]))


def gain_below_margin(gain, se, margin=MARGIN):
    """True when a gain is shown to be smaller than a difference worth seeing: its one-sided 95% upper bound,
    gain + 1.645 x SE, lies below margin. A gain that cannot be measured (gain or SE missing) is never small.
    The convergence rule's plateau (a run's last-third gain) and the budget control's mean gain
    (budget_enough) are both this test."""
    if gain is None or se is None or math.isnan(gain) or math.isnan(se):
        return False
    return gain + Z_ONE_SIDED * se < margin


def tost(diff, margin=MARGIN):
    """The p-value of the two one-sided tests of |true difference| >= margin: the larger of
    P(T >= (est + margin) / SE) and P(T <= (est - margin) / SE). Below alpha: equivalent within the margin."""
    if not diff.known:
        return math.nan
    lower = dist.t.sf((diff.estimate + margin) / diff.se, diff.df)  # H0: difference <= -margin
    upper = dist.t.cdf((diff.estimate - margin) / diff.se, diff.df)  # H0: difference >= +margin
    return float(max(lower, upper))


def equivalent(diff, margin=MARGIN, alpha=ALPHA_EQUIVALENCE):
    """True when the TOST rejects a difference of margin or more (the 1 - 2 alpha interval lies inside
    +-margin); False also when there is no noise estimate."""
    return diff.known and tost(diff, margin) < alpha


def detectable(diff, alpha=1 - LEVEL, power=POWER):
    """The smallest true difference this comparison finds with the given power by a two-sided test at alpha:
    (t_{1-alpha/2, df} + t_{power, df}) x SE (the normal-approximation power formula with t quantiles)."""
    if not diff.known:
        return math.nan
    return float((dist.t.ppf(1 - alpha / 2, diff.df) + dist.t.ppf(power, diff.df)) * diff.se)


def anova(groups):
    """(F, p) of the one-way ANOVA of several groups of values (e.g. one group of seeds per method):
    is any method's mean different from the others'?"""
    groups = [np.asarray(g, dtype=float) for g in groups]
    if len(groups) < 2 or sum(len(g) for g in groups) <= len(groups):
        raise ValueError("anova needs at least two groups and more values than groups (several seeds per method)")
    result = dist.f_oneway(*groups)
    return float(result.statistic), float(result.pvalue)


@dataclass(frozen=True)
class Verdict:
    """A paper claim judged on our data. label is one of VERDICTS; paper is the paper's claim in words and
    paper_value its own number in the difference's units (None when the paper states only a direction);
    p is the p-value of the test the label rests on (what Holm's correction adjusts); at_budget marks a
    verdict whose runs are not converged (rule 3), so it holds at this budget, not at convergence."""

    claim: str  # ">" (a above b), "<" (a below b) or "==" (a equals b within the margin)
    label: str
    paper: str
    diff: Difference
    margin: float = MARGIN
    unit: str = "points"  # how x100 of the difference reads: accuracy points, or "%" of a cost (COST_MARGIN)
    paper_value: float | None = None
    p: float = math.nan
    at_budget: bool = False
    grid_end: str = ""  # the settings behind the verdict whose learning rate sits at an end of its grid
    holm_p: float | None = None  # set by holm(): the adjusted p-value

    @property
    def detectable(self):
        return detectable(self.diff)

    def __str__(self):
        label = self.label
        if label == "inconclusive":
            label = ("inconclusive (no noise estimate)" if not self.diff.known else
                     f"inconclusive (could detect ≥ {self.detectable * 100:.1f} {self.unit})")
        return (label + (" at this budget" if self.at_budget else "")
                + (f" (rate at the grid's end: {self.grid_end})" if self.grid_end else ""))

    def deciding(self):
        """(low, high, words) of the interval the label rests on: for a directional claim the one-sided 95%
        bound on the claimed side (the other end open), for "==" the 90% interval against the margin."""
        if self.claim == "==":
            low, high = self.diff.ci(1 - 2 * ALPHA_EQUIVALENCE)
            return low, high, f"{1 - 2 * ALPHA_EQUIVALENCE:.0%} CI vs margin ±{self.margin * 100:g}"
        half = self.diff.half_width(1 - 2 * ALPHA)  # the one-sided (1 - ALPHA) bound
        # the bound on the claimed side, or (reversed, not reproduced) on the side that decides against it
        if (self.claim == ">") == (self.label in ("reversed", "not reproduced")):
            return -math.inf, self.diff.estimate + half, f"one-sided {1 - ALPHA:.0%} upper bound"
        return self.diff.estimate - half, math.inf, f"one-sided {1 - ALPHA:.0%} lower bound"

    def numbers(self):
        """'-3.1 [-6.0, -0.2] points (95% CI; one-sided 95% upper bound -0.8; seeds and test examples ...)':
        the estimate, its two-sided 95% interval, and the bound or interval that decides the label."""
        scale = 100
        if not self.diff.known:
            return (f"{self.diff.estimate * scale:+.1f} {self.unit} ({self.diff.how}, n={self.diff.n}: "
                    "no noise estimate)")
        low, high = self.diff.ci(LEVEL)
        d_low, d_high, words = self.deciding()
        if self.claim == "==":
            decides = f"{words}: [{d_low * scale:+.1f}, {d_high * scale:+.1f}]"
        else:
            decides = f"{words} {(d_high if math.isinf(d_low) else d_low) * scale:+.1f}"
        return (f"{self.diff.estimate * scale:+.1f} [{low * scale:+.1f}, {high * scale:+.1f}] {self.unit} "
                f"({LEVEL:.0%} CI; {decides}; {self.diff.how}, n={self.diff.n})")

    def paper_text(self):
        return self.paper if self.paper_value is None else f"{self.paper_value * 100:+.1f} {self.unit}: {self.paper}"

    def text(self):
        """The one line every reading prints: verdict, our numbers, the paper's."""
        return f"**{self}**: here {self.numbers()}; paper: {self.paper_text()}"


# A cost difference worth seeing, as a fraction of full fine-tuning's cost (time per epoch, peak memory): 5%,
# fixed before the runs it judges. Why 5%: a fifth of the smallest overhead the paper draws a conclusion from
# (Prompt Tuning's +24.42% memory, Compacter 5.5), and about the spread of one setting's cost over seeds on one
# CPU (coefficient of variation 3-6% for peak RSS, 1-10% for time per epoch, two seeds of each of 06's
# settings): a smaller difference is not one this measurement can show.
COST_MARGIN = 0.05


def _p_above(diff, threshold):
    """One-sided p-value of H0: true difference <= threshold (small: shown above it)."""
    return float(dist.t.sf((diff.estimate - threshold) / diff.se, diff.df))


def _p_apart(diff, margin):
    """One-sided p-value that |true difference| > margin, on the side the estimate lies."""
    return min(_p_above(diff, margin), _p_above(replace(diff, estimate=-diff.estimate), margin))


def verdict(diff, claim, paper, margin=MARGIN, unit="points", paper_value=None, at_budget=False, grid_end=""):
    """Judge a paper's claim about a - b on our difference `diff` (a cost ratio minus one: margin=COST_MARGIN,
    unit="%"). Every test is one-sided at ALPHA (5%) unless said otherwise.

    claim ">" (a above b) or "<" (a below b), the claimed direction made positive:
      reversed        the one-sided 95% bound shows the other direction;
      not reproduced  the one-sided 95% bound on the claimed side is below the margin: no difference worth
                      seeing in the claimed direction (also when a tiny effect has the claimed sign);
      reproduced      the one-sided 95% bound shows the direction, and the paper's number (if it gives one)
                      lies inside our 95% interval;
      direction reproduced, smaller / larger effect
                      the direction is shown, and the paper's number lies above / below our 95% interval;
      inconclusive    otherwise: the comparison could detect >= detectable(diff).
    claim "==" (a equals b within the margin, "flat", "on par"):
      reproduced      equivalent(diff): the 90% interval lies inside +-margin (TOST);
      not reproduced  |difference| > margin is shown (one-sided 95% bound beyond the margin on one side);
      inconclusive    otherwise.
    at_budget: the runs behind the verdict are not converged, and the label says so; grid_end names the
    settings whose learning rate is an end of their grid (the best rate may lie beyond it).
    """
    if claim not in (">", "<", "=="):
        raise ValueError(f"unknown claim {claim!r}; use '>' (a above b), '<' (a below b) or '==' (equal within "
                         "the margin)")
    args = dict(margin=margin, unit=unit, paper_value=paper_value, at_budget=at_budget, grid_end=grid_end)
    if not diff.known:
        return Verdict(claim, "inconclusive", paper, diff, p=math.nan, **args)
    if claim == "==":
        p_equal, p_apart = tost(diff, margin), _p_apart(diff, margin)
        if p_equal < ALPHA_EQUIVALENCE:
            return Verdict(claim, "reproduced", paper, diff, p=p_equal, **args)
        if p_apart < ALPHA:
            return Verdict(claim, "not reproduced", paper, diff, p=p_apart, **args)
        return Verdict(claim, "inconclusive", paper, diff, p=p_equal, **args)
    sign = 1 if claim == ">" else -1
    signed = replace(diff, estimate=sign * diff.estimate)
    p_direction = _p_above(signed, 0.0)
    p_reversed = 1 - p_direction
    p_small = float(dist.t.cdf((signed.estimate - margin) / signed.se, signed.df))  # H0: >= margin
    # a reversal first, then "no difference worth seeing" (which a tiny effect of the right sign also is), then
    # the direction and its size
    if p_reversed < ALPHA:
        return Verdict(claim, "reversed", paper, diff, p=p_reversed, **args)
    if p_small < ALPHA:
        return Verdict(claim, "not reproduced", paper, diff, p=p_small, **args)
    if p_direction < ALPHA:
        label = "reproduced"
        if paper_value is not None:
            low, high = sorted(sign * x for x in diff.ci(LEVEL))
            target = sign * paper_value
            label = SMALLER if target > high else LARGER if target < low else "reproduced"
        return Verdict(claim, label, paper, diff, p=p_direction, **args)
    return Verdict(claim, "inconclusive", paper, diff, p=p_direction, **args)


def all_of(verdicts, paper, paper_value=None):
    """One verdict for a claim made of several comparisons (e.g. "flat at every std <= 1e-2"): reproduced only
    when every part is; not reproduced or reversed when any part is (the first such, in order); otherwise
    inconclusive, carried by the least decided part (the one with the largest detectable difference). The
    p-value is the largest of the parts' (an intersection-union test: every part must hold)."""
    verdicts = list(verdicts)
    if not verdicts:
        raise ValueError("all_of needs at least one verdict")
    budget = any(v.at_budget for v in verdicts)
    ends = ", ".join(sorted({e for v in verdicts for e in v.grid_end.split(", ") if e}))

    def carried(v, label, p):
        return Verdict(v.claim, label, paper, v.diff, v.margin, v.unit, paper_value, p, budget, ends)

    failed = [v for v in verdicts if v.label in ("not reproduced", "reversed")]
    if failed:
        return carried(failed[0], failed[0].label, failed[0].p)
    open_ = [v for v in verdicts if v.label == "inconclusive"]
    if open_:
        worst = max(open_, key=lambda v: v.detectable if v.diff.known else math.inf)
        return carried(worst, "inconclusive", max(v.p for v in verdicts))
    worst = max(verdicts, key=lambda v: abs(v.diff.estimate))
    labels = {v.label for v in verdicts}
    label = "reproduced" if labels == {"reproduced"} else sorted(labels - {"reproduced"})[0]
    return carried(worst, label, max(v.p for v in verdicts))


def holm(verdicts, alpha=ALPHA):
    """The verdicts after Holm's step-down correction over all of them (Holm 1979): the k-th smallest p-value
    is compared with alpha / (m - k + 1), and once one fails every larger one fails too. A verdict whose test
    does not survive becomes "inconclusive"; each keeps its adjusted p-value (holm_p). Verdicts without a
    p-value (no noise estimate) stay inconclusive and count in m."""
    verdicts = list(verdicts)
    m = len(verdicts)
    order = sorted(range(m), key=lambda i: (math.isnan(verdicts[i].p), verdicts[i].p))
    adjusted, running = [math.nan] * m, 0.0
    for rank, i in enumerate(order):
        p = verdicts[i].p
        running = max(running, min(1.0, (m - rank) * p)) if not math.isnan(p) else math.nan
        adjusted[i] = running
    out = []
    for v, p_adj in zip(verdicts, adjusted):
        keeps = v.label != "inconclusive" and not math.isnan(p_adj) and p_adj < alpha
        out.append(replace(v, label=v.label if keeps else "inconclusive", holm_p=p_adj))
    return out


# Budget rule 3 (claim_move, budget_verdict): a budget is enough when no claim moves by the margin at twice the steps
BUDGET_RULE_VERSION = 3
HOLDS, MOVES, UNDECIDED = "holds", "moves", "undecided"


def claim_move(n, b1, b2, a1=None, a2=None):
    """(b - a at 2x) - (b - a at 1x) over the seeds, from the runs' correct bits on the same n validation
    examples: b1, b2 (and a1, a2) are lists with one hex string per seed, aligned by seed. Without a (a family
    with one control entry) it is b's own gain at 2x. A Difference with both sources of noise (_two_level)."""
    if a1 is None:
        a1 = a2 = [None] * len(b1)
    if not len(b1) or len({len(b1), len(b2), len(a1), len(a2)}) > 1:
        raise ValueError(f"claim_move() needs one run per seed of each arm at both budgets, aligned by seed; got "
                         f"{len(b1)}, {len(b2)}, {len(a1)} and {len(a2)} (drop the seeds some runs lack)")

    def arm(bits):
        return _bits(bits, n) if bits is not None else np.zeros(n, dtype=np.int8)

    d = np.stack([(arm(y2) - arm(x2)) - (arm(y1) - arm(x1)) for x1, y1, x2, y2 in zip(a1, b1, a2, b2)])
    return _two_level(d, n, "validation")


def budget_verdict(move, margin=MARGIN):
    """Budget rule 3 on one claim's move: HOLDS when shown inside +-margin (TOST), MOVES when shown beyond it
    on one side (one-sided 95%), else UNDECIDED (the move could not be measured finely enough)."""
    if equivalent(move, margin):
        return HOLDS
    if move.known and _p_apart(move, margin) < ALPHA:
        return MOVES
    return UNDECIDED
