"""06's cost claims (Compacter §5.5) read from its timing runs when its claims table has them (the permutation test,
split "per timing run"), else from the training runs (Welch), on the committed default table; Holm covers both."""
import math

import numpy as np
import pandas as pd
import pytest

from adapterlab.experiments import judge, profiles, stats
from adapterlab.families import param_performance as pp
from adapterlab.report import claims as declared

TABLE = profiles.results_dir("default") / "param_performance.csv"  # the committed table, read only
# the arms' labels in the table, and what each costs in the synthetic timing runs: (seconds per epoch, peak MB)
COSTS = {"full": (60.0, 1400.0), "intrinsic-said d'=1400": (250.0, 2000.0), "prompt-tuning-R n=100": (200.0, 2300.0)}


def timing_rows(runs=8, machine="AMD EPYC (AVX512)", memory="process RSS"):
    """Timing runs of the three arms as timing_table gives them: each arm's costs times a spread of +-2%."""
    rng = np.random.default_rng(0)
    rows = []
    for repeat in range(runs):
        for label, (seconds, mb) in COSTS.items():
            rows.append(dict(task="airline", method=label.split(" ")[0], label=label, repeat=repeat,
                             seconds_per_epoch=seconds * rng.uniform(0.98, 1.02), peak_memory_mb=mb * rng.uniform(0.98, 1.02),
                             memory=memory, machine=machine, workers=1, measured="timing run"))
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def table():
    return pd.read_csv(TABLE)


def cost_verdicts(found):
    return {title: v for title, v in found if v.log_ratio}


def test_without_timing_runs_the_cost_claims_read_the_training_runs(table):
    costs = cost_verdicts(pp.read(table)[1])
    assert len(costs) == 4
    assert all(v.split == declared.PER_RUN and "Welch on log cost" in v.diff.how for v in costs.values())


def test_with_timing_runs_the_cost_claims_read_them_by_the_permutation_test(table):
    claims_table = pd.concat([table.assign(measured="training run"), timing_rows()], ignore_index=True)
    lines, found = pp.read(claims_table)
    before = dict(pp.read(table)[1])
    costs = cost_verdicts(found)
    assert len(costs) == 4
    for title, v in costs.items():
        assert v.split == declared.PER_TIMING_RUN and v.size() == "8 and 8 runs"
        assert v.diff.how.startswith("permutation test, 8 and 8 timing runs (exact: 12,870 splits; 1 machine)")
        assert v.p == 1 / 12870  # each arm costs more in every timing run: the one split as extreme
        memory = "peak memory" in title
        assert ("process memory (RSS) on a CPU; the paper's is GPU memory" in v.diff.how) == memory
        assert title in before and before[title].split == declared.PER_RUN  # the same claim, read anew
    said = costs["airline: intrinsic-said d'=1400 needs more time per epoch than full fine-tuning "
                 "(time per epoch, ratio to full)"]
    assert said.diff.estimate == pytest.approx(math.log(250 / 60), abs=0.02)  # about log(250 / 60), +-2% spread
    # the accuracy claims read the training runs as before
    assert {t: (v.label, v.p) for t, v in found if not v.log_ratio} == \
           {t: (v.label, v.p) for t, v in before.items() if not v.log_ratio}
    text = "\n".join(lines)
    assert "permutation test, 8 and 8 timing runs" in text and "the paper's is GPU memory" in text
    # Holm's correction covers them with every other claim: adjusted p at least the p, at most 1
    after = judge.holm([v for _, v in found])
    for (title, v), h in zip(found, after):
        if v.log_ratio:
            assert v.p <= h.holm_p <= 1 and h.holm_p < stats.ALPHA


def test_the_claims_table_reads_the_same_from_its_csv(table, tmp_path):
    claims_table = pd.concat([table.assign(measured="training run"), timing_rows(runs=3, memory="CUDA peak allocated")],
                             ignore_index=True)
    claims_table.to_csv(tmp_path / f"{pp.CLAIMS_TABLE}.csv", index=False)
    again = pd.read_csv(tmp_path / f"{pp.CLAIMS_TABLE}.csv")
    first, second = (cost_verdicts(pp.read(t)[1]) for t in (claims_table, again))
    assert {t: (v.p, v.diff.how) for t, v in first.items()} == {t: (v.p, v.diff.how) for t, v in second.items()}
    memory = next(v for t, v in second.items() if "peak memory" in t)
    assert memory.diff.how.startswith("permutation test, 3 and 3 timing runs (exact: 20 splits; 1 machine)")
    assert memory.diff.how.endswith("GPU memory (CUDA's peak allocated), as the paper's")
