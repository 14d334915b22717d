"""What a larger design would decide (report.power): draws from each comparison's own noise model
(stats.simulate) at the variance the design implies, and the chance of a decisive verdict after Holm."""
import math

import numpy as np
import pytest

from adapterlab.experiments import stats
from adapterlab.report import power


def crossed_difference(rng, mean, seed_sd, seeds=3, examples=400, example_sd=0.1, residual_sd=0.3):
    """A Difference measured on simulated seeds x examples data with known components."""
    d = (mean + rng.normal(0, seed_sd, (seeds, 1)) + rng.normal(0, example_sd, (1, examples))
         + rng.normal(0, residual_sd, (seeds, examples)))
    return stats.crossed(d)


def test_draws_of_a_crossed_design_have_the_variance_its_components_give():
    rng = np.random.default_rng(4)
    diff = crossed_difference(rng, 0.01, 0.02)
    variance, df = diff.design.at(10, 2000)
    # sigma_s^2 / 10 + sigma_e^2 / 2000 + sigma_r^2 / 20000 from the estimated components
    c = diff.design
    assert variance == pytest.approx(c.seed / 10 + c.example / 2000 + c.residual / 20000)
    estimate, se, drawn_df = stats.simulate(diff, 10, 2000, 20000, rng)
    # 20,000 draws: the mean within 3 SE of the truth, the variance within 3% (its sampling error is 1%)
    assert abs(estimate.mean() - diff.estimate) < 3 * math.sqrt(variance / 20000)
    assert estimate.var() == pytest.approx(variance, rel=0.03)
    # the seed component is large here, so truncation is rare and the estimator's variance is about unbiased
    assert (se ** 2).mean() == pytest.approx(variance, rel=0.05) and np.median(drawn_df) == pytest.approx(df, rel=0.3)


def test_without_a_seed_component_the_drawn_variance_errs_on_the_safe_side():
    rng = np.random.default_rng(1)
    diff = crossed_difference(rng, 0.01, 0.0)
    assert diff.design.seed == 0.0  # the 3 seeds spread less than the residual predicts: truncated
    variance, df = diff.design.at(10, 2000)
    estimate, se, _ = stats.simulate(diff, 10, 2000, 20000, rng)
    # half the draws estimate a positive seed component that is not there: about 10% too much variance
    assert estimate.var() == pytest.approx(variance, rel=0.03) and 1.05 < (se ** 2).mean() / variance < 1.2


def test_draws_of_unpaired_arms_and_of_one_run():
    rng = np.random.default_rng(2)
    cost = stats.log_ratio([1400, 1450, 1380], [1000, 990, 1030])
    estimate, se, df = stats.simulate(cost, 5, None, 20000, rng)
    variance = (cost.design.a + cost.design.b) / 5
    assert estimate.var() == pytest.approx(variance, rel=0.03) and (se ** 2).mean() == pytest.approx(variance, rel=0.03)
    one = stats.by_example("ff" * 100, "fe" * 100, 800)  # one run: its examples' variance, over 4x the examples
    estimate, se, df = stats.simulate(one, 1, 3200, 20000, rng)
    assert np.all(se == pytest.approx(one.se / 2)) and np.all(np.isinf(df))
    with pytest.raises(ValueError, match="variance components"):
        stats.simulate(stats.Difference(0.0, 0.01, 3, 3, "by hand"), 5, None, 10, rng)


def test_a_design_decides_a_large_effect_and_rarely_a_claim_with_nothing_to_show():
    rng = np.random.default_rng(3)
    large = stats.verdict(crossed_difference(rng, 0.05, 0.005), ">", "")  # +5 points, shown with 3 seeds
    # +0.8 points with a dominant seed spread: no direction shown and none ruled out; at 10 seeds its interval
    # narrows about 2.6x, still reaching both zero and the margin most of the time
    vague = stats.verdict(crossed_difference(rng, 0.008, 0.03), ">", "")
    assert large.label == "reproduced" and vague.label == "inconclusive"
    rows = [("05", "large", large), ("05", "vague", vague), ("06", "untouched", vague)]
    chances = power.decisive(rows, power.Design("05 at 10 seeds", ("05",), 10), replicates=300)
    assert set(chances) == {"large", "vague"}  # the design re-measures 05's claims only
    assert chances["large"] == 1.0 and chances["vague"] < 0.5
    # a design of costs only re-measures no accuracy claim
    assert power.decisive(rows, power.Design("costs", ("05",), 10, costs_only=True), replicates=10) == {}


def test_findings_name_the_claims_no_design_considered_decides():
    import pandas as pd

    from adapterlab.report import document

    power = pd.DataFrame([dict(design="small", claim="a", today="inconclusive", chance=0.2),
                          dict(design="large", claim="a", today="inconclusive", chance=0.45),
                          dict(design="large", claim="b", today="inconclusive", chance=0.5)])
    lines = document.undecidable(power)
    # "a" stays below 50% under every design (its best chance is named with its design); "b" reaches it
    assert [line for line in lines if line.startswith("- ")] == ["- a: at most 45% (large)"]
    assert document.undecidable(None) == [] and document.undecidable(power.iloc[2:]) == []
    assert document.undecidable(power, decided={"a"}) == []  # decided after all: no longer named
