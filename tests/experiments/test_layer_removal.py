"""Layer removal at several seeds: the plan trains each seed's run and budget control, every seed's spans are
scored on one held-out set that no seed's subset holds, its scoring units are keyed by that set, and one seed
keeps the keys the committed default store holds."""
from dataclasses import replace

import numpy as np
import pytest
import torch

from adapterlab.experiments import stats, planning, profiles, running
from adapterlab.families import layer_removal
from adapterlab.report import findings, tables
from adapterlab.training import removal
from adapterlab.training.tasks import load_task, subsample

SMOKE, DEFAULT = profiles.get("smoke"), profiles.get("default")

# keys of the committed default store (data/results/default/layer_removal*.jsonl): the 240-step run of seed 0,
# its 480-step budget control, the run's spans on validation, and both runs' spans on 6,000 held-out tweets
STORED_RUNS = {"6a55068b91f0e338", "cb32da2025ade4f7"}
STORED_SPANS = {"7cfe4d025eecf9f8", "a996af3d68ab414e", "a6870dfb21936fdc"}


def with_seeds(profile, seeds):
    return replace(profile, layer_removal=replace(profile.layer_removal, seeds=seeds))


def ids(units):
    return {u.id for u in units}


@pytest.fixture
def one_thread():
    """Tiny models gain nothing from threads, and on a busy machine two threads can be 10x slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_one_seed_keeps_the_keys_the_default_store_holds():
    p = with_seeds(DEFAULT, (0,))  # a profile of one seed plans the keys seed 0's records were stored under
    runs = [planning.training_unit(p, "layer_removal", c) for c in planning.plan(p, "layer_removal")]
    assert ids(runs) == STORED_RUNS
    assert ids(layer_removal.span_units_to_come(p)) == STORED_SPANS


def test_every_seed_trains_its_run_and_budget_control_and_is_scored_on_one_held_out_set():
    p = with_seeds(DEFAULT, (0, 1, 2))
    planned = planning.plan(p, "layer_removal")
    steps = sorted((c.train.seed, c.train.max_steps) for c in planned)
    assert steps == [(0, 240), (0, 480), (1, 240), (1, 480), (2, 240), (2, 480)]  # a run and its control per seed
    assert ids(planning.training_unit(p, "layer_removal", c) for c in planned) >= STORED_RUNS  # seed 0's as stored
    units = layer_removal.span_units_to_come(p)
    validation = [u for u in units if u.spec["split"] == "validation"]
    held_out = [u for u in units if u.spec["split"] == removal.HELD_OUT]
    assert [u.spec["config"]["train"]["seed"] for u in validation] == [0]  # the heatmap: the first seed's run
    assert sorted((u.spec["config"]["train"]["seed"], u.spec["config"]["train"]["max_steps"]) for u in held_out) == steps
    assert all(u.key["unseen_by"] == u.spec["seeds"] == [0, 1, 2] and u.key["eval_size"] == 6000 for u in held_out)
    # seed 0's runs on the common set are new units: the stored scores on seed 0's own set are not overwritten
    assert ids(validation) <= STORED_SPANS and not ids(held_out) & STORED_SPANS


def test_the_common_held_out_set_avoids_every_seeds_subset_in_the_first_seeds_order():
    config = planning.plan(with_seeds(SMOKE, (0, 1, 2)), "layer_removal")[0]
    task = load_task(config.task, train_size=config.train_size, seed=config.train.seed)
    whole = load_task(config.task).splits["train"]
    field = task.text_fields[0]
    trained = {t for seed in (0, 1, 2) for t in subsample(whole, config.train_size, seed)[field]}
    held = removal.scored_split(config, task, removal.HELD_OUT, None, seeds=(0, 1, 2)).splits[removal.HELD_OUT][field]
    assert held and not set(held) & trained  # no text any seed's subset holds
    # in seed 0's order: the rows of the whole split that no subset holds, as subsample's permutation lists them
    order = np.random.default_rng(0).permutation(len(whole))
    assert held == [whole[field][i] for i in order if whole[field][i] not in trained]
    capped = removal.scored_split(config, task, removal.HELD_OUT, 50, seeds=(0, 1, 2)).splits[removal.HELD_OUT]
    assert capped[field] == held[:50]
    # one seed alone: the run's own unused examples, a larger set than the one three seeds leave
    alone = removal.scored_split(config, task, removal.HELD_OUT, None).splits[removal.HELD_OUT][field]
    assert set(held) < set(alone)
    with pytest.raises(ValueError, match="add its seed 0 to the seeds \\[1, 2\\]"):
        removal.scored_split(config, task, removal.HELD_OUT, 50, seeds=(1, 2))


def test_two_seeds_end_to_end_pair_their_spans_on_one_held_out_set(tmp_path, one_thread):
    """Smoke's tiny model at seeds 0 and 1, trained and scored through the runner: the held-out table has both
    seeds' spans on the same examples, and the claims cross the two seeds with those examples."""
    p = with_seeds(SMOKE, (0, 1))
    running.run_plan(p, "layer_removal", progress=False, root=tmp_path)
    result = tables.get("layer_removal", p, root=tmp_path)
    held = result.extra[layer_removal.HELD_OUT_TABLE]
    assert set(result.table["seed"]) == {0} and sorted(set(held["seed"])) == [0, 1]  # the heatmap: seed 0's
    assert held.groupby("seed")["eval_examples"].first().tolist() == [200, 200]
    assert held.groupby("seed")["majority_correct"].first().map(len).nunique() == 1  # bits of the same examples
    for _, verdict in layer_removal.read(held)[1]:
        design = verdict.diff.design  # crossed: the seeds' noise and the examples' (a tiny model may predict alike)
        assert isinstance(design, stats.Crossed) and (design.seeds, design.examples) == (2, 200)
    stored = running.store_of(p, root=tmp_path).records(layer_removal.SPANS)
    assert sorted(e["config"].get("unseen_by") is not None for e in stored) == [False, True, True]
