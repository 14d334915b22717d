"""Adding a family is adding one module: a family defined outside the package (toy_family.py) goes through the
plan, a sweep, its table, its figure, its reading, the dry run and `study init` without any other file knowing
its name."""
import importlib
import io
import sys
import tomllib
from pathlib import Path

import pytest

from adapterlab.experiments import costs, families, planning, profiles, study_init, sweep
from adapterlab.report import figures, findings, tables

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def toy():
    sys.path.insert(0, str(HERE))
    module = importlib.import_module("toy_family")
    yield module.FAMILY
    families.unregister(module.NAME)
    sys.path.remove(str(HERE))


@pytest.fixture(scope="module")
def swept(toy, tmp_path_factory):
    """The toy family trained by the sweep into a fresh root (smoke profile: two tiny runs)."""
    root = tmp_path_factory.mktemp("toy")
    assert sweep.sweep("smoke", root=root, only=toy.name, executor="local", progress=False, max_parallel=1) == 0
    return root


def test_the_registry_finds_it_by_name_and_by_number(toy):
    assert families.get("toy_sizes") is toy and families.get("09") is toy
    assert profiles.get("smoke").settings(toy).sizes == (4, 8)  # the smoke profile's value, from its module
    assert profiles.get("default").settings(toy).sizes == (4, 16)  # elsewhere its defaults


def test_its_plan_goes_through_the_planner(toy):
    configs = planning.plan("smoke", toy)
    assert [c.method_args["bottleneck"] for c in configs] == [4, 8]
    assert all(c.method == "houlsby" for c in configs)


def test_a_sweep_trains_it_and_its_table_figure_and_reading_follow(toy, swept):
    result = tables.get(toy, "smoke", root=swept)
    assert list(result.table.columns[:5]) == ["task", "bottleneck", "seed", "metric", "value"]
    assert len(result.table) == 2 and set(result.table["split"]) == {"test"}
    written = tables.write(result, "smoke", swept)
    assert [Path(p).name for p in written] == ["toy_sizes.csv"]
    paths = figures.save("toy_sizes", result.table, "smoke", swept)
    assert {Path(p).name for p in paths} == {"toy_sizes.png", "toy_sizes.html"}
    lines = findings.reading(toy, result.table)
    assert lines[0].startswith("**Toy sizes** (2 runs)")
    [(title, verdict)] = findings.claims(toy, result.table)
    assert title == "synthetic: the bigger bottleneck above the smaller" and verdict.label


def test_the_dry_run_counts_its_units(toy, swept):
    out = io.StringIO()
    counts = costs.dry_run("smoke", [toy], verbose=False, file=out, root=swept)
    assert counts == {"toy_sizes": 2, "total": 2}
    assert "toy_sizes: 2 units, 2 stored" in out.getvalue()


def test_study_init_writes_its_settings(toy, tmp_path, monkeypatch):
    from test_studies import PILOT, TIMING, write_pairs

    monkeypatch.setattr(study_init, "time_training", lambda *args: TIMING)
    monkeypatch.setattr(study_init, "time_scoring", lambda *args: TIMING.span_seconds)
    path = study_init.init(str(write_pairs(tmp_path / "qa.csv", rows=400)), ["question", "answer"], "topic",
                           tmp_path / "qa-study.toml", backbone="tiny", hours=10_000, pilot=PILOT)
    written = tomllib.loads(path.read_text())
    assert written["toy_sizes"] == {"sizes": [4, 16], "seeds": [0, 1, 2]}
    assert profiles.get(str(path)).settings(toy).seeds == (0, 1, 2)
