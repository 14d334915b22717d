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


# --- get_or_run -----------------------------------------------------------------------

class Counter:
    """A stand-in for training: counts calls, returns a record, can fail on call k."""

    def __init__(self, fail_on=None):
        self.calls, self.fail_on = 0, fail_on

    def __call__(self):
        self.calls += 1
        if self.calls == self.fail_on:
            raise RuntimeError("interrupted")
        return {"metric": "accuracy", "test": 0.5 + self.calls / 100, "sizes": (1, 2)}


def test_get_or_run_runs_once(tmp_path):
    store, fn = ResultStore(tmp_path), Counter()
    first = store.get_or_run(CONFIG, fn)
    second = store.get_or_run(CONFIG, fn)
    assert fn.calls == 1
    assert first == second == {"metric": "accuracy", "test": 0.51, "sizes": [1, 2]}
    assert store.get(CONFIG) == first
    assert ResultStore(tmp_path).get(CONFIG) == first  # a new store (another notebook)
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
    store, fn = ResultStore(tmp_path), Counter()
    for c in sweep_configs(3):
        store.get_or_run(c, fn)
    _restamp(tmp_path / "runs.jsonl", "2026-01-01T00:00:00+00:00")
    since = "2026-06-01T00:00:00+00:00"
    fresh = ResultStore(tmp_path, since=since)
    assert fresh.get(sweep_configs(3)[0]) is None and fresh.records() == []
    assert ResultStore(tmp_path).get(sweep_configs(3)[0]) is not None  # without `since` they are still there
    fresh.get_or_run(sweep_configs(3)[1], fn)  # retrained, and replaces the old line in place
    assert fn.calls == 4
    assert [e["config"]["seed"] for e in fresh.records()] == [1]
    assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == 3  # still one line per run
    fresh.get_or_run(sweep_configs(3)[1], fn)  # made after `since`: read back, not retrained
    assert fn.calls == 4
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


def test_a_retrained_record_replaces_the_old_line_in_place(tmp_path):
    store, fn = ResultStore(tmp_path), Counter()
    for c in sweep_configs(3):
        store.get_or_run(c, fn)
    _restamp(tmp_path / "runs.jsonl", "2026-01-01T00:00:00+00:00")
    middle = sweep_configs(3)[1]
    again = ResultStore(tmp_path, since="2026-06-01T00:00:00+00:00").get_or_run(middle, fn)
    assert fn.calls == 4 and again["test"] == 0.54
    assert store.get(middle) == again
    lines = (tmp_path / "runs.jsonl").read_text().splitlines()
    assert len(lines) == 3
    assert [e["config"]["seed"] for e in store.records()] == [0, 1, 2]  # order kept


def test_interrupted_sweep_resumes(tmp_path):
    store, fn = ResultStore(tmp_path), Counter(fail_on=3)
    with pytest.raises(RuntimeError):
        for c in sweep_configs(5):
            store.get_or_run(c, fn)
    assert len(store.records()) == 2

    rerun = Counter()
    for c in sweep_configs(5):
        store.get_or_run(c, rerun)
    assert rerun.calls == 3  # only configs 2, 3, 4
    keys = [e["key"] for e in store.records()]
    assert len(keys) == 5 and set(keys) == {config_key(c) for c in sweep_configs(5)}
    assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == 5


def test_failing_fn_leaves_file_byte_identical(tmp_path):
    store = ResultStore(tmp_path)
    for c in sweep_configs(2):
        store.get_or_run(c, Counter())
    before = (tmp_path / "runs.jsonl").read_bytes()
    retrain = ResultStore(tmp_path, since="2999-01-01T00:00:00+00:00")  # every stored record counts as missing
    for config, where in [(sweep_configs(3)[2], store), (sweep_configs(1)[0], retrain)]:
        with pytest.raises(RuntimeError):
            where.get_or_run(config, Counter(fail_on=1))
    with pytest.raises(ValueError):  # a record that is not JSON-able is refused too
        store.get_or_run(sweep_configs(3)[2], lambda: {"x": object()})
    assert (tmp_path / "runs.jsonl").read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == [".lock", "runs.jsonl"]  # no temp files left


# --- damaged files ------------------------------------------------------------------------

def test_truncated_last_line_is_reported_skipped_and_recomputed(tmp_path):
    store = ResultStore(tmp_path)
    configs = sweep_configs(3)
    for c in configs:
        store.get_or_run(c, Counter())
    path = tmp_path / "runs.jsonl"
    lines = path.read_text().splitlines()
    half = lines[2][: len(lines[2]) // 2]
    path.write_text(lines[0] + "\n" + lines[1] + "\n" + half)  # as if copied mid-write

    with pytest.warns(CorruptLineWarning) as caught:
        assert len(store.records()) == 2
    assert f"{path}:3" in str(caught[0].message)

    fn = Counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CorruptLineWarning)
        store.get_or_run(configs[2], fn)
        store.get_or_run(configs[0], fn)
    assert fn.calls == 1  # only the damaged one
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


def test_checkpoint_dir(tmp_path):
    d = ResultStore(tmp_path).checkpoint_dir(CONFIG)
    assert d == tmp_path / "checkpoints" / config_key(CONFIG) and d.is_dir()


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
    from adapterlab.experiments.results import atomic_write

    path = tmp_path / "new" / "table.csv"
    atomic_write(path, "a,b\n1,2\n")
    assert path.read_bytes() == b"a,b\n1,2\n" and oct(path.stat().st_mode & 0o777) == "0o644"
    atomic_write(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"

    def broken_replace(*args):
        raise OSError("disk full")

    monkeypatch.setattr("adapterlab.experiments.results.os.replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, "never seen")
    assert path.read_bytes() == b"\x00\x01" and sorted(p.name for p in path.parent.iterdir()) == ["table.csv"]


def test_prune_deletes_only_the_records_not_kept_and_leaves_foreign_lines(tmp_path):
    store = ResultStore(tmp_path)
    for i in range(3):
        store.put({"run": i}, {"score": i}, family="runs")
    with open(store.path("runs"), "a") as f:
        f.write('{"schema": 999, "not": "ours"}\n')  # another schema's line: kept, as put() keeps it
    kept, dropped = store.checkpoint_dir({"run": 1}), store.checkpoint_dir({"run": 2})
    (dropped / "adapter.safetensors").write_bytes(b"weights")
    assert store.prune("runs", {config_key({"run": 1})}) == 2
    assert kept.is_dir() and not dropped.exists()  # a pruned record's checkpoint goes with it
    assert [store.get({"run": i}, "runs") for i in range(3)] == [None, {"score": 1}, None]
    assert store.path("runs").read_text().splitlines()[-1] == '{"schema": 999, "not": "ours"}'
    assert store.prune("runs", {config_key({"run": 1})}) == 0  # nothing left to delete: file untouched
