"""adapterlab.experiments.judge: verdicts of declared claims on differences whose answer is known by hand, Holm's
correction over every conclusion a family of claims can draw, and budget rule 3."""
import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats as dist

from adapterlab.experiments import judge, stats
from adapterlab.report import findings
from adapterlab.training import train


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
    v = judge.verdict(stats.Difference(estimate, se, math.inf, 1000, "by hand"), claim, "paper: 1.0")
    assert v.label == label and v.paper == "paper: 1.0"
    assert ("could detect ≥" in str(v) or "could show equivalence within" in str(v)) == (label == "inconclusive")


def test_verdict_text_carries_the_interval_and_the_papers_number():
    v = judge.verdict(stats.paired([0.80, 0.79, 0.81], [0.83, 0.82, 0.835]), ">", "+2 points (Fig. 4)")
    # -2.8 points on every seed, 95% CI [-3.6, -2.1] (t_{0.975,2} = 4.30 x SE 0.17): below zero
    assert v.label == "reversed"
    assert v.text().startswith("**reversed**: here -2.8 [") and v.text().endswith("paper: +2 points (Fig. 4)")
    # the bound printed is the declared test's (a > b: the lower bound), whatever the verdict
    assert "95% CI; one-sided 95% lower bound -3.3" in v.text() and "paired by seed, df 2" in v.text()
    assert v.hypothesis() == "Δ > 0 (one-sided)"
    with pytest.raises(ValueError, match="unknown claim"):
        judge.verdict(v.diff, "=", "")


def test_a_claim_of_several_comparisons_is_an_intersection_union_test():
    yes = stats.Difference(0.0, 0.002, math.inf, 1, "")  # TOST p = P(Z < -7.5): equivalent
    open_ = stats.Difference(0.0, 0.01, math.inf, 1, "")  # TOST p = P(Z < -1.5) = 0.0668: not shown
    no = stats.Difference(0.05, 0.002, math.inf, 1, "")  # 95% CI [4.6, 5.4] points: beyond the margin
    both = judge.verdict([yes, yes], "==", "p")
    assert both.label == "reproduced" and both.hypothesis() == "each of 2: Δ within ±1.5 points (TOST)"
    mixed = judge.verdict([yes, open_], "==", "p", names=("a", "b"))
    # the claim's p is its worst member's, and that member is the one printed
    assert mixed.label == "inconclusive" and mixed.p == pytest.approx(0.0668072, abs=1e-6)
    assert mixed.diff is open_ and mixed.decided_by == "b" and "deciding: b" in mixed.numbers()
    assert judge.verdict([open_, no, yes], "==", "p").label == "not reproduced"
    # "not reproduced" says some member lies beyond the margin: a union, read at 5% / k (Bonferroni). At k = 1
    # the 95% interval of 1.5 + 2.0 SE [1.6, 5.4] lies beyond 1.5 points; at k = 6 the 99.17% interval
    # (z = 2.64) reaches down to 0.9 and does not
    edge = stats.Difference(0.015 + 2.0 * 0.0095, 0.0095, math.inf, 1, "")
    assert judge.verdict([edge], "==", "").label == "not reproduced"
    assert judge.verdict([edge] + [yes] * 5, "==", "").label == "inconclusive"
    with pytest.raises(ValueError, match="at least one"):
        judge.verdict([], "==", "")


# A case with a known reading: 07's runs at 100 examples under protocol 2 (docs/protocol.md), test accuracy
# per seed 0, 1, 2
AUDIT_CPP, AUDIT_FULL = [0.698, 0.680, 0.728], [0.734, 0.720, 0.746]


def test_the_audits_100_example_comparison_paired_by_seed_is_a_reversal_unpaired_is_not():
    paired = stats.paired(AUDIT_CPP, AUDIT_FULL)
    assert paired.estimate == pytest.approx(-0.03133, abs=1e-5)
    assert 2 * paired.se == pytest.approx(0.0135, abs=1e-4)  # -3.1 +- 1.4 (2 SE)
    unpaired = stats.welch(AUDIT_CPP, AUDIT_FULL)
    assert 2 * unpaired.se == pytest.approx(0.0318, abs=1e-4)  # the +-3.2 the old reading printed
    assert judge.verdict(paired, ">", "").label == "reversed"  # negative on every seed
    # unpaired, the reversal goes unseen: [-8.1, +1.9] points (Welch, df 3.1) holds zero and the margin
    assert judge.verdict(unpaired, ">", "").label == "inconclusive"


# ----------------------------------------------------------------------------- the vocabulary's boundaries

@pytest.mark.parametrize("estimate,paper_value,label", [
    (0.030, 0.030, "reproduced"),           # the paper's +3.0 inside our [+2.0, +4.0]
    (0.030, 0.066, stats.SMALLER),          # +6.6 above the interval: the sign holds, the effect is smaller
    (0.030, 0.012, stats.LARGER),           # +1.2 below it: larger here
    (0.030, None, "reproduced"),            # a paper that states only the direction: a difference worth seeing
])
def test_reproduced_needs_the_papers_magnitude_inside_the_interval(estimate, paper_value, label):
    diff = stats.Difference(estimate, 0.005, math.inf, 1000, "by hand")  # 95% CI [2.0, 4.0] points
    assert judge.verdict(diff, ">", "", paper_value=paper_value).label == label
    # the same on the other side: a claim "a below b" with negative numbers
    neg = stats.Difference(-estimate, 0.005, math.inf, 1000, "by hand")
    assert judge.verdict(neg, "<", "", paper_value=None if paper_value is None else -paper_value).label == label


def test_the_declared_direction_is_tested_one_sided_and_its_opposite_read_two_sided():
    # 1.8 SE above zero: the declared one-sided test at 5% (1.645 SE) shows it
    diff = stats.Difference(0.018, 0.010, math.inf, 1000, "by hand")
    v = judge.verdict(diff, ">", "")
    assert v.label == "reproduced" and v.p == pytest.approx(1 - 0.9641, abs=1e-3)
    assert "one-sided 95% lower bound +0.2" in v.numbers()  # 1.8 - 1.645 = 0.155 points
    # declared the other way, the same data are no reversal: the two-sided 95% interval [-0.2, +3.8] points
    # holds zero (a one-sided bound on the far side would make "reversed" a 10%-level decision)
    against = judge.verdict(diff, "<", "")
    assert against.label == "not reproduced" and against.p == pytest.approx(0.9641, abs=1e-3)
    assert "one-sided 95% upper bound +3.4" in against.numbers()  # its own test's bound, printed as such


def test_a_tiny_effect_of_the_claimed_sign_is_a_smaller_effect_than_a_difference_worth_seeing():
    diff = stats.Difference(0.004, 0.001, math.inf, 1000, "by hand")  # +0.4 [+0.2, +0.6] points
    assert judge.verdict(diff, ">", "").label == stats.SMALLER  # the direction holds, below the 1.5 margin


def test_unconverged_runs_make_a_verdict_hold_at_this_budget():
    diff = stats.Difference(0.03, 0.005, math.inf, 1000, "by hand")
    v = judge.verdict(diff, ">", "", at_budget=True)
    assert v.label == "reproduced" and str(v) == "reproduced at this budget"


# ----------------------------------------------------------------------------- multiplicity

def test_holm_on_a_textbook_example():
    # p = 0.01, 0.04, 0.03, 0.005 (m = 4): sorted 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06,
    # 0.04 x 1 = 0.04 -> 0.06 (monotone); at 5% the first and the fourth survive
    ps = [0.01, 0.04, 0.03, 0.005]
    adjusted, levels = judge.holm_levels(ps)
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # each one's level: it rejects exactly when its own p is below 5% x p / holm_p (0.05 / 3 for the first,
    # 0.05 / 4 for the fourth; 0.05 x 0.04 / 0.06 for the second, held back by the third)
    assert levels == pytest.approx([0.05 / 3, 0.05 * 0.04 / 0.06, 0.025, 0.0125])
    assert judge.holm_levels([0.01, math.nan])[0] == pytest.approx([0.02, math.nan], nan_ok=True)  # NaN counts in m


def test_holm_corrects_every_conclusion_a_claim_can_draw():
    # The same p-values as one-sided tests of normal differences z x SE above zero, z = Phi^-1(1 - p): each
    # claim's family also holds its opposite conclusions, "not reproduced" (p about 1 here: every estimate lies
    # above the margin) and "reversed", which follows it. So m = 8 open hypotheses: 0.005 x 8 = 0.04, 0.01 x 7
    # = 0.07, 0.03 x 6 = 0.18, 0.04 x 5 = 0.20; only the fourth survives at 5%
    made = [judge.verdict(stats.Difference(dist.norm.isf(p) * 0.01, 0.01, math.inf, 1000, ""), ">", "")
            for p in (0.01, 0.04, 0.03, 0.005)]
    assert [v.p for v in made] == pytest.approx([0.01, 0.04, 0.03, 0.005])
    after = judge.holm(made)
    assert [v.holm_p for v in after] == pytest.approx([0.07, 0.20, 0.18, 0.04])
    assert [v.label for v in after] == ["inconclusive", "inconclusive", "inconclusive", "reproduced"]
    assert [v.label for v in made] == ["reproduced"] * 4  # the uncorrected verdicts are kept as they were
    assert after[3].level == pytest.approx(0.05 / 8) and "one-sided 99.4% lower bound" in after[3].decides_text()
    # a claim awaiting its data counts in the family with its hypotheses and keeps its label; a check is none
    waiting = judge.awaiting(">", "", "held-out scoring")
    assert [v.holm_p for v in judge.holm(made + [waiting])][3] == pytest.approx(0.05)
    assert judge.holm([waiting])[0].label == "awaiting held-out scoring"
    with pytest.raises(ValueError, match="exact checks"):
        judge.holm([replace(made[0], check=True)])


def test_reversed_follows_not_reproduced_in_the_family():
    """A difference shown on the other side of zero is read "reversed" only once "not reproduced" is rejected, at
    the level that one was rejected at: it takes no share of the level from the paper's conclusions."""
    far_below = judge.verdict(stats.Difference(-0.05, 0.005, math.inf, 1000, ""), ">", "")  # -5 points, SE 0.5
    nr, rev = judge.opposite_ps(">", far_below.members)
    assert nr < rev < 1e-6
    adjusted, shares = judge.conclusions_adjusted([0.5, nr, rev], {2: 1})
    assert shares[2] == shares[1]  # the follower is tested with the share its leader was rejected with
    assert judge.holm([far_below])[0].label == "reversed"
    near = judge.verdict(stats.Difference(-0.001, 0.005, math.inf, 1000, ""), ">", "")  # below the margin, not 0
    assert judge.holm([near])[0].label == "not reproduced"


def _old_reading(verdicts):
    """Verdict rules 3's correction, kept here to show what it missed: Holm over the claims' own p-values, each
    claim's opposite conclusions read from its two-sided interval at its own Holm level."""
    _, levels = judge.holm_levels([v.p for v in verdicts])
    return [judge._read(v.claim, v.members, level, v.margin, v.paper_value)[0]
            for v, level in zip(verdicts, levels)]


def test_any_false_opposite_conclusion_over_the_family_stays_below_five_percent():
    """28 claims whose opposite conclusions are all false, each at its boundary, so each alone is drawn falsely
    at its test's level: 20 directions whose true difference is the margin itself (not "below the margin", not
    "reversed") and 8 equivalences whose true difference is the margin (not "outside it"); an SE of one margin,
    so the paper's tests seldom reject and the old reading read most opposites near 5%. Under verdict rules 4
    the chance of any false opposite conclusion in the family stays at or below 5% (1.4% in 1,000 replicates);
    the old reading drew one in 41%. 400 replicates here: Monte Carlo SEs of about 0.6 and 2.5 points."""
    rng = np.random.default_rng(0)
    margin, se = stats.MARGIN, stats.MARGIN
    claims = [">"] * 20 + ["=="] * 8
    false_new = false_old = 0
    for _ in range(400):
        made = [judge.verdict(stats.Difference(float(rng.normal(margin, se)), se, math.inf, 1000, ""), c, "")
                for c in claims]
        opposite = ("not reproduced", "reversed")
        false_new += any(v.label in opposite for v in judge.holm(made))
        false_old += any(label in opposite for label in _old_reading(made))
    assert false_new / 400 <= 0.05
    assert false_old / 400 > 0.2


def test_holm_keeps_a_single_claims_verdict_and_counts_its_opposite():
    v = judge.verdict(stats.Difference(0.03, 0.005, math.inf, 1000, ""), ">", "")
    (after,) = judge.holm([v])
    # two open hypotheses, the paper's and "not reproduced" (p 1 here): the paper's p doubles
    assert after.label == v.label and after.holm_p == pytest.approx(2 * v.p)


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
    same = judge.claim_move(n, b1, b2, a1, a2)
    assert abs(same.estimate) < 0.005 and same.n == 3 and "validation" in same.how
    assert judge.budget_verdict(same) == judge.HOLDS
    # one arm unchanged, the other changed on 75 more examples (~5 points): the claim moved
    moved = judge.claim_move(n, b1, [flip(base, (0, 105))] * 3, a1, a1)
    assert abs(moved.estimate) > stats.MARGIN
    assert judge.budget_verdict(moved) == judge.MOVES
    # one family entry: the move is the model's own gain, here none on 1,442 examples but 20 swapped
    alone = judge.claim_move(n, [flip(base)], [flip(base, (600, 620))])
    assert alone.n == n and "validation sampling only" in alone.how
    assert judge.budget_verdict(alone) == judge.HOLDS
    # one seed of a four-run move on few examples: not measurable finely enough either way
    few = judge.claim_move(60, [flip(base[:60])], [flip(base[:60], (0, 6))], [flip(base[:60])], [flip(base[:60])])
    assert judge.budget_verdict(few) == judge.UNDECIDED
    with pytest.raises(ValueError, match="aligned by seed"):
        judge.claim_move(n, b1, b2[:2], a1, a2)


# ----------------------------------------------------------------------------- no noise, not judged

def test_a_difference_without_a_noise_estimate_is_inconclusive():
    same = stats.paired([0.812, 0.832], [0.804, 0.824])  # both seeds +0.8: no spread, not zero noise
    assert str(judge.verdict(same, ">", "")) == "inconclusive (no noise estimate)"


def test_identical_predictions_are_judged_as_the_exact_zero_they_are():
    rng = np.random.default_rng(5)
    n = 500
    runs = [train.correct_bits(rng.uniform(size=n) < 0.7) for _ in range(3)]
    # right and wrong on the same examples at both budgets: the move is 0 on every one, with no sampling noise
    move = judge.claim_move(n, runs, runs, runs, runs)
    assert move.estimate == 0.0 and move.se == 0.0 and move.exact and not move.known
    assert move.ci() == (0.0, 0.0) and stats.IDENTICAL in move.how
    assert findings.ci_text(move) == "+0.0 [+0.0, +0.0] (identical predictions: no sampling noise)"
    assert judge.budget_verdict(move) == judge.HOLDS
    same = stats.two_level(runs, runs, n)
    # every test reads the exact number: inside any margin, not above zero, not below it
    assert judge.verdict(same, "==", "").label == "reproduced"
    assert judge.verdict(same, ">", "").label == "not reproduced"  # exactly 0 is below a difference worth seeing
    assert judge.budget_verdict(same) == judge.HOLDS
    text = judge.verdict(same, "==", "").text()
    assert "nan" not in text and "[+0.0, +0.0]" in text and stats.IDENTICAL in text


def test_a_claim_not_judged_or_not_run_leaves_holms_family():
    strong = judge.verdict(stats.Difference(0.03, 0.012, math.inf, 1000, ""), ">", "")
    idle = judge.verdict(stats.Difference(0.0, 0.001, math.inf, 1000, ""), "==", "", unjudged=stats.NOT_LEARNED)
    assert idle.label == stats.NOT_LEARNED and math.isnan(idle.p) and not idle.judged and str(idle) == idle.label
    alone, = judge.holm([strong])
    with_idle = judge.holm([idle, strong])
    # the untested claim changes nothing for the tested one, and comes back with no p-value
    assert with_idle[1].holm_p == alone.holm_p and with_idle[1].label == alone.label
    assert with_idle[0].label == stats.NOT_LEARNED and math.isnan(with_idle[0].holm_p)
    # one run per arm: the verdict is about those runs
    one = judge.verdict(stats.by_example(train.correct_bits(np.arange(900) < 600),
                                         train.correct_bits(np.arange(900) < 700), 900), ">", "")
    assert str(one) == "reproduced, about these runs (1 seed)"
