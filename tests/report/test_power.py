"""What would decide the claims still undecided (report.power): draws from each comparison's own noise model
(stats.simulate) at the variance a design implies, Holm's correction over every replicate, the smallest design
of the ladder, and the edit that decides the most claims per hour, all computed from the judged claims."""
import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats as dist

from adapterlab.experiments import families, judge, profiles, stats
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


def seed_only_claim(delta, seed_sd, seeds=3, examples=1000, claim=">"):
    """A verdict on a difference whose only noise is the seeds' (known components: sigma_s, no example or
    residual variance), measured with `seeds` seeds: its crossed estimator is then exactly a one-sample t test
    with seeds - 1 df. Margin 0, so that "not reproduced" is shown only on the other side of zero."""
    c = stats.Crossed(seed_sd ** 2, 0.0, 0.0, seeds, examples)
    variance, df = c.at(seeds, examples)
    diff = stats.Difference(delta, math.sqrt(variance), df, seeds, "synthetic, crossed", c)
    return judge.verdict(diff, claim, "the paper's claim", margin=0.0)


def exact_chance(delta, seed_sd, seeds):
    """P(decisive after Holm) of seed_only_claim alone in its family, in closed form. Holm's first step tests the
    declared one-sided test and "not reproduced" at alpha/2 each ("reversed" follows the latter) and stops when
    neither rejects, so the claim is decisive exactly when T = estimate / SE lies above t_{1-alpha/2} (declared:
    one-sided p < alpha/2) or below t_{alpha/4} (not reproduced, margin 0: two-sided p < alpha/2), two disjoint
    regions. T is noncentral t with seeds - 1 df and noncentrality delta / (sigma_s / sqrt(seeds)): the normal
    estimate over the chi-square SE, as stats.simulate draws them."""
    df, nc, alpha = seeds - 1, delta / (seed_sd / math.sqrt(seeds)), stats.ALPHA
    return (dist.nct.sf(dist.t.ppf(1 - alpha / 2, df), df, nc) + dist.nct.cdf(dist.t.ppf(alpha / 4, df), df, nc))


def test_the_simulated_chance_is_the_closed_form_power_and_the_ladder_takes_the_smallest_that_reaches_80():
    delta, seed_sd = 0.018, 0.02
    rows = [("05", "claim", seed_only_claim(delta, seed_sd))]
    assert [v.label for v in judge.holm([rows[0][2]])] == ["inconclusive"]  # undecided with 3 seeds
    designs = [power.Design("05", s, hours=s / 10) for s in power.SEEDS if s > 3]
    found = power.by_design(rows, designs)
    exact = {d.seeds: 100 * exact_chance(delta, seed_sd, d.seeds) for d in designs}
    for d in designs:
        # each replicate is a Bernoulli trial: the count's SE is sqrt(P(1 - P) / R); 3 SE, and half a point for
        # printing it as a whole percentage
        tolerance = 300 * math.sqrt(exact[d.seeds] / 100 * (1 - exact[d.seeds] / 100) / power.REPLICATES) + 0.5
        assert abs(found[d]["claim"] - exact[d.seeds]) <= tolerance, (d.seeds, found[d]["claim"], exact[d.seeds])
    # the exact chances sit well apart from the target (more than 5 binomial SE), so the choice is the closed form's
    assert all(abs(p - power.TARGET) > 5 for p in exact.values()), exact
    smallest = min(s for s, p in exact.items() if p >= power.TARGET)
    (need,) = power.needs(rows, found)
    assert need.design.seeds == smallest == 15 and need.chance >= power.TARGET


def test_the_vectorised_procedure_rejects_what_judge_conclusions_adjusted_does():
    rng = np.random.default_rng(5)
    ps = rng.uniform(0, 0.03, (400, 9)) ** rng.uniform(0.5, 2, 9)  # many near alpha / k, some far below
    ps[rng.uniform(size=ps.shape) < 0.1] = math.nan  # hypotheses without a test count in the family
    follows = {6: 3, 7: 4, 8: 5}  # as judge.holm: "reversed" follows "not reproduced"
    out = power.rejected(ps, follows)
    expected = np.array([[a < stats.ALPHA for a in judge.conclusions_adjusted(list(row), follows)[0]] for row in ps])
    assert (out == expected).all() and 0 < out.sum() < out.size  # some rejected, not all


def mixed_family(rng):
    """Rows of claims of every kind: directions and equivalences, one member and several, crossed and Welch's,
    one a decided claim, one awaiting its data, spread over two notebooks."""
    def crossed_claim(mean, claim, members=1):
        diffs = [crossed_difference(rng, mean + rng.normal(0, 0.002), 0.004, seeds=5, examples=1500)
                 for _ in range(members)]
        return judge.verdict(diffs, claim, "")

    cost = judge.verdict(stats.log_ratio([1400, 1450, 1380, 1500], [1000, 990, 1030, 1100]), ">", "",
                         math.log1p(judge.COST_MARGIN), unit="%", log_ratio=True)
    return [("05", "flat", crossed_claim(0.002, "==", members=3)), ("05", "degrades", crossed_claim(-0.012, "<", 2)),
            ("05", "large", crossed_claim(0.06, ">")), ("06", "on par", crossed_claim(-0.01, "==")),
            ("06", "cost", cost), ("06", "later", judge.awaiting(">", "", "held-out scoring"))]


def test_every_replicate_is_judged_as_holm_judges_the_redrawn_family():
    rows = mixed_family(np.random.default_rng(7))
    design, replicates = power.Design("05", 10), 200
    found = power.decisive(rows, design, replicates)
    assert set(found) == {"flat", "degrades", "large"}  # the design re-measures 05's claims only
    rng = np.random.default_rng(power.SEED)  # the same draws, in the same order (decisive's docstring)
    draws = {title: power._drawn(v, design, replicates, rng) for stem, title, v in rows if title in found}
    for r in range(replicates):
        family = [judge.verdict([replace(d, estimate=float(e[r]), se=float(s[r]), df=float(f[r]))
                                 for d, (e, s, f) in zip(v.members, draws[title])], v.claim, v.paper, v.margin,
                                log_ratio=v.log_ratio) if title in draws else v for _, title, v in rows]
        after = judge.holm(family)
        for (_, title, _), h in zip(rows, after):
            if title in found:
                assert found[title][r] == (h.label != "inconclusive"), (r, title, h.label)
    # chances in between (about 10% and 60% here): the replicates compared were not all alike
    assert 0 < found["flat"].sum() < found["degrades"].sum() < replicates


def test_claims_not_run_or_not_judged_leave_the_family_as_holm_leaves_them():
    """A study without some arm lists those claims "not run": they are no test, so they neither dilute the other
    claims' level in the simulated Holm nor count among the tested claims the page names."""
    rows = mixed_family(np.random.default_rng(7))
    unjudged = [("06", f"absent {i}", judge.verdict(rows[3][2].members, "==", "", unjudged=label))
                for i, label in enumerate((stats.NOT_RUN.format("bitfit"), stats.NOT_LEARNED) * 6)]
    design, replicates = power.Design("05", 10), 200
    assert {title: hits.sum() for title, hits in power.decisive(rows + unjudged, design, replicates).items()} == {
        title: hits.sum() for title, hits in power.decisive(rows, design, replicates).items()}
    assert [title for _, title, v in rows + unjudged if v.in_family] == [title for _, title, _ in rows]


def test_a_decided_claim_is_not_listed_and_an_undecidable_one_says_within_what():
    rng = np.random.default_rng(3)
    decided = judge.verdict(crossed_difference(rng, 0.05, 0.005), ">", "")  # +5 points, shown with 3 seeds
    vague = seed_only_claim(0.001, 0.02)  # 0.1 points against a seed spread of 2: nothing to find
    # one run each, disagreeing on 16% of 800 examples: an SE of 1.4 points, no seed spread measured
    one_seed = judge.verdict(stats.crossed(rng.choice([-1, 0, 1], p=[0.08, 0.84, 0.08], size=(1, 800))), "==", "")
    rows = [("05", "decided", decided), ("05", "vague", vague), ("04", "one run", one_seed)]
    assert [h.label for h in judge.holm([v for *_, v in rows])] == ["reproduced", "inconclusive", "inconclusive"]
    designs = [power.Design("05", s, hours=1.0) for s in (5, 20)] + [power.Design("05", 20, 4000, hours=2.0)]
    listed = power.needs(rows, power.by_design(rows, designs))
    assert [n.claim for n in listed] == ["vague", "one run"]  # "decided" is not listed
    vague_need, one_run = listed
    assert vague_need.design is None and vague_need.chance < power.TARGET
    assert power.need_line(vague_need) == f"- vague: undecidable within 20 seeds and 4,000 examples (at most " \
                                          f"{vague_need.chance}%)"
    assert one_run.why == "one seed"
    assert power.lines(listed, 3)[-2] == f"- {power.UNPLANNED['one seed']}: one run"  # apart, by its reason
    assert power.best_line(None, [one_run]).startswith("**Best edit per hour:** none can be planned")


def test_the_last_line_names_the_edit_that_decides_the_most_claims_per_hour():
    rng = np.random.default_rng(11)
    # +2.5 points over a seed spread of 2 with 3 seeds: inconclusive today, decided with 20 seeds
    rows = [("05", f"a{i}", seed_only_claim(0.025 + rng.normal(0, 1e-4), 0.02)) for i in range(2)]
    rows += [("06", "b", seed_only_claim(0.025, 0.02))]
    designs = [power.Design("05", 20, hours=2.0, edit="x.seeds = 0-19"),  # 2 claims in 2 h: 1 per hour
               power.Design("06", 20, hours=0.5, edit="y.seeds = 0-19"),  # 1 claim in 0.5 h: 2 per hour
               power.Design("06", 20, 9000, hours=0.1)]  # no edit makes it: never the line's
    found = power.by_design(rows, designs)
    assert all(c >= power.TARGET for chances in found.values() for c in chances.values())
    line = power.best_line(power.best_edit(rows, found), power.needs(rows, found))
    assert line == "**Best edit per hour:** `y.seeds = 0-19`: decides 1 claim, about 0.5 h."
    slower = {replace(d, hours=d.hours * 10) if d.notebook == "06" else d: c for d, c in found.items()}
    assert "`x.seeds = 0-19`: decides 2 claims, about 2.0 h" in power.best_line(power.best_edit(rows, slower),
                                                                                 power.needs(rows, slower))


def test_the_list_is_computed_from_the_claims_with_no_stored_table(tmp_path):
    """No power.csv (or any file) under the root: the ladder is planned from the profile's settings and priced
    from whatever the store holds (nothing here, so no hours are known)."""
    smoke = profiles.resolve("smoke")
    notebook = families.get("init_scale").number
    rows = [(notebook, "flat", seed_only_claim(0.018, 0.02, seeds=2)), (notebook, "small", seed_only_claim(0.001, 0.02, seeds=2))]
    lines, last = power.section(smoke, rows, root=tmp_path, replicates=200)
    assert not list(tmp_path.rglob("*.csv"))
    listed = [line for line in lines if line.startswith("- ")]
    assert listed[0].startswith("- flat: ") and "`init_scale.seeds = 0-" in listed[0]
    assert "hours not known" in listed[0] and listed[1].startswith("- small: undecidable within 20 seeds and ")
    assert last == "**Best edit per hour:** not known: no stored run times the edits that decide a claim."
    committed = profiles.results_dir("default")
    assert not (committed / "power.csv").exists()  # nothing writes or reads a stored table of chances


def test_the_largest_evaluation_set_counts_the_test_split_and_what_tasks_unused_leaves_out():
    from adapterlab.training import tasks

    whole = tasks.load_task("synthetic")
    train = whole.splits["train"]
    left = tasks.unused(train, 300, (0,), whole.text_fields)
    assert power.unseen("synthetic", ((0, 300),)) == len(whole.splits["test"]) + len(left)
    # a second seed's subset leaves fewer out, never more
    assert power.unseen("synthetic", ((0, 300), (1, 300))) < power.unseen("synthetic", ((0, 300),))
