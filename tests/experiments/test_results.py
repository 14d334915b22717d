"""Tests for the result store: stable keys, caching, resume, corrupt lines, concurrency."""

import json
import multiprocessing
import os
import subprocess
import sys
import warnings

import pytest

from adapterlab.experiments import results
from adapterlab.experiments.results import ResultStore, config_key, CorruptLineWarning


CONFIG = {"backbone": "tiny", "task": "synthetic", "seed": 0, "epochs": 3, "lr": 1e-3,
          "method": {"name": "compacter", "n": 4, "rank": 1, "bottleneck": 24},
          "sizes": (100, 50)}

# The key of CONFIG as first computed. If this test fails, stored results would
# all be orphaned: either undo the change to the canonical form, or bump
# SCHEMA_VERSION on purpose and update this value.
GOLDEN_KEY = "30f3fe1a3bb85673"


def sweep_configs(n=5):
    return [dict(CONFIG, seed=i) for i in range(n)]


# --- keys -----------------------------------------------------------------------

def test_key_ignores_dict_order():
    reordered = {k: CONFIG[k] for k in reversed(list(CONFIG))}
    reordered["method"] = {k: CONFIG["method"][k] for k in reversed(list(CONFIG["method"]))}
    assert config_key(reordered) == config_key(CONFIG)
    assert len(config_key(CONFIG)) == 16


def test_key_changes_with_any_value():
    base = config_key(CONFIG)
    changed = [dict(CONFIG, seed=1), dict(CONFIG, lr=1.1e-3), dict(CONFIG, sizes=(100, 51)),
               dict(CONFIG, method=dict(CONFIG["method"], n=2)), dict(CONFIG, extra=None)]
    keys = {config_key(c) for c in changed}
    assert base not in keys and len(keys) == len(changed)


def test_tuples_hash_like_lists():
    assert config_key(dict(CONFIG, sizes=[100, 50])) == config_key(CONFIG)


@pytest.mark.parametrize("bad", [{"x": object()}, {"x": {1: "a"}}, {"x": float("nan")},
                                 {"x": [1, {2, 3}]}])
def test_key_rejects_non_json(bad):
    with pytest.raises(ValueError, match="x"):
        config_key(bad)


def test_key_same_in_another_process():
    code = f"from adapterlab.experiments.results import config_key\nprint(config_key({CONFIG!r}))\n"
    env = dict(os.environ, PYTHONHASHSEED="123")  # a different hash() salt than ours
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == config_key(CONFIG) == GOLDEN_KEY


# --- put and get ---------------------------------------------------------------------------

RECORD = {"metric": "accuracy", "test": 0.51, "sizes": (1, 2)}


def test_put_then_get_gives_the_json_round_trip_to_every_reader(tmp_path):
    store = ResultStore(tmp_path)
    assert store.get(CONFIG) is None
    entry = store.put(CONFIG, RECORD)
    assert entry["record"] == store.get(CONFIG) == {"metric": "accuracy", "test": 0.51, "sizes": [1, 2]}
    assert ResultStore(tmp_path).get(CONFIG) == store.get(CONFIG)  # a new store (another notebook)
    [entry] = store.records()
    assert entry["key"] == config_key(CONFIG) and entry["schema"] == results.SCHEMA_VERSION
    assert entry["family"] == "runs" and entry["config"]["sizes"] == [100, 50]
    assert entry["created"]


def test_reads_see_other_writers_and_hand_out_copies(tmp_path):
    mine, theirs = ResultStore(tmp_path), ResultStore(tmp_path)  # e.g. two notebooks
    a, b = sweep_configs(2)
    mine.put(a, {"scores": [1]})
    assert mine.get(b) is None  # the file is now parsed and cached
    theirs.put(b, {"scores": [2]})
    assert mine.get(b) == {"scores": [2]}  # the cache noticed the new file
    mine.get(a)["scores"].append(99)  # changing what we got back...
    mine.records()[0]["record"]["scores"].append(99)
    assert mine.get(a) == {"scores": [1]}  # ...does not change the store


def test_families_are_separate_files(tmp_path):
    store = ResultStore(tmp_path)
    store.put(CONFIG, {"a": 1}, family="init_scale")
    assert store.get(CONFIG) is None
    assert store.get(CONFIG, family="init_scale") == {"a": 1}
    assert (tmp_path / "init_scale.jsonl").exists()
    with pytest.raises(ValueError):
        store.put(CONFIG, {"a": 1}, family="../escape")


def _restamp(path, created):
    """Give every line of a results file this creation time (as if made then)."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(dict(e, created=created)) + "\n" for e in lines))


def test_records_made_before_since_count_as_missing_and_are_replaced(tmp_path):
    store = ResultStore(tmp_path)
    for i, c in enumerate(sweep_configs(3)):
        store.put(c, {"test": i})
    _restamp(tmp_path / "runs.jsonl", "2026-01-01T00:00:00+00:00")
    since = "2026-06-01T00:00:00+00:00"
    fresh = ResultStore(tmp_path, since=since)
    assert fresh.get(sweep_configs(3)[0]) is None and fresh.records() == []
    assert ResultStore(tmp_path).get(sweep_configs(3)[0]) is not None  # without `since` they are still there
    fresh.put(sweep_configs(3)[1], {"test": 9})  # made again: replaces the old line in place
    assert [e["config"]["seed"] for e in fresh.records()] == [1] and fresh.get(sweep_configs(3)[1]) == {"test": 9}
    assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == 3  # still one line per run
    assert ResultStore(tmp_path).records()[1] == fresh.records()[0]  # every reader sees the new record
    # a time given without a zone is UTC; a malformed one is refused with the expected form
    assert ResultStore(tmp_path, since="2026-06-01T00:00:00").since == fresh.since
    with pytest.raises(ValueError, match="not an ISO 8601 time.*2026-12-01T19:30:00"):
        ResultStore(tmp_path, since="yesterday")


def test_a_store_since_a_time_splits_records_at_that_time(tmp_path):
    store = ResultStore(tmp_path)
    old, new = sweep_configs(2)
    store.put(old, {"test": 0.1})
    store.put(new, {"test": 0.2})
    lines = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    lines[0]["created"], lines[1]["created"] = "2026-03-01T11:59:59+00:00", "2026-03-01T12:00:00+00:00"
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    since = ResultStore(tmp_path, since="2026-03-01T12:00:00+00:00")
    assert since.get(old) is None  # one second older: missing
    assert since.get(new) == {"test": 0.2}  # made at the time itself: present


def test_fresh_since_turns_a_fresh_argument_into_the_stores_time():
    import datetime

    assert results.fresh_since(False) is None and results.fresh_since(None) is None
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    now = results.fresh_since(True)
    assert before <= now <= datetime.datetime.now(datetime.timezone.utc) and now.microsecond == 0
    assert results.fresh_since("2026-12-01T19:30:00+01:00").isoformat() == "2026-12-01T19:30:00+01:00"
    assert results.fresh_since("2026-12-01T19:30:00") == results.fresh_since("2026-12-01T19:30:00+00:00")
    assert results.fresh_since(now) == now  # a time already made passes through
    with pytest.raises(ValueError, match="fresh 'yesterday' is not an ISO 8601 time; write it like 2026-12-01"):
        results.fresh_since("yesterday")
    with pytest.raises(ValueError, match="--since 'soon' is not an ISO 8601 time"):
        results.fresh_since("soon", "--since")


def test_a_record_put_again_keeps_its_place_and_a_refused_one_changes_nothing(tmp_path):
    store = ResultStore(tmp_path)
    for i, c in enumerate(sweep_configs(3)):
        store.put(c, {"test": i})
    store.put(sweep_configs(3)[1], {"test": 9})
    assert [e["config"]["seed"] for e in store.records()] == [0, 1, 2]  # order kept
    assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == 3
    before = (tmp_path / "runs.jsonl").read_bytes()
    with pytest.raises(ValueError, match=r"record\['x'\] is <object .*not JSON-able"):
        store.put(sweep_configs(3)[2], {"x": object()})
    with pytest.raises(ValueError, match="record must be a dict"):
        store.put(sweep_configs(3)[2], [1, 2])
    assert (tmp_path / "runs.jsonl").read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == [".lock", "runs.jsonl"]  # no temp files left


# --- damaged files ------------------------------------------------------------------------

def test_truncated_last_line_is_reported_skipped_and_recomputed(tmp_path):
    store = ResultStore(tmp_path)
    configs = sweep_configs(3)
    for i, c in enumerate(configs):
        store.put(c, {"test": i})
    path = tmp_path / "runs.jsonl"
    lines = path.read_text().splitlines()
    half = lines[2][: len(lines[2]) // 2]
    path.write_text(lines[0] + "\n" + lines[1] + "\n" + half)  # as if copied mid-write

    with pytest.warns(CorruptLineWarning) as caught:
        assert len(store.records()) == 2
    assert f"{path}:3" in str(caught[0].message)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CorruptLineWarning)
        assert store.get(configs[2]) is None and store.get(configs[0]) == {"test": 0}  # only the damaged one is missing
        store.put(configs[2], {"test": 2})
    assert half + "\n" in path.read_text()  # the bad line is kept, not silently deleted
    with pytest.warns(CorruptLineWarning, match=":3: "):  # still reported, still line 3
        assert [e["config"]["seed"] for e in ResultStore(tmp_path).records()] == [0, 1, 2]


def test_other_schema_is_ignored_but_kept(tmp_path):
    store = ResultStore(tmp_path)
    store.put(CONFIG, {"a": 1})
    path = tmp_path / "runs.jsonl"
    old = dict(json.loads(path.read_text()), schema=results.SCHEMA_VERSION + 1)
    path.write_text(json.dumps(old) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: it is not an error
        assert store.get(CONFIG) is None
        store.put(CONFIG, {"a": 2})
    assert store.get(CONFIG) == {"a": 2}
    assert len(path.read_text().splitlines()) == 2


# --- two processes at once ---------------------------------------------------------------

def _writer(root, worker, start):
    start.wait()  # both processes begin together, so their writes interleave
    store = ResultStore(root)
    for i in range(20):
        store.put(dict(CONFIG, seed=i, worker=worker), {"worker": worker, "i": i})


def test_concurrent_writers_lose_nothing(tmp_path):
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(tmp_path, w, start)) for w in range(2)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    entries = ResultStore(tmp_path).records()
    assert len(entries) == 40
    assert {(e["record"]["worker"], e["record"]["i"]) for e in entries} == \
        {(w, i) for w in range(2) for i in range(20)}


def test_atomic_write_replaces_whole_files_and_leaves_no_temp(tmp_path, monkeypatch):
    """The project's one atomic write: text or bytes, the folder made, the old file intact on failure."""
    from adapterlab.methods.writing import atomic_write

    path = tmp_path / "new" / "table.csv"
    atomic_write(path, "a,b\n1,2\n")
    assert path.read_bytes() == b"a,b\n1,2\n" and oct(path.stat().st_mode & 0o777) == "0o644"
    atomic_write(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"

    def broken_replace(*args):
        raise OSError("disk full")

    monkeypatch.setattr("adapterlab.methods.writing.os.replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, "never seen")
    assert path.read_bytes() == b"\x00\x01" and sorted(p.name for p in path.parent.iterdir()) == ["table.csv"]


def test_a_table_read_back_keeps_all_digit_bits_as_text(tmp_path):
    """40 examples' correct bits can be hex of digits only: read back, they stay the same string, not a number."""
    import pandas as pd
    from adapterlab.experiments.results import write_csvs
    from adapterlab.report.csvs import read_csv

    frame = pd.DataFrame({"seed": [0, 1], "test_correct": ["0000000000", "09f0000000"], "value": [0.5, 0.6]})
    path, = write_csvs({"t": frame}, tmp_path)
    back = read_csv(path)
    assert list(back["test_correct"]) == ["0000000000", "09f0000000"] and back["seed"].dtype.kind == "i"
