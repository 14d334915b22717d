"""The permutation test of two independent groups (experiments/permutation.py) and the cost verdicts it gives
(stats.permuted_log_ratio): textbook cases, scipy's exact test, the interval that inverts it, Holm."""
import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats as scipy_stats

from adapterlab.experiments import judge, permutation, stats
from adapterlab.experiments.permutation import Permutation
from adapterlab.report import power

MARGIN = math.log1p(judge.COST_MARGIN)


def mean_difference(x, y, axis):
    return x.mean(axis=axis) - y.mean(axis=axis)


def scipy_p(a, b, side):
    alternative = {">": "greater", "<": "less"}[side]
    return scipy_stats.permutation_test((a, b), mean_difference, permutation_type="independent",
                                        alternative=alternative, n_resamples=np.inf, vectorized=True).pvalue


def test_complete_separation_of_8_and_8_gives_one_split_in_12870():
    test = Permutation(np.arange(8) + 10.0, np.arange(8.0))
    assert test.exact and test.count == math.comb(16, 8) == 12870
    assert test.p(0.0, ">") == 1 / 12870 == test.smallest_p  # only the observed split is as extreme
    assert test.p(0.0, "<") == 1.0  # every split is at most as large as the observed one


def test_identical_groups_give_p_one_and_equal_groups_at_least_a_half():
    same = Permutation(np.full(8, 3.0), np.full(8, 3.0))
    assert same.p(0.0, ">") == same.p(0.0, "<") == 1.0  # every split ties with the observed one
    values = np.log([900.0, 1000, 1100, 1200, 1300, 1400, 1500, 1600])
    mirrored = Permutation(values, values)
    # splits come in mirror pairs (T and -T), so "at least 0" holds for half of them plus the ties at 0
    assert 0.5 < mirrored.p(0.0, ">") == mirrored.p(0.0, "<") < 1.0


@pytest.mark.parametrize("a, b", [
    (np.random.default_rng(1).normal(0.3, 1, 6), np.random.default_rng(2).normal(0, 1, 5)),
    (np.array([3.0, 1, 4, 1, 5]), np.array([2.0, 6, 5, 3, 5, 8])),  # integers with ties
    (np.log([1400.0, 1450, 1380, 1500]), np.log([1000.0, 990, 1030, 1010])),  # log costs, complete separation
])
def test_p_values_equal_scipys_exact_permutation_test(a, b):
    test = Permutation(a, b)
    for side in (">", "<"):
        assert test.p(0.0, side) == scipy_p(a, b, side)  # the same count over the same splits: exactly equal


def test_beyond_the_exact_limit_the_splits_are_drawn_seeded_and_agree_with_the_exact_test(monkeypatch):
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.8, 1, 10), rng.normal(0, 1, 10)  # C(20, 10) = 184,756 splits: more than EXACT_LIMIT
    drawn = Permutation(a, b)
    assert not drawn.exact and drawn.count == permutation.DRAWS + 1
    assert drawn.p(0.0, ">") == Permutation(a, b).p(0.0, ">")  # seeded: the same draws every time
    separated = Permutation(np.arange(10) + 20.0, np.arange(10.0))
    assert separated.p(0.0, ">") == 1 / (permutation.DRAWS + 1)  # the observed split counted once
    monkeypatch.setattr(permutation, "EXACT_LIMIT", 200_000)
    exact = Permutation(a, b)
    assert exact.exact
    p = exact.p(0.0, ">")
    # the Monte-Carlo p is a share of DRAWS draws: within 4 of its standard errors of the exact one
    assert abs(drawn.p(0.0, ">") - p) < 4 * math.sqrt(p * (1 - p) / permutation.DRAWS) + 1 / permutation.DRAWS


def test_the_interval_inverts_the_test():
    rng = np.random.default_rng(4)
    test = Permutation(rng.normal(0.5, 1, 7), rng.normal(0, 1, 6))
    for alpha in (0.005, 0.025, 0.05, 0.2):
        low, high = test.bound(alpha, ">"), test.bound(alpha, "<")
        assert low < test.observed < high
        # the bound is the first shift the one-sided test does not reject: just below it, it rejects
        assert test.p(low, ">") > alpha >= test.p(low - 1e-6, ">")
        assert test.p(high, "<") > alpha >= test.p(high + 1e-6, "<")
        assert (test.p(0.0, ">") <= alpha) == (low > 0)  # the test and its interval agree at zero
    assert test.ci(0.95) == (test.bound(0.025, ">"), test.bound(0.025, "<"))
    # below the smallest p-value no shift can be rejected: the bound is open
    assert test.bound(test.smallest_p / 2, ">") == -math.inf and test.bound(test.smallest_p / 2, "<") == math.inf


def test_a_shifted_group_is_covered_by_its_interval_as_often_as_promised():
    rng = np.random.default_rng(5)
    shift, trials, level = 0.3, 300, 0.9
    covered = 0
    for _ in range(trials):
        test = Permutation(rng.lognormal(0, 0.2, 5) + shift, rng.lognormal(0, 0.2, 5))
        low, high = test.ci(level)
        covered += low <= shift <= high
    # the inverted test covers at least its level (exact under the shift model); 300 trials: SE 1.7 points
    assert covered / trials > level - 3 * math.sqrt(level * (1 - level) / trials)


def cost_verdict(a, b, paper_value=None):
    diff = stats.permuted_log_ratio(a, b, "permutation test, timing runs")
    return judge.verdict([diff], ">", "more memory than full fine-tuning", MARGIN, "%", paper_value, log_ratio=True)


def test_a_cost_verdict_reads_the_permutation_test_and_holm_covers_it():
    more = [2050.0, 2100, 2080, 2120, 2060, 2090, 2110, 2070]
    full = [1000.0, 1010, 990, 1005, 995, 1002, 998, 1008]
    v = cost_verdict(more, full, paper_value=math.log1p(0.41))
    assert v.p == 1 / 12870  # not Welch's, which would print a p-value of about 1e-20 here
    assert v.label == stats.LARGER  # about +100% against the paper's +41%
    assert v.size() == "8 and 8 runs" and v.estimator() == "permutation test, timing runs"  # no t's df
    low, high = v.diff.ci()
    assert low < v.diff.estimate < high and (low, high) == v.diff.design.ci(stats.LEVEL)
    assert v.deciding(stats.ALPHA)[0] == v.diff.design.bound(stats.ALPHA, ">")
    nr, reversed_ = judge.opposite_ps(">", v.members, MARGIN)
    # both opposite conclusions are tested against "<", where every split counts: p 1 (capped from 2 x 1)
    assert v.diff.design.p(MARGIN, "<") == v.diff.design.p(0.0, "<") == 1.0 and nr == reversed_ == 1.0
    # Holm's family: the claim and its "not reproduced" share the level ("reversed" follows), so the claim's
    # adjusted p is twice its p, which 8 and 8 runs still put below 5% after a hundred such claims
    [after] = judge.holm([v])
    assert after.holm_p == 2 / 12870 and after.label == stats.LARGER
    ps = [v.p, nr, reversed_]
    assert judge.conclusions_adjusted(ps, {2: 1})[0][0] == after.holm_p


def test_a_cost_difference_inside_the_margin_reads_not_reproduced_from_the_permutation_test():
    rng = np.random.default_rng(6)
    v = cost_verdict(1000 * np.exp(rng.normal(0, 0.002, 8)), 1000 * np.exp(rng.normal(0, 0.002, 8)))  # no difference
    assert v.p > stats.ALPHA and v.label == "not reproduced"  # the interval lies below the 5% margin
    nr, _ = judge.opposite_ps(">", v.members, MARGIN)
    assert nr < stats.ALPHA


def test_a_power_simulation_redraws_a_permutation_difference_by_normal_theory():
    v = cost_verdict([1400.0, 1450, 1380, 1500], [1000.0, 990, 1030, 1010])
    rng = np.random.default_rng(0)
    estimate, se, df = stats.simulate(v.diff, 8, None, 5, rng)
    assert len(estimate) == 5 and np.all(se > 0)
    # each replicate's p-value comes from its draw by normal theory, not from the stored runs' permutations
    declared, *_ = power._drawn_ps(v, [(estimate, se, df)])
    drawn = replace(stats.normal_theory(v.diff), estimate=float(estimate[0]), se=float(se[0]), df=float(df[0]))
    assert not isinstance(drawn.design, Permutation)
    assert declared[0] == pytest.approx(stats.directional(drawn, ">"), rel=1e-9)  # the same t tail, two paths
