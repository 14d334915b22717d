"""The estimators and tests every reading uses (findings, notebook text, figures): differences with their
intervals, one-sided and equivalence p-values, what a comparison can detect, and simulated draws of a design.
One place, tested on textbook cases and on simulated data whose answer is known. Judging a paper's claim with
them (its verdict, Holm's correction over a study's claims, the budget rule) is judge.py's. The labels a verdict
can read (VERDICTS, NOT_LEARNED, ...) are named here, beside the tests whose outcomes they name, and judge.py
imports them: imports go one way, judge -> stats.

    d = stats.two_level(cpp_bits, full_bits, n)  # seeds x shared test examples: crossed random effects
    d = stats.crossed(per_example)         # the same from a (seeds, examples) array of differences
    d = stats.paired(cpp, full)            # one number per seed, paired by seed
    d = stats.log_ratio(cost_a, cost_b)    # costs of runs that share nothing: Welch on the logarithms
    d = stats.permuted_log_ratio(cost_a, cost_b, how)   # ... or the permutation test on them (permutation.py)
    d.ci(0.95), stats.tost(d), stats.detectable(d, ">")

Values are in the data's own units (accuracy as a fraction, 0.823); text says points (x100).

Why pair: two runs with the same seed train on the same subset in the same order, and every run is scored on
the same test examples, so a difference is taken example by example within a seed, and much shared noise
cancels.

Why crossed random effects: a claim is about the methods, not about these three seeds or these 1,443 test
tweets, so its interval carries the noise of training (seeds) and of the test sample (examples). The per-example
differences d[s, i] of S seeds on N shared examples are modelled as mu + seed_s + example_i + residual_si, and
the mean's variance is sigma_s^2 / S + sigma_e^2 / N + sigma_r^2 / (S N), each component estimated once from
the two-way ANOVA's mean squares (crossed). Adding the variance of the seed means to that of the example means
would count the seed x example residual twice: both contain it.

Why a margin: "equal", "flat" or "on par" is a claim too, and a wide interval around zero does not make it.
It is made only by an equivalence test (TOST): both one-sided tests reject a difference as large as MARGIN,
which is the same as the 90% confidence interval lying inside (-MARGIN, +MARGIN).
"""
import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import stats as dist

from .permutation import Permutation

# A difference worth seeing: 1.5 accuracy points, fixed before the runs it judges (docs/protocol.md). Why 1.5:
# it is below every separation the papers draw a conclusion from that we test (LayerNorm-only -3.5 to -4,
# top-layer and low-resource gaps of several points), and it is about the sampling noise of one score here (SE
# 1.0 point on the 1,443 test tweets at 82%), so a smaller difference would be a claim about noise, not about
# methods. The convergence rule uses the same number: a last-third gain below it is not a gain worth training for.
MARGIN = 0.015
# A run "collapsed" when it ends less than 3 points above the majority class: about 2.5 sampling SE of one
# score at the ~63% majority rate on the 1,442 validation tweets, so it is not shown to beat always answering
# the majority class. One rule for every family.
COLLAPSE = 0.03
# A claim is judged only on runs that learned (learned): some arm's score on the claim's split shown above the
# majority class by more than the claim's margin, one-sided at ALPHA over the arms (Bonferroni). Otherwise, or
# where no run of the claim converged and no budget control of its own holds, it reads one of these and leaves
# Holm's family (judge.holm); so does a claim whose arm the study did not plan (NOT_RUN, with the arm's name).
NOT_LEARNED = "not judged: its runs did not learn"
NOT_CONVERGED = "not judged: did not converge at this budget"
NOT_RUN = "not run (this study has no {})"
UNTESTED = ("not judged", "not run")  # the labels' beginnings that keep a claim out of Holm's family
# Two arms right and wrong on the very same examples (every seed) differ by exactly 0: no sampling noise to
# estimate, and a zero-width interval (Difference.exact)
IDENTICAL = "identical predictions: no sampling noise"
LEVEL = 0.95  # two-sided confidence of every interval we print, and of the readings "reversed" / "not reproduced"
ALPHA = 1 - LEVEL  # every pre-declared test's level, before Holm's correction over the claims
Z_ONE_SIDED = float(dist.norm.ppf(1 - ALPHA))  # 1.645: the one-sided 95% bound of a gain measured on many examples
ALPHA_EQUIVALENCE = ALPHA  # TOST at 5%: the 90% interval inside the margin
POWER = 0.8  # `detectable` answers: which true difference would this comparison find 80% of the time?

# The vocabulary keeps sign and size apart: "reproduced" needs the direction AND the paper's own number inside
# the interval; the sign alone is "direction reproduced, smaller (larger) effect".
SMALLER, LARGER = "direction reproduced, smaller effect", "direction reproduced, larger effect"
VERDICTS = ("reproduced", SMALLER, LARGER, "not reproduced", "reversed", "inconclusive")

# How often the crossed estimator's 95% interval covers the truth with 3 seeds, measured on simulated seeds x
# examples data (tests/experiments/test_stats.py): about 97% when the seeds add no variance of their own (the
# seed component, truncated at zero, is then over-estimated half the time) and about 93% when the seeds' own
# spread dominates the variance (Satterthwaite's degrees of freedom are then too many for a 2-df mean square).
# With 5 seeds the same two shortfalls shrink to about 97% and 94%; with 10 seeds it covers 95 +- 1.5% either way.
COVERAGE = {3: (0.93, 0.97), 5: (0.94, 0.97)}


@dataclass(frozen=True)
class Crossed:
    """The variance components of a difference measured by `seeds` seeds on the same `examples` examples (the
    crossed model of the module docstring), estimated from the two-way ANOVA's mean squares: seed = sigma_s^2
    and example = sigma_e^2, each truncated at zero, and residual = sigma_r^2. What `at` projects to another
    design and `simulate` draws from."""

    seed: float
    example: float
    residual: float
    seeds: int
    examples: int

    def mean_squares(self, seeds, examples):
        """The expected mean squares (seed, example, residual) of a design with these components as the truth:
        sigma_r^2 + N sigma_s^2, sigma_r^2 + S sigma_e^2 and sigma_r^2."""
        return (self.residual + examples * self.seed, self.residual + seeds * self.example, self.residual)

    def at(self, seeds, examples):
        """(variance of the mean, Satterthwaite degrees of freedom) of the same difference measured by `seeds`
        seeds on `examples` examples, taking these components as the truth."""
        if seeds == 1:  # what one run's interval estimates: its examples' variance (no seed can be seen)
            return (self.example + self.residual) / examples, math.inf
        variance, df = crossed_variance(*self.mean_squares(seeds, examples), seeds, examples)
        return float(variance), float(df)


@dataclass(frozen=True)
class Arms:
    """The spread of two groups of runs that share nothing (Welch): each arm's variance per run."""

    a: float
    b: float

    def at(self, seeds, examples=None):
        """(variance of the difference of means, Welch-Satterthwaite df) with `seeds` runs in each arm."""
        va, vb = self.a / seeds, self.b / seeds
        return va + vb, (va + vb) ** 2 / (va ** 2 / (seeds - 1) + vb ** 2 / (seeds - 1))


@dataclass(frozen=True)
class Difference:
    """A difference of means a - b with its standard error and the degrees of freedom of its t distribution
    (math.inf: normal). se is NaN when there is no noise estimate (one seed; seeds that all moved alike, whose
    lack of spread is no evidence of no noise). se is exactly 0 for an exact difference (`exact`): per-example
    differences that are the same number on every example and seed, as two arms right and wrong on the same
    examples (IDENTICAL); its interval has zero width and every test reads it as the number it is. design holds
    what the variance is made of (Crossed or Arms), for projecting it to another number of seeds or examples."""

    estimate: float
    se: float
    df: float
    n: int  # seeds (crossed, paired), runs of a (welch), examples (paired by example)
    how: str  # "seeds x test examples (3 x 1,443), crossed", "unpaired (Welch)", ...
    design: object = field(default=None, compare=False)

    def ci(self, level=LEVEL):
        """The two-sided t interval estimate +- t_{(1+level)/2, df} x SE (NaNs without a noise estimate); for a
        permutation test's difference, the shifts its test does not reject (Permutation.ci)."""
        if isinstance(self.design, Permutation) and self.known:
            return self.design.ci(level)
        half = self.half_width(level)
        return self.estimate - half, self.estimate + half

    def half_width(self, level=LEVEL):
        if self.exact:
            return 0.0
        return float(dist.t.ppf(0.5 + level / 2, self.df) * self.se) if self.known else math.nan

    @property
    def known(self):
        """A noise estimate to form a t statistic from (False for an exact difference, and for NaN)."""
        return self.se > 0

    @property
    def exact(self):
        """No sampling noise: the same per-example difference on every example and seed (se exactly 0)."""
        return self.se == 0

    @property
    def testable(self):
        return self.known or self.exact


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
    Welch-Satterthwaite degrees of freedom. b may be a number known exactly: then it is the one-sample t
    interval of a, df = n_a - 1."""
    a = np.asarray(a, dtype=float)
    if np.ndim(b) == 0:
        n = len(a)
        se = a.std(ddof=1) / math.sqrt(n) if n >= 2 else math.nan
        se, df = (se, n - 1) if se > 0 else (math.nan, math.nan)  # runs that agree show no spread: no estimate
        return Difference(float(a.mean() - float(b)), float(se), df, n, "against an exact value")
    b = np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return Difference(float(a.mean() - b.mean()), math.nan, math.nan, len(a), "unpaired (Welch)")
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if se > 0 else math.nan
    return Difference(float(a.mean() - b.mean()), se if se > 0 else math.nan, df, len(a), "unpaired (Welch)",
                      Arms(float(a.var(ddof=1)), float(b.var(ddof=1))))


def log_ratio(a, b):
    """log(cost of a) - log(cost of b), Welch's unpaired difference of the mean logarithms: exp(estimate) - 1 is
    a's cost relative to b's (+0.25: a quarter more). Unpaired because the seed that pairs two runs' accuracy
    (the same subset, the same order) says nothing of their peak memory or seconds per epoch, which the
    machine's load sets; logarithms because a cost is judged as a ratio."""
    diff = welch(np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float)))
    return replace(diff, how=f"{len(a)} and {len(b)} runs, unpaired (Welch on log cost)")


def permuted_log_ratio(a, b, how):
    """log(cost of a) - log(cost of b) as log_ratio, judged by the permutation test on the logarithms
    (permutation.Permutation: its p-values and its interval, by inverting the test, are what the verdicts read).
    se and df stay Welch's: what a verdict says the comparison could detect (detectable) and what a power
    simulation draws (simulate) are normal theory, a guide; no p-value or interval comes from them. `how`
    names the runs and what was measured."""
    la, lb = np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float))
    diff = welch(la, lb)
    return replace(diff, how=how, design=Permutation(la, lb, arms=diff.design))


def normal_theory(diff):
    """diff as a t-based Difference: a permutation test's replaced by its Welch description (the one a power
    simulation redraws: its p-values must come from the drawn estimate and SE, not from the stored runs)."""
    return replace(diff, design=diff.design.arms) if isinstance(diff.design, Permutation) else diff


def scores(p_a, p_b, n, b_exact=False):
    """p_a - p_b for two accuracies measured on the same n examples when only the scores are stored (no
    per-example record): SE = sqrt(p_a(1-p_a)/n + p_b(1-p_b)/n), normal. Conservative: two models scored on
    the same examples agree on most of them, so the paired SE (paired_difference) is smaller. b_exact: p_b is
    known without noise (the majority class of the split), so only p_a's sampling SE counts."""
    se = math.sqrt(p_a * (1 - p_a) / n + (0.0 if b_exact else p_b * (1 - p_b) / n)) or math.nan  # 0 or 100%
    how = f"one score on {n:,} examples against an exact value" if b_exact else \
        f"two scores on {n:,} examples, unpaired (binomial)"
    return Difference(float(p_a - p_b), se, math.inf, n, how)


def unpack(hex_bits, n):
    """(n,) int8 array of one run's per-example correctness from its bits (train.correct_bits: hex, packed)."""
    return np.unpackbits(np.frombuffer(bytes.fromhex(hex_bits), dtype=np.uint8))[:n].astype(np.int8)


def paired_difference(a, b, n):
    """(accuracy of b - accuracy of a, its standard error) from two classifiers' correct bits on the same n
    examples (train.correct_bits: hex of the packed bits). The mean of the per-example differences (+1, 0, -1),
    d = (b_only - a_only) / n, and SE = sqrt(((b_only + a_only) / n - d^2) / (n - 1)): only the examples they
    disagree on count, so this SE is far below that of two independent scores."""
    bits_a, bits_b = unpack(a, n).astype(bool), unpack(b, n).astype(bool)
    only_b, only_a = int((bits_b & ~bits_a).sum()), int((bits_a & ~bits_b).sum())
    d = (only_b - only_a) / n
    return d, math.sqrt(max(0.0, (only_b + only_a) / n - d * d) / (n - 1))


def by_example(a, b, n, split=""):
    """b - a for two classifiers' correct bits on the same n examples (paired_difference) as a Difference:
    normal, since n is large (hundreds of examples)."""
    d, se = paired_difference(a, b, n)
    if se == 0:  # no example on which they disagree, or every one alike
        return replace(_exact(d, 1, n, split or "shared"), n=n)
    return Difference(d, se, math.inf, n, f"paired by example on {n:,}" + (f" {split} examples" if split else ""),
                      Crossed(0.0, se * se * n, 0.0, 1, n))


def example_differences(a, b, n):
    """(seeds, n) int8 array of b - a per seed and example (+1, 0, -1) from aligned lists of correct bits
    (train.correct_bits: one hex string per seed, a[i] and b[i] sharing seed and subset)."""
    if len(a) != len(b) or not len(a):
        raise ValueError(f"two_level() needs one run of each side per seed, aligned by seed; got {len(a)} and "
                         f"{len(b)} runs (drop the seeds that only one side has)")
    return np.stack([unpack(y, n) - unpack(x, n) for x, y in zip(a, b)])


def mean_squares(d):
    """(grand mean, MS_seed, MS_example, MS_residual) of the two-way ANOVA without replication over the last two
    axes of d, shaped (..., seeds, examples): vectorised, so that a simulation is one array. Each mean square
    divides its sum of squares by its degrees of freedom: S - 1, N - 1 and (S - 1)(N - 1)."""
    d = np.asarray(d, dtype=float)
    seeds, examples = d.shape[-2:]
    grand = d.mean(axis=(-2, -1), keepdims=True)
    per_seed, per_example = d.mean(axis=-1, keepdims=True), d.mean(axis=-2, keepdims=True)
    ms_seed = examples * ((per_seed - grand) ** 2).sum(axis=(-2, -1)) / (seeds - 1)
    ms_example = seeds * ((per_example - grand) ** 2).sum(axis=(-2, -1)) / (examples - 1)
    residual = d - per_seed - per_example + grand
    ms_residual = (residual ** 2).sum(axis=(-2, -1)) / ((seeds - 1) * (examples - 1))
    return grand[..., 0, 0], ms_seed, ms_example, ms_residual


def crossed_variance(ms_seed, ms_example, ms_residual, seeds, examples):
    """(variance of the grand mean, its Satterthwaite degrees of freedom) from the mean squares of S seeds x N
    examples (arrays broadcast). With E[MS_seed] = sigma_r^2 + N sigma_s^2, E[MS_example] = sigma_r^2 + S
    sigma_e^2 and E[MS_residual] = sigma_r^2, the variance sigma_s^2/S + sigma_e^2/N + sigma_r^2/(SN) is

        max(MS_seed - MS_residual, 0) / (SN)  +  MS_example / (SN)

    The second term estimates sigma_e^2/N + sigma_r^2/(SN) exactly and is never negative; the first is the seed
    component, truncated at zero when the seeds spread less than the residual predicts (an unbiased estimate
    would subtract there, and give an interval narrower than the examples alone allow). Truncation errs on the
    safe side when the seeds add nothing (COVERAGE). The degrees of freedom are Satterthwaite's over the mean
    squares that enter: (sum of c_k MS_k)^2 / sum of (c_k MS_k)^2 / df_k."""
    sn = seeds * examples
    shown = ms_seed > ms_residual
    seed_part = np.where(shown, ms_seed - ms_residual, 0.0) / sn
    example_part = ms_example / sn
    variance = seed_part + example_part
    spread = example_part ** 2 / (examples - 1) + np.where(
        shown, (ms_seed / sn) ** 2 / (seeds - 1) + (ms_residual / sn) ** 2 / ((seeds - 1) * (examples - 1)), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(spread > 0, variance ** 2 / np.where(spread > 0, spread, 1.0), np.nan)
    return variance, df


def crossed(d, split="test"):
    """The mean of a (seeds, examples) array of per-example differences (b - a per seed and example) with the
    crossed random-effects variance (crossed_variance). One seed: the examples' variance alone (the paired-by-
    example SE), normal, and `how` says that the interval covers sampling of the split only."""
    d = np.asarray(d)
    seeds, examples = d.shape
    if d.size and np.all(d == d.flat[0]):
        return _exact(float(d.flat[0]), seeds, examples, split)
    if seeds == 1:
        row = d[0].astype(float)
        variance = row.var(ddof=1) / examples
        return Difference(float(row.mean()), math.sqrt(variance) if variance > 0 else math.nan, math.inf, examples,
                          f"one run each, paired by example on {examples:,}: {split} sampling only",
                          Crossed(0.0, variance * examples, 0.0, 1, examples))
    grand, ms_seed, ms_example, ms_residual = mean_squares(d)
    variance, df = crossed_variance(ms_seed, ms_example, ms_residual, seeds, examples)
    design = Crossed(max(0.0, float(ms_seed - ms_residual) / examples),
                     max(0.0, float(ms_example - ms_residual) / seeds), float(ms_residual), seeds, examples)
    known = variance > 0 and np.isfinite(df)
    return Difference(float(grand), math.sqrt(variance) if known else math.nan, float(df) if known else math.nan,
                      seeds, f"seeds x {split} examples ({seeds} x {examples:,}), crossed", design)


def _exact(value, seeds, examples, split):
    """The Difference of per-example differences that all equal `value`: no sampling noise, se 0 (IDENTICAL
    when the value is 0: the two sides right and wrong on the same examples)."""
    what = IDENTICAL if value == 0 else f"{value * 100:+g} points on every example: no sampling noise"
    return Difference(value, 0.0, math.inf, seeds, f"{seeds} x {examples:,} {split} examples, {what}",
                      Crossed(0.0, 0.0, 0.0, seeds, examples))


def two_level(a, b, n, split="test"):
    """b - a averaged over seeds and examples from aligned lists of correct bits (one hex string per seed), with
    both sources of noise: the crossed random-effects estimator (crossed)."""
    return crossed(example_differences(a, b, n), split)


def gain_below_margin(gain, se, margin=MARGIN):
    """True when a gain is shown to be smaller than a difference worth seeing: its one-sided 95% upper bound,
    gain + 1.645 x SE, lies below margin. A gain that cannot be measured (gain or SE missing) is never small.
    The convergence rule's plateau (a run's last-third gain) is this test."""
    if gain is None or se is None or math.isnan(gain) or math.isnan(se):
        return False
    return gain + Z_ONE_SIDED * se < margin


def above(diff, null=0.0):
    """P(T >= (estimate - null) / SE): the one-sided p-value of H0 "the true difference is null or less". For an
    exact difference (no noise) the limit as SE goes to 0: 0 when the estimate lies above null, else 1 (an exact
    number in H0 is no evidence against it). NaN without a noise estimate."""
    if diff.exact:
        return 0.0 if diff.estimate > null else 1.0
    if isinstance(diff.design, Permutation):  # its own test, at the shift the hypothesis names
        return diff.design.p(null, ">")
    return float(dist.t.sf((diff.estimate - null) / diff.se, diff.df)) if diff.known else math.nan


def below(diff, null=0.0):
    """P(T <= (estimate - null) / SE): the one-sided p-value of H0 "the true difference is null or more" (above's
    mirror, with the same limit for an exact difference)."""
    if diff.exact:
        return 0.0 if diff.estimate < null else 1.0
    if isinstance(diff.design, Permutation):
        return diff.design.p(null, "<")
    return float(dist.t.cdf((diff.estimate - null) / diff.se, diff.df)) if diff.known else math.nan


def over_majority(bits, n, majority, split="test"):
    """An arm's score minus the majority class's on the same n examples of `split`, over the arm's seeds: the
    crossed estimator on each run's correct bits (one hex string per seed) less the majority class's score,
    exact on those examples (as `scores` takes it, b_exact)."""
    return crossed(np.stack([unpack(b, n) for b in bits]).astype(float) - majority, split)


def learned(gains, margin=MARGIN, alpha=ALPHA):
    """Whether the runs a claim rests on learned enough to judge it: some arm's gain over the majority class
    (gains: over_majority of each arm, on the claim's split) is shown above the claim's margin, one-sided at
    alpha / k for k arms (Bonferroni: runs that learned nothing pass for learned at most alpha of the time).

    Why a test: a run that always answers the majority class still scores the majority rate give or take its
    sampling noise, and so does any difference between two such runs; only a gain shown beyond that noise says
    the run learned. Why the margin: where every arm is within a difference worth seeing of the majority class,
    no difference between arms can be one worth seeing about the methods (both sit at the class mix), and
    "on par", "below" or "above" would be read from noise. Why some arm and not each: an arm that falls to the
    majority class while another learned is a finding (LayerNorm far below full, an init that collapses, every
    adapter removed), not an absence of data. Why the claim's split: it is the one the verdict reads, where no
    state or rate was chosen, so a lucky validation point cannot make a run look learned."""
    k = len(gains)
    return any(above(g, margin) < alpha / k for g in gains)


def tost(diff, margin=MARGIN):
    """The p-value of the two one-sided tests of |true difference| >= margin: the larger of
    P(T >= (est + margin) / SE) and P(T <= (est - margin) / SE). Below alpha: equivalent within the margin."""
    return max(above(diff, -margin), below(diff, margin))  # H0: difference <= -margin; H0: >= +margin


def equivalent(diff, margin=MARGIN, alpha=ALPHA_EQUIVALENCE):
    """True when the TOST rejects a difference of margin or more (the 1 - 2 alpha interval lies inside
    +-margin); False also when there is no noise estimate."""
    return diff.testable and tost(diff, margin) < alpha


def directional(diff, claim):
    """The one-sided p-value of the claimed direction: H0 true difference <= 0 for ">" (a above b), >= 0 for
    "<"; small: the direction is shown."""
    return above(diff) if claim == ">" else below(diff)


def detectable(diff, claim=">", level=ALPHA, power=POWER):
    """What this comparison finds with the given power by the test the claim declares, at `level`: for a
    direction (">" or "<", one-sided) the smallest true difference, (t_{1-level} + t_{power}) x SE; for
    equivalence ("==", TOST) the smallest margin it shows when the true difference is nil,
    (t_{1-level} + t_{(1+power)/2}) x SE."""
    if diff.exact:
        return 0.0  # no noise: any difference shows
    if not diff.known:
        return math.nan
    second = power if claim != "==" else (1 + power) / 2
    return float((dist.t.ppf(1 - level, diff.df) + dist.t.ppf(second, diff.df)) * diff.se)


def coverage_note(diff):
    """'; with 3 seeds its 95% intervals cover 93-97% (simulated)' for a crossed difference over a number of
    seeds whose coverage was measured off 95% (COVERAGE), else ''."""
    design = diff.design
    band = COVERAGE.get(design.seeds) if isinstance(design, Crossed) else None
    return f"; with {design.seeds} seeds its 95% intervals cover {band[0]:.0%}–{band[1]:.0%} (simulated)" if band \
        else ""


def simulate(diff, seeds, examples, size, rng):
    """`size` draws of (estimate, SE, df) of the same comparison measured by `seeds` seeds on `examples`
    examples, taking diff's estimate and variance components as the truth: each mean square drawn from its
    scaled chi-square, the estimate from its normal, the SE and df from the estimator's own rule (crossed_variance
    for a crossed design, Welch's for unpaired arms; one run: the examples' variance, normal). What a power
    calculation asks of a design. A permutation test's difference is drawn as its Welch description."""
    design = normal_theory(diff).design
    if isinstance(design, Arms):
        true_variance, _ = design.at(seeds)
        drawn = Arms(*(v * rng.chisquare(seeds - 1, size) / (seeds - 1) for v in (design.a, design.b)))
        variance, df = drawn.at(seeds)
    elif isinstance(design, Crossed) and seeds > 1:
        true_variance, _ = design.at(seeds, examples)
        ms = design.mean_squares(seeds, examples)
        dfs = (seeds - 1, examples - 1, (seeds - 1) * (examples - 1))
        drawn = [m * rng.chisquare(f, size) / f for m, f in zip(ms, dfs)]
        variance, df = crossed_variance(*drawn, seeds, examples)
    elif isinstance(design, Crossed):
        true_variance, _ = design.at(1, examples)
        variance, df = np.full(size, true_variance), np.full(size, math.inf)
    else:
        raise ValueError(f"simulate() needs a Difference with its variance components (crossed, by example or "
                         f"Welch), not one from {diff.how!r}")
    estimate = rng.normal(diff.estimate, math.sqrt(true_variance), size)
    return estimate, np.sqrt(variance), df
