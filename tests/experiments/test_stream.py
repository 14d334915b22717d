"""The online setting (adapterlab.families.stream) on the tiny random BERT: a small stream of three tweet domains in two
orders, one seed, a few steps per task (~15 s). What it proves: exact recall (predictions, base and file hashes),
the work shared between learners, resuming, stream.csv built from the records like every family's table, the
storage bill from the files, forgetting with its paired noise, the dry run's count of the steps, the sweep's
worker path, and a clear error for each bad input."""
import io
import os

os.environ["HF_HUB_OFFLINE"] = "1"  # before any Hugging Face import: the hub is never needed here

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from adapterlab.experiments import costs, families, planning, profiles, running, work
from adapterlab.families import stream
from adapterlab.report import findings, tables
from adapterlab.training import stream_steps
from adapterlab.training.backbones import load_backbone
from adapterlab.methods.saving import ADAPTER_CONFIG, ADAPTER_WEIGHTS, load_adapter
from adapterlab.experiments.results import ResultStore, config_key

ORDERS = (("airline", "tweets/deflategate", "tweets/apple"), ("airline", "tweets/apple", "tweets/deflategate"))
SMALL = replace(profiles.PROFILES["smoke"].stream, orders=ORDERS, seeds=(0,), train=dict(max_steps=4, eval_every=2),
                swap_repeats=3, load_repeats=2)
SMALL_SMOKE = replace(profiles.PROFILES["smoke"], stream=SMALL)  # the smoke profile with the small stream


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    """A smoke result store of its own (under the root `folder`), with the small stream's settings."""
    with pytest.MonkeyPatch.context() as mp:
        folder = tmp_path_factory.mktemp("stream")
        mp.setitem(profiles.PROFILES, "smoke", SMALL_SMOKE)
        executed = []
        original = running.execute
        mp.setattr(running, "execute", lambda spec: executed.append(config_key(spec["key"])) or original(spec))
        # interrupted: only the first three steps ran
        store = ResultStore(folder / "data" / "results" / "smoke")
        for step in work.ready(stream.steps("smoke", store), store)[:3]:
            running.store_result(store, step, original(running.pack(step, store)))
        first = len(stream.steps("smoke"))
        records = running.run_plan("smoke", "stream", progress=False, root=folder)  # resumes
        steps = stream.StepRecords(SMALL, records)
        yield dict(folder=folder, records=records, steps=steps, table=stream.stream_table(steps), executed=executed,
                   store=store, total=first)


def test_an_interrupted_stream_resumes_without_redoing_steps(out):
    assert len(out["executed"]) == len(set(out["executed"])) == out["total"] - 3
    assert work.ready(stream.steps("smoke", out["store"]), out["store"]) == []
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(profiles.PROFILES, "smoke", SMALL_SMOKE)
        again = running.run_plan("smoke", "stream", progress=False, root=out["folder"])  # everything stored: nothing runs
    assert len(out["executed"]) == out["total"] - 3 and again == out["records"]


def test_the_table_is_built_like_every_familys_and_regenerate_rebuilds_it(out):
    """tables.get is the one way from the stream's store to stream.csv (Family.build, as for every family);
    regenerate credits the file notebook 08 wrote to it, as it credits every family's."""
    from adapterlab.course import regenerate

    assert families.get("stream").build is stream.build
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(profiles.PROFILES, "smoke", SMALL_SMOKE)
        result = tables.get("stream", "smoke", root=out["folder"])
        assert result.family == "stream" and result.budget.empty and result.grid is None
        assert result.table.equals(out["table"])
        before = regenerate.written(out["folder"], "smoke")
        (path,) = tables.write(result, "smoke", out["folder"])
        assert path.name == "stream.csv" and findings.load("smoke", "stream", out["folder"]).shape == out["table"].shape
        outcomes = [dict(notebook="08_stream_of_tasks.ipynb", ok=True, results=[], figures=[])]
        regenerate.credit_files(outcomes, before, regenerate.written(out["folder"], "smoke"))
    assert outcomes[0]["results"] == [str(path)]


def test_the_dry_run_counts_every_step_stored_and_missing(out, tmp_path, monkeypatch):
    """costs.dry_run counts the stream's units (planning.work) as it counts every family's runs: all missing in an
    empty store, all stored (with the seconds their records measured) once the stream has run."""
    s = profiles.get("smoke").stream
    longer = len(s.orders[0]) - 1  # each order adds this many sequential steps after the shared first one
    expected = len(s.seeds) * (2 * len(s.tasks) + len(s.orders) * longer + len(s.orders)) + 1  # + one serving step
    text = io.StringIO()
    counts = costs.dry_run("smoke", families=("stream",), file=text, root=tmp_path)  # an empty store
    assert counts == {"stream": expected, "total": expected}
    assert f"stream: {expected} units, 0 stored in " in text.getvalue() and f"{expected} missing" in text.getvalue()
    assert text.getvalue().count("  missing  ") == expected
    everything = costs.dry_run("smoke", verbose=False, file=io.StringIO(), root=tmp_path)
    assert everything["stream"] == expected and everything["total"] == sum(everything[f.name] for f in families.registered())
    monkeypatch.setitem(profiles.PROFILES, "smoke", SMALL_SMOKE)
    text = io.StringIO()
    counts = costs.dry_run("smoke", families=("stream",), file=text, root=out["folder"])
    hours = sum(r["run_seconds"] for r in out["records"]) / 3600
    assert counts["stream"] == len(out["records"]) == len(planning.work("smoke", "stream", out["store"]))
    assert f"{counts['stream']} stored in {out['store'].path('stream')} ({hours:,.2f} h of run_seconds), 0 missing" \
        in text.getvalue()


def test_shared_work_runs_once(monkeypatch):
    monkeypatch.setitem(profiles.PROFILES, "smoke", SMALL_SMOKE)
    s = SMALL
    all_steps = stream.steps("smoke")
    kinds = [st.kind for st in all_steps]
    # 3 tasks alone (copies; airline's is also the sequential learner after task 1) + 2 orders x 2 later arrivals
    assert kinds.count("sequential") == 3 + 2 * 2
    assert kinds.count("adapter") == 3  # one per task and seed, whatever the order
    assert kinds.count("recall") == 2 and kinds.count("serving") == 1
    first = [stream.sequential_step(s, order[:1], 0) for order in s.orders]
    assert first[0].id == first[1].id  # the orders share their first arrival ...
    assert stream.sequential_step(s, ("airline",), 0).id in {st.id for st in all_steps}  # ... which is the copy


def test_exact_recall(out):
    steps = out["steps"]
    checks = stream.recall_checks(steps)
    assert len(checks) == 2 and checks.drop(columns=["order", "seed"]).to_numpy().all()
    # independently of the records: a fresh base with each adapter file loaded predicts what training recorded,
    # and the file on disk is the one that was hashed right after saving it
    model, tokenizer = load_backbone(SMALL.backbone, num_labels=3)
    evaluate = stream_steps.Evaluator(SMALL, tokenizer, SMALL.tasks, 0)
    for task in SMALL.tasks:
        step = stream.adapter_step(SMALL, task, 0)
        record = steps.adapter(task, 0)
        assert record == out["store"].get(step.key, "stream")  # found by what it ran: the record under its key
        folder = work.folder(out["store"], step)
        assert stream_steps.sha256_file(folder / ADAPTER_WEIGHTS) == record["adapter_sha256"][ADAPTER_WEIGHTS]
        load_adapter(model, folder)
        assert stream_steps.frozen_sha256(model) == record["base_sha256_before"] == record["base_sha256_after"]
        test = evaluate(model, task)
        assert test["classes"] == record["test"]["classes"] and test["correct"] == record["test"]["correct"]


def test_adapters_rows_are_constant_and_sequential_rows_are_measured(out):
    table = out["table"]
    for i, order in enumerate(SMALL.orders):
        m = stream.stream_matrix(table, "adapters", i)
        assert list(m.index) == list(order) and list(m.columns) == [1, 2, 3]  # tasks in arrival order x tasks seen
        m = m.to_numpy()
        for k in range(len(order)):
            assert np.all(m[k, k:] == m[k, k])  # the same examples, bit-identical predictions: equal scores
        assert np.isnan(m[np.tril_indices(len(order), -1)]).all()
        copies = stream.stream_matrix(table, "copies", i).to_numpy()
        assert all(np.all(copies[k, k:] == copies[k, k]) for k in range(len(order)))
        sequential = stream.stream_matrix(table, "sequential", i).to_numpy()
        newest = out["steps"].sequential(order, 0)["tests"]  # the sequential model after the last arrival
        assert list(sequential[:, -1]) == [newest[t]["accuracy"] for t in order]
    drops = stream.stream_drops(table)
    frame = drops[(drops["learner"] == "adapters") & (drops["order"] == 0)]
    assert len(frame) and (frame["drop"] == 0).all() and (frame["se"] == 0).all() and not frame["beyond_noise"].any()


def test_forgetting_is_the_diagonal_minus_the_last_column():
    m = np.array([[0.8, 0.7, 0.6], [np.nan, 0.9, 0.95], [np.nan, np.nan, 0.5]])
    assert np.allclose(stream.forgetting_from_matrix(m)[:2], [0.2, -0.05]) and np.isnan(stream.forgetting_from_matrix(m)[2])


def test_forgetting_of_the_sequential_learner_is_a_paired_difference(out):
    table = out["table"]
    drops = stream.stream_drops(table)
    frame = drops[(drops["learner"] == "sequential") & (drops["order"] == 0)]
    m = stream.stream_matrix(table, "sequential", 0).to_numpy()
    assert np.allclose(frame["drop"], stream.forgetting_from_matrix(m)[:-1])  # one seed: the same numbers
    n = out["steps"].sequential(("airline",), 0)["tests"]["airline"]["examples"]
    # the SE of a paired difference of n bits is at most sqrt(1 / (n - 1)) (all examples disagreeing)
    assert ((frame["se"] >= 0) & (frame["se"] <= np.sqrt(1 / (n - 1)))).all()
    # beyond the noise: the normal 95% interval of the paired difference lies above zero
    assert (frame["beyond_noise"] == ((frame["se"] > 0) & (frame["drop"] - 1.959964 * frame["se"] > 0))).all()
    # the mean over the earlier tasks joins their test examples: each task's drop weighs by its examples
    diff = stream.stream_forgetting(table, "sequential", 0)
    examples = table.drop_duplicates("task").set_index("task").loc[list(frame["task"]), "test_examples"]
    assert diff.estimate == pytest.approx(np.average(frame["drop"], weights=examples))
    assert "test sampling only" in diff.how  # one seed


def test_storage_bill_is_measured_from_the_files(out):
    steps = out["steps"]
    bill = stream.storage_bill(out["table"]).set_index(["learner", "tasks"])["bytes"]
    adapters = [steps.adapter(t, 0) for t in SMALL.orders[0]]
    for t, record in zip(SMALL.orders[0], adapters):
        folder = work.folder(out["store"], stream.adapter_step(SMALL, t, 0))
        assert record["adapter_bytes"] == sum((folder / f).stat().st_size for f in (ADAPTER_WEIGHTS, ADAPTER_CONFIG))
    base = steps.recall(SMALL.orders[0], 0)["base_bytes"]
    copies = [steps.sequential((t,), 0)["model_bytes"] for t in SMALL.orders[0]]
    for n in (1, 2, 3):
        assert bill[("adapters", n)] == base + sum(a["adapter_bytes"] for a in adapters[:n])
        assert bill[("copies", n)] == sum(copies[:n])
    # per task the adapters add an adapter file, the copies a whole model
    assert bill[("adapters", 3)] - bill[("adapters", 2)] < bill[("copies", 3)] - bill[("copies", 2)]


def test_serving_times_both_switches(out):
    serve = out["steps"].serving()
    assert len(serve["swap_seconds"]) == 3 and len(serve["load_seconds"]) == 2
    assert serve["swap_median"] > 0 and serve["load_median"] > 0 and serve["machine"]


def test_every_step_records_its_seconds_for_the_from_scratch_sum(out):
    """The serving step once lacked run_seconds, and findings' from-scratch sum over notebook 08 then failed
    (a KeyError when the README's findings were written): every kind of step must say what it cost."""
    from adapterlab.report import provenance
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(profiles.PROFILES, "smoke", SMALL_SMOKE)
        records = provenance.stored_runs("smoke", "stream", out["folder"])
        assert {r["step"] for r in records} == {"sequential", "adapter", "recall", "serving"}
        assert all(r["run_seconds"] > 0 for r in records)
        seconds, runs, what = provenance.from_scratch("smoke", "stream", out["folder"])
        assert runs == len(stream.steps("smoke")) and what == "whole runs"
        assert seconds == pytest.approx(sum(r["run_seconds"] / r.get("workers", 1) for r in records))


def test_the_sweep_worker_path_gives_the_same_record(out, tmp_path):
    step = stream.adapter_step(SMALL, "tweets/apple", 0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(profiles.PROFILES, "smoke", SMALL_SMOKE)
        result = running.execute(running.pack(step, out["store"]))
        stored = out["steps"].adapter("tweets/apple", 0)
        assert result["record"]["test"] == stored["test"]
        assert result["record"]["adapter_sha256"] == stored["adapter_sha256"]
        assert set(result["files"]) == {ADAPTER_WEIGHTS, ADAPTER_CONFIG}
        recall = stream.recall_step(SMALL, SMALL.orders[0], 0, {t: out["steps"].adapter(t, 0)["adapter_sha256"][
            ADAPTER_WEIGHTS] for t in SMALL.orders[0]})
        spec = running.pack(recall, out["store"])  # carries the adapters' bytes: no shared disk needed
        assert running.execute(spec)["record"]["tests"] == out["steps"].recall(SMALL.orders[0], 0)["tests"]


def test_prune_removes_finished_model_files_but_keeps_adapters(out):
    folder = out["folder"] / "data" / "results" / "smoke" / "stream_files"
    assert not list(folder.glob(f"*/{stream_steps.MODEL_FILE}"))
    assert len(list(folder.glob(f"*/{ADAPTER_WEIGHTS}"))) == 3


# ---------------------------------------------------------------- bad input

def test_a_missing_head_names_the_fix():
    model, _ = load_backbone("tiny", num_labels=3)
    heads = stream_steps.Heads(model)
    heads.keep("airline")
    with pytest.raises(ValueError, match=r"no head for task 'tweets/apple'.*trained on \['airline'\].*Train it"):
        heads.use("tweets/apple")


def test_an_adapter_on_another_base_is_refused(out):
    folder = work.folder(out["store"], stream.adapter_step(SMALL, "airline", 0))
    other, _ = load_backbone("tiny-t5")
    with pytest.raises(ValueError, match="different base model.*Load it into the base model it was trained on"):
        load_adapter(other, folder)


def test_unknown_domains_and_bad_orders_are_refused():
    with pytest.raises(ValueError, match="unknown tweet domain 'tweets/skiing'.*tweets/apple"):
        stream.check_settings(replace(SMALL, orders=(("airline", "tweets/skiing"),)))
    with pytest.raises(ValueError, match="must start with the same task"):
        stream.check_settings(replace(SMALL, orders=(("airline", "tweets/apple"), ("tweets/apple", "airline"))))


def test_a_sequential_step_without_its_predecessor_names_it(tmp_path):
    step = stream.sequential_step(SMALL, ("airline", "tweets/apple"), 0)
    with pytest.raises(ValueError, match="needs the weights after airline; run that step first"):
        stream_steps.run_sequential(step.key, previous=tmp_path, out=tmp_path / "out")


def test_a_table_without_its_steps_names_the_missing_step_and_the_fix(out):
    with pytest.raises(ValueError, match=r"lack its step \('recall', \('airline', 'tweets/deflategate', "
                                         r"'tweets/apple'\), 0\); run the stream's plan first: tables.get\('stream'"):
        stream.build(SMALL_SMOKE, [r for r in out["records"] if r["step"] != "recall"])
    with pytest.raises(ValueError, match="unknown learner 'forgetful'; choose one of sequential, adapters, copies"):
        out["steps"].trained("forgetful", SMALL.orders[0], "airline", 0)


def test_the_sequential_model_file_round_trips(tmp_path):
    torch.manual_seed(0)
    model, _ = load_backbone("tiny", num_labels=3)
    heads = stream_steps.Heads(model)
    heads.keep("tweets/apple")
    stream_steps.save_model(model, heads, tmp_path / stream_steps.MODEL_FILE)
    fresh, _ = load_backbone("tiny", num_labels=3)
    with torch.no_grad():
        for p in fresh.parameters():
            p.add_(1.0)
    again = stream_steps.Heads(fresh)
    stream_steps.load_model(fresh, again, tmp_path / stream_steps.MODEL_FILE)
    again.use("tweets/apple")
    for (n, a), (_, b) in zip(model.named_parameters(), fresh.named_parameters()):
        assert torch.equal(a, b), n


def test_the_adapters_accuracy_gap_is_paired_and_read_out(out):
    """The reading's adapters-minus-copies gap is the difference of the two learners' final columns (over every
    task's test examples), read from stream.csv, and the reading says how many of the runs behind it converged."""
    table = out["table"]
    final = {learner: stream.stream_matrix(table, learner, 0).iloc[:, -1] for learner in ("adapters", "copies")}
    examples = table.drop_duplicates("task").set_index("task")["test_examples"]
    gap = ((final["adapters"] - final["copies"]) * examples).sum() / examples[list(SMALL.orders[0])].sum()
    line = next(l for l in stream.read(table)[0] if l.startswith("- adapters minus the fine-tuned copies"))
    # one seed: the examples' noise only; a tiny model trained 4 steps may predict alike in both learners, and
    # then the gap is exactly zero, with no sampling noise
    head = f"{findings.pts(gap, True)} ["
    assert head in line and ("test sampling only" in line or "identical predictions: no sampling noise" in line)
    adapters = table[table["learner"] == "adapters"].drop_duplicates(["task", "seed"])
    assert f"converged: {int(adapters['converged'].sum())} of {len(adapters)} adapters (frozen base)" in line
