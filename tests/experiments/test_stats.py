"""adapterlab.experiments.stats on textbook cases with known answers, and on the committed default tables."""
import math

import numpy as np
import pytest

from adapterlab.experiments import stats
from adapterlab.report import findings
from adapterlab.training import train

# Student (1908) / Cushny & Peebles: extra hours of sleep of 10 patients under two drugs (R's `sleep`)
DRUG_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
DRUG_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


def test_paired_t_interval_of_students_sleep_data():
    d = stats.paired(DRUG_2, DRUG_1)
    assert d.estimate == pytest.approx(1.58)
    assert d.se == pytest.approx(1.2299955 / math.sqrt(10))  # sd of the 10 differences
    assert d.df == 9
    # R: t.test(extra ~ group, data = sleep, paired = TRUE): t = 4.0621, 95% CI 0.7001142 to 2.4598858
    assert d.estimate / d.se == pytest.approx(4.0621, abs=1e-4)
    assert d.ci() == pytest.approx((0.7001142, 2.4598858), abs=1e-6)


def test_welch_interval_of_the_same_data_unpaired():
    d = stats.welch(DRUG_2, DRUG_1)
    # R: t.test(extra ~ group, data = sleep): t = 1.8608 (sign by order), df = 17.776, CI -0.2054832 to 3.3654832
    assert d.df == pytest.approx(17.776, abs=1e-3)
    assert d.estimate / d.se == pytest.approx(1.8608, abs=1e-4)
    assert d.ci() == pytest.approx((-0.2054832, 3.3654832), abs=1e-6)
    assert stats.paired(DRUG_2, DRUG_1).se < d.se  # the patients' own noise cancels only when paired


def test_against_an_exact_value_is_the_one_sample_interval():
    d = stats.welch(DRUG_2, 0.0)
    assert d.estimate == pytest.approx(2.33) and d.df == 9
    assert d.se == pytest.approx(np.std(DRUG_2, ddof=1) / math.sqrt(10))


def test_no_noise_estimate_from_one_pair_or_from_identical_differences():
    assert not stats.paired([0.8], [0.7]).known
    same = stats.paired([0.812, 0.832], [0.804, 0.824])  # both seeds +0.8: no spread, not zero noise
    assert same.estimate == pytest.approx(0.008) and not same.known
    assert str(stats.verdict(same, ">", "")) == "inconclusive (no noise estimate)"
    with pytest.raises(ValueError, match="align them by seed"):
        stats.paired([0.8, 0.7], [0.7])


def test_tost_p_value_by_hand_and_at_the_boundary():
    # normal case worked by hand: estimate 0.3, SE 0.5 points, margin 1.5: z = (0.3 - 1.5) / 0.5 = -2.4 and
    # (0.3 + 1.5) / 0.5 = 3.6; p = max(Phi(-2.4), 1 - Phi(3.6)) = Phi(-2.4) = 0.0082 (normal table)
    d = stats.Difference(0.003, 0.005, math.inf, 1000, "by hand")
    assert stats.tost(d) == pytest.approx(0.0082, abs=5e-5)
    assert stats.equivalent(d)
    # the 90% interval touching the margin is exactly the 5% boundary of the TOST
    t95 = 2.919986  # t_{0.95, 2}
    edge = stats.Difference(0.015 - t95 * 0.004, 0.004, 2, 3, "by hand")
    assert stats.tost(edge) == pytest.approx(0.05, abs=1e-6)
    assert edge.ci(0.90)[1] == pytest.approx(0.015)
    wide = stats.Difference(0.0, 0.01, 2, 3, "by hand")  # centred on zero, but 90% CI +-2.9 points
    assert not stats.equivalent(wide) and stats.tost(wide) > 0.05


def test_detectable_difference_is_the_power_formula():
    # normal: (z_0.975 + z_0.80) x SE = (1.95996 + 0.84162) x SE, the classic "2.8 SE"
    assert stats.detectable(stats.Difference(0.0, 0.01, math.inf, 1000, "")) == pytest.approx(0.0280158, abs=1e-6)
    # three seeds: (t_{0.975,2} + t_{0.80,2}) x SE = (4.302653 + 1.060660) x SE
    assert stats.detectable(stats.Difference(0.0, 0.01, 2, 3, "")) == pytest.approx(0.0536331, abs=1e-6)


@pytest.mark.parametrize("estimate,se,claim,label", [
    (0.03, 0.005, ">", "reproduced"),  # 95% CI (2.0, 4.0) points: above zero
    (-0.03, 0.005, ">", "reversed"),
    (0.002, 0.004, ">", "not reproduced"),  # one-sided 95% bound 0.2 + 1.645 x 0.4 = 0.86 < 1.5 points
    (0.01, 0.02, ">", "inconclusive"),
    (-0.03, 0.005, "<", "reproduced"),
    (0.002, 0.004, "==", "reproduced"),  # 90% CI (-0.46, 0.86) inside +-1.5
    (0.04, 0.005, "==", "not reproduced"),  # 95% CI (3.0, 5.0): beyond the margin
    (0.01, 0.004, "==", "inconclusive"),  # 90% CI (0.34, 1.66) crosses the margin
])
def test_verdicts(estimate, se, claim, label):
    v = stats.verdict(stats.Difference(estimate, se, math.inf, 1000, "by hand"), claim, "paper: 1.0")
    assert v.label == label and v.paper == "paper: 1.0"
    assert ("could detect ≥" in str(v)) == (label == "inconclusive")


def test_verdict_text_carries_the_interval_and_the_papers_number():
    v = stats.verdict(stats.paired([0.80, 0.79, 0.81], [0.83, 0.82, 0.835]), ">", "+2 points (Fig. 4)")
    assert v.label == "reversed"
    assert v.text().startswith("**reversed**: here -2.8 [") and v.text().endswith("paper: +2 points (Fig. 4)")
    assert "95% CI; one-sided 95% upper bound" in v.text() and "paired by seed, n=3" in v.text()
    with pytest.raises(ValueError, match="unknown claim"):
        stats.verdict(v.diff, "=", "")


def test_all_of_needs_every_part():
    yes = stats.verdict(stats.Difference(0.0, 0.002, math.inf, 1, ""), "==", "")
    open_ = stats.verdict(stats.Difference(0.0, 0.02, math.inf, 1, ""), "==", "")
    no = stats.verdict(stats.Difference(0.05, 0.002, math.inf, 1, ""), "==", "")
    assert stats.all_of([yes, yes], "p").label == "reproduced"
    assert stats.all_of([yes, open_], "p").label == "inconclusive"
    assert stats.all_of([open_, no, yes], "p").label == "not reproduced"
    assert stats.all_of([yes], "the paper").paper == "the paper"


def test_anova_by_hand():
    # means 2 and 5, grand 3.5: between SS 13.5 (df 1), within SS 4 (df 4): F = 13.5 / 1 = 13.5
    f, p = stats.anova([[1, 2, 3], [4, 5, 6]])
    assert f == pytest.approx(13.5) and p == pytest.approx(0.02131, abs=1e-4)
    with pytest.raises(ValueError, match="several seeds"):
        stats.anova([[1], [2]])


def test_paired_difference_counts_only_the_examples_two_classifiers_disagree_on():
    a, b = [1, 1, 0, 0, 1, 0, 1, 1, 1], [1, 0, 1, 1, 1, 0, 1, 1, 1]  # 9 examples: not a whole byte
    d, se = stats.paired_difference(train.correct_bits(a), train.correct_bits(b), len(a))
    assert d == pytest.approx(np.mean(b) - np.mean(a))  # 8/9 - 6/9
    diffs = np.array(b) - np.array(a)  # +1 twice, -1 once: the standard error of their mean
    assert se == pytest.approx(diffs.std(ddof=1) / np.sqrt(len(a)))
    assert stats.paired_difference(train.correct_bits(a), train.correct_bits(a), len(a)) == (0.0, 0.0)


# ----------------------------------------------------------------------------- on the committed tables

def committed(family):
    df = findings.load("default", family)
    if df is None:
        pytest.skip("no committed default results")
    return df


# A case with a known reading: 07's runs at 100 examples under protocol 2 (docs/protocol.md), test accuracy
# per seed 0, 1, 2
AUDIT_CPP, AUDIT_FULL = [0.698, 0.680, 0.728], [0.734, 0.720, 0.746]


def test_the_audits_100_example_comparison_paired_by_seed_is_a_reversal_unpaired_is_not():
    paired = stats.paired(AUDIT_CPP, AUDIT_FULL)
    assert paired.estimate == pytest.approx(-0.03133, abs=1e-5)
    assert 2 * paired.se == pytest.approx(0.0135, abs=1e-4)  # -3.1 +- 1.4 (2 SE)
    unpaired = stats.welch(AUDIT_CPP, AUDIT_FULL)
    assert 2 * unpaired.se == pytest.approx(0.0318, abs=1e-4)  # the +-3.2 the old reading printed
    assert stats.verdict(paired, ">", "").label == "reversed"  # negative on every seed
    assert stats.verdict(unpaired, ">", "").label == "not reproduced"  # unpaired, the reversal goes unseen


def test_the_committed_low_resource_claims_carry_seeds_and_test_examples():
    df = committed("low_resource")
    claims = findings.claims("low_resource", df)
    assert claims, "the committed 07 table gives no Compacter++-against-full claim"
    for title, verdict in claims:
        size = int(title.split(" at ")[1].split()[0].replace(",", ""))
        g = df[df["train_size"] == size]
        by = {m: g[g["method"] == m].set_index("seed").sort_index() for m in ("compacter++", "full")}
        expected = stats.two_level(list(by["full"]["test_correct"]), list(by["compacter++"]["test_correct"]),
                                   int(g["test_examples"].iloc[0]))
        assert verdict.diff == expected and verdict.diff.how.startswith("seeds and test examples")
        # the seed means' difference is the same number the scores give
        seed_diff = (by["compacter++"]["value"] - by["full"]["value"]).mean()
        assert verdict.diff.estimate == pytest.approx(seed_diff, abs=1e-12)
        # both sources of noise: wider than the test sampling alone
        assert verdict.diff.se > stats.by_example(by["full"]["test_correct"].iloc[0],
                                                  by["compacter++"]["test_correct"].iloc[0], 1443).se / 3 ** 0.5


def test_the_committed_param_performance_anova_is_the_one_the_reading_prints():
    df = committed("param_performance")
    f, p = stats.anova([g["value"] for _, g in df.groupby("label", sort=False)])
    text = "\n".join(findings.param_performance(df))
    assert f"F = {f:.2f}, p = {p:.2f}" in text


def test_a_gain_is_small_only_when_its_upper_bound_is_below_the_margin():
    assert stats.gain_below_margin(0.0, 0.006)  # 0 + 1.645 x 0.6 = 1.0 < 1.5 points
    assert not stats.gain_below_margin(0.012, 0.006)  # 1.2 + 1.0 = 2.2
    assert not stats.gain_below_margin(0.0, float("nan")) and not stats.gain_below_margin(None, None)  # unmeasured


def test_a_paired_by_example_difference():
    a, b = [1] * 80 + [0] * 20, [1] * 78 + [0] * 2 + [1] * 4 + [0] * 16  # b: 2 lost, 4 gained of 100
    d = stats.by_example(train.correct_bits(a), train.correct_bits(b), 100)
    assert d.estimate == pytest.approx(0.02) and d.se == stats.paired_difference(
        train.correct_bits(a), train.correct_bits(b), 100)[1] and d.how == "paired by example on 100"


# ----------------------------------------------------------------------------- both sources of noise

def _simulated_bits(rng, seeds, n, p_a, p_b, seed_sd):
    """Correct bits of two methods over seeds on the same n examples: each example has its own difficulty
    (shared by both methods, so the pairing by example matters), each seed shifts a method's accuracy."""
    from adapterlab.training import train
    difficulty = rng.uniform(0, 1, n)
    a, b = [], []
    for _ in range(seeds):
        shift_a, shift_b = rng.normal(0, seed_sd, 2)
        a.append(train.correct_bits(difficulty < p_a + shift_a))
        b.append(train.correct_bits(difficulty < p_b + shift_b))
    return a, b


def test_two_level_is_the_variance_sum_of_seeds_and_examples():
    from adapterlab.training import train
    a = [train.correct_bits(x) for x in ([1, 1, 0, 0, 1, 0], [1, 0, 0, 1, 1, 0], [0, 1, 1, 0, 1, 1])]
    b = [train.correct_bits(x) for x in ([1, 1, 1, 0, 1, 1], [1, 1, 0, 1, 1, 1], [1, 1, 1, 0, 1, 1])]
    d = np.array([[0, 0, 1, 0, 0, 1], [0, 1, 0, 0, 0, 1], [1, 0, 0, 0, 0, 0]])  # b - a, by hand
    diff = stats.two_level(a, b, 6)
    per_seed, per_example = d.mean(axis=1), d.mean(axis=0)
    expected = np.sqrt(per_seed.var(ddof=1) / 3 + per_example.var(ddof=1) / 6)
    assert diff.estimate == pytest.approx(d.mean()) and diff.se == pytest.approx(expected)
    assert 2 <= diff.df <= 3 + 5  # Welch-Satterthwaite lies between the two parts' degrees of freedom
    one = stats.two_level(a[:1], b[:1], 6)
    assert "test sampling only" in one.how and one.se == pytest.approx(d[0].std(ddof=1) / np.sqrt(6))
    with pytest.raises(ValueError, match="aligned by seed"):
        stats.two_level(a, b[:2], 6)


def test_the_two_level_bootstrap_agrees_with_the_closed_form_on_a_simulated_case():
    # 40 seeds x 800 examples: enough seeds that resampling them estimates their spread well. The two 95%
    # intervals must agree to a tenth of their width (the bootstrap's own Monte Carlo error with 2,000
    # replicates is a few percent of it)
    rng = np.random.default_rng(7)
    a, b = _simulated_bits(rng, seeds=40, n=800, p_a=0.78, p_b=0.81, seed_sd=0.01)
    closed = stats.two_level(a, b, 800)
    low, high = closed.ci(0.95)
    b_low, b_high = stats.bootstrap_two_level(a, b, 800, replicates=2000)
    width = high - low
    assert abs(b_low - low) < 0.1 * width and abs(b_high - high) < 0.1 * width
    # and the seed term matters: the example term alone is narrower
    examples_only = stats.by_example(a[0], b[0], 800).se
    assert closed.se > examples_only / np.sqrt(40)


# ----------------------------------------------------------------------------- the vocabulary's boundaries

@pytest.mark.parametrize("estimate,paper_value,label", [
    (0.030, 0.030, "reproduced"),           # the paper's +3.0 inside our [+2.0, +4.0]
    (0.030, 0.066, stats.SMALLER),          # +6.6 above the interval: the sign holds, the effect is smaller
    (0.030, 0.012, stats.LARGER),           # +1.2 below it: larger here
    (0.030, None, "reproduced"),            # a paper that states only the direction
])
def test_reproduced_needs_the_papers_magnitude_inside_the_interval(estimate, paper_value, label):
    diff = stats.Difference(estimate, 0.005, math.inf, 1000, "by hand")  # 95% CI [2.0, 4.0] points
    assert stats.verdict(diff, ">", "", paper_value=paper_value).label == label
    # the same on the other side: a claim "a below b" with negative numbers
    neg = stats.Difference(-estimate, 0.005, math.inf, 1000, "by hand")
    assert stats.verdict(neg, "<", "", paper_value=None if paper_value is None else -paper_value).label == label


def test_the_direction_is_decided_by_the_one_sided_bound_and_printed():
    # 1.8 SE above zero: the one-sided 95% bound (1.645 SE) shows it, a two-sided 95% interval would not
    diff = stats.Difference(0.018, 0.010, math.inf, 1000, "by hand")
    v = stats.verdict(diff, ">", "")
    assert v.label == "reproduced" and v.p == pytest.approx(1 - 0.9641, abs=1e-3)
    assert "one-sided 95% lower bound +0.2" in v.numbers()  # 1.8 - 1.645 = 0.155 points
    assert stats.verdict(diff, "<", "").label == "reversed"


def test_a_tiny_effect_of_the_claimed_sign_is_not_a_difference_worth_seeing():
    diff = stats.Difference(0.004, 0.001, math.inf, 1000, "by hand")  # +0.4 points, shown below 1.5
    assert stats.verdict(diff, ">", "").label == "not reproduced"


def test_unconverged_runs_make_a_verdict_hold_at_this_budget():
    diff = stats.Difference(0.03, 0.005, math.inf, 1000, "by hand")
    v = stats.verdict(diff, ">", "", at_budget=True)
    assert v.label == "reproduced" and str(v) == "reproduced at this budget"


# ----------------------------------------------------------------------------- multiplicity

def test_holm_on_a_textbook_example():
    # p = 0.01, 0.04, 0.03, 0.005 (m = 4): sorted 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06,
    # 0.04 x 1 = 0.04 -> 0.06 (monotone); at 5% the first and the fourth survive
    made = [stats.Verdict(">", "reproduced", "", stats.Difference(0.03, 0.01, math.inf, 1, ""), p=p)
            for p in (0.01, 0.04, 0.03, 0.005)]
    after = stats.holm(made)
    assert [v.holm_p for v in after] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert [v.label for v in after] == ["reproduced", "inconclusive", "inconclusive", "reproduced"]
    assert [v.label for v in made] == ["reproduced"] * 4  # the uncorrected verdicts are kept as they were


def test_holm_keeps_a_single_claim_as_it_is():
    v = stats.verdict(stats.Difference(0.03, 0.005, math.inf, 1000, ""), ">", "")
    (after,) = stats.holm([v])
    assert after.label == v.label and after.holm_p == pytest.approx(v.p)


# ----------------------------------------------------------------------------- budget rule 3

def test_budget_rule_3_asks_whether_the_claim_survives_twice_the_steps():
    from adapterlab.training import train
    rng = np.random.default_rng(3)
    n = 1442
    base = rng.uniform(size=n) < 0.8

    def flip(bits, *spans):  # the same model, changed on the examples of each span lo..hi-1
        for lo, hi in spans:
            bits = np.where((np.arange(len(bits)) >= lo) & (np.arange(len(bits)) < hi), ~bits, bits)
        return train.correct_bits(bits)

    # three seeds; at 2x both arms changed on the same 200 examples, and each on 20 of its own: the claim's
    # difference (b - a, 30 examples) barely moved
    a1, b1 = [flip(base)] * 3, [flip(base, (0, 30))] * 3
    a2, b2 = [flip(base, (100, 300), (600, 620))] * 3, [flip(base, (0, 30), (100, 300), (700, 720))] * 3
    same = stats.claim_move(n, b1, b2, a1, a2)
    assert abs(same.estimate) < 0.005 and same.n == 3 and "validation" in same.how
    assert stats.budget_verdict(same) == stats.HOLDS
    # one arm unchanged, the other changed on 75 more examples (~5 points): the claim moved
    moved = stats.claim_move(n, b1, [flip(base, (0, 105))] * 3, a1, a1)
    assert abs(moved.estimate) > stats.MARGIN
    assert stats.budget_verdict(moved) == stats.MOVES
    # one family entry: the move is the model's own gain, here none on 1,442 examples but 20 swapped
    alone = stats.claim_move(n, [flip(base)], [flip(base, (600, 620))])
    assert alone.n == n and "validation sampling only" in alone.how
    assert stats.budget_verdict(alone) == stats.HOLDS
    # one seed of a four-run move on few examples: not measurable finely enough either way
    few = stats.claim_move(60, [flip(base[:60])], [flip(base[:60], (0, 6))], [flip(base[:60])], [flip(base[:60])])
    assert stats.budget_verdict(few) == stats.UNDECIDED
    with pytest.raises(ValueError, match="aligned by seed"):
        stats.claim_move(n, b1, b2[:2], a1, a2)
