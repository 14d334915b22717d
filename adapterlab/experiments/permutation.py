"""A permutation test for two groups of runs that share nothing, and the interval it gives by inversion.

    test = permutation.Permutation(log_cost_a, log_cost_b)
    test.p(0.0, ">")              # one-sided p of "a's mean is above b's"; at least 1 / C(n_a + n_b, n_a)
    test.ci(0.95)                 # the shifts the two-sided test at 5% does not reject

Why a permutation test for costs: a handful of seconds-per-epoch or peak-memory figures per arm are not known to
be normal, and Welch's t on five runs a side prints p-values down to 1e-7 that rest on that normality alone. The
permutation test assumes only that, were the arms alike, every split of the pooled values into groups of n_a
and n_b was as likely to be observed as the one observed. Its p-value is the share of splits whose statistic is
at least the observed one, so it can be no smaller than 1 / C(n_a + n_b, n_a): 1 / 12,870 with 8 and 8 runs,
which is what 16 runs can show and no more.

The statistic: the difference of the groups' means (of log costs, it is the log of the ratio of their geometric
means). The splits: every one of the C(n_a + n_b, n_a) when there are at most EXACT_LIMIT (an exact test),
else DRAWS seeded random splits (Monte Carlo) with p = (1 + count) / (1 + DRAWS): the observed split counted
once, which keeps the test's level (Phipson & Smyth 2010).

The interval inverts the test over shifts: under the shift model (a's values are b's moved by delta), the
one-sided 1 - alpha bound is the delta at which the test of "a - b = delta" stops rejecting at alpha. Chosen
over a bootstrap of the log ratio because the verdicts read a claim's p-value and its interval as one test (a
test rejects at alpha exactly when its interval leaves out the null: judge._read, judge.opposite_ps), which
inversion keeps by construction; a percentile bootstrap of 8 runs a side resamples a handful of values, is
known to cover less than it says, and would disagree with the p-value near the boundary. Inversion is exact
here: moving a's values by delta moves each split's statistic along a straight line in delta, more slowly than
the observed split's (slope 1), so each split starts to count at one shift (Permutation.breakpoints) and a
bound is an order statistic of those shifts.
"""
import itertools
import math

import numpy as np

# Enumerate every split up to this many (C(9 + 9, 9) = 48,620; 8 and 8 runs: 12,870), a few MB of booleans
EXACT_LIMIT = 50_000
# Random splits beyond it. Why 99,999: the p-value's smallest value, 1e-5, lies below every Holm level of the
# study (about 0.05 / 100 hypotheses = 5e-4), and its Monte-Carlo standard error at such a level,
# sqrt(p (1 - p) / DRAWS) = 7e-5, is a seventh of it, so a decision at that level rarely hangs on the draw
DRAWS = 99_999
# Two statistics closer than this (relative to the data's largest magnitude) are a tie: sums taken in different
# orders differ in their last bits, and a tie must count as "at least as extreme"
TIES = 1e-9


def splits(n_a, n_b, seed=0):
    """(membership, exact): a boolean (splits, n_a + n_b) array, True where a pooled value (a's first, then b's)
    falls in the first group of a split, and whether it lists every split (else DRAWS seeded random ones)."""
    n = n_a + n_b
    if math.comb(n, n_a) <= EXACT_LIMIT:
        rows = np.zeros((math.comb(n, n_a), n), dtype=bool)
        for i, members in enumerate(itertools.combinations(range(n), n_a)):
            rows[i, members] = True
        return rows, True
    first = np.argsort(np.random.default_rng(seed).random((DRAWS, n)), axis=1)[:, :n_a]
    rows = np.zeros((DRAWS, n), dtype=bool)
    np.put_along_axis(rows, first, True, axis=1)
    return rows, False


class Permutation:
    """The permutation distribution of mean(a) - mean(b) over splits of the pooled values (module docstring):
    its p-values for any hypothesised shift and the bounds that invert them. `arms`: a normal-theory description
    of the same two groups (stats.Arms) kept for what needs one (power simulations)."""

    def __init__(self, a, b, seed=0, arms=None):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if a.ndim != 1 or b.ndim != 1 or not len(a) or not len(b):
            raise ValueError(f"a permutation test needs two non-empty 1-D groups of values, got shapes {a.shape} "
                             f"and {b.shape}; pass one value per run of each arm")
        self.a, self.b, self.arms = a, b, arms
        members, self.exact = splits(len(a), len(b), seed)
        pooled = np.concatenate([a, b])
        n_a, n_b = len(a), len(b)
        sums = members.astype(float) @ pooled
        self._statistics = sums / n_a - (pooled.sum() - sums) / n_b  # each split's mean difference, no shift
        a_kept = members[:, :n_a].sum(axis=1)  # how many of a's values each split keeps in its first group
        # a's values moved by delta move a split's statistic by delta x slope: +1/n_a for each of a's values in
        # the first group, -1/n_b for each in the second; slope 1 for the observed split (all of a first)
        self._slopes = a_kept / n_a - (n_a - a_kept) / n_b
        self._observed_split = a_kept == n_a
        self.observed = float(a.mean() - b.mean())
        self.count = len(members) + (0 if self.exact else 1)  # the denominator of every p-value
        self._tie = TIES * max(1.0, float(np.abs(pooled).max()))

    @property
    def smallest_p(self):
        """The smallest p-value this test can give: 1 / the splits it counts."""
        return 1 / self.count

    def p(self, shift=0.0, side=">"):
        """The one-sided p-value of "mean(a) - mean(b) = shift" against `side` (">": larger, "<": smaller): the
        share of splits whose statistic, a's values moved by -shift, is at least as far that way as the
        observed one (ties count)."""
        moved = self._statistics - shift * self._slopes
        observed = self.observed - shift
        hits = moved >= observed - self._tie if side == ">" else moved <= observed + self._tie
        return float((hits.sum() + (0 if self.exact else 1)) / self.count)

    def breakpoints(self):
        """The shift at which each split other than the observed one starts to count against ">" (its statistic
        reaches the observed one's): the p-value against ">" at shift delta is (the observed split's count +
        the breakpoints at or below delta) / count; against "<", those at or above delta."""
        free = ~self._observed_split
        return (self.observed - self._statistics[free]) / (1 - self._slopes[free])

    def bound(self, alpha, side):
        """The one-sided 1 - alpha confidence bound on mean(a) - mean(b) by inverting the test: side ">" the
        lower bound (the smallest shift the test against ">" does not reject at alpha), "<" the upper bound;
        -inf / +inf when no shift can be rejected at alpha (alpha below the smallest p-value)."""
        always = int(self._observed_split.sum()) + (0 if self.exact else 1)  # counted at every shift
        # breakpoints a rejected shift may have passed (alpha x count within float noise of a whole number is it)
        allowed = math.floor(alpha * self.count + 1e-6) - always
        if allowed < 0:
            return -math.inf if side == ">" else math.inf
        ordered = np.sort(self.breakpoints())
        if allowed >= len(ordered):
            return math.inf if side == ">" else -math.inf
        return float(ordered[allowed] if side == ">" else ordered[::-1][allowed])

    def ci(self, level):
        """The two-sided `level` interval: the shifts neither one-sided test at (1 - level) / 2 rejects."""
        alpha = (1 - level) / 2
        return self.bound(alpha, ">"), self.bound(alpha, "<")

    def how(self):
        """'exact: 12,870 splits' or 'Monte Carlo: 99,999 random splits of 184,756'."""
        total = math.comb(len(self.a) + len(self.b), len(self.a))
        return f"exact: {total:,} splits" if self.exact else f"Monte Carlo: {DRAWS:,} random splits of {total:,}"
