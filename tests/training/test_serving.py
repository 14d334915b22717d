"""Keep and serve (training/serving.py): train --task FILE --output-dir, predict, evaluate, on the tiny
backbone. The folder is complete, names its base portably and loads back to the same function; predict
keeps the input's columns; a failed training leaves no folder (and no half-written one); a wrong base
gets load_adapter's own error."""
import os

os.environ["HF_HUB_OFFLINE"] = "1"

import json
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

import adapterlab as al
from adapterlab.__main__ import main
from adapterlab.training import serving
from adapterlab.training.backbones import load_backbone
from adapterlab.training.tasks import load_task
from adapterlab.training.train import RunConfig, TrainConfig

from test_files import reviews, write

TRAIN = ["train", "--backbone", "tiny", "--method", "houlsby", "--bottleneck", "8", "--max-steps", "30",
         "--batch-size", "16", "--lr", "3e-3", "--device", "cpu"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One trained model folder (the CLI, in process), its training file and a new file to predict."""
    root = tmp_path_factory.mktemp("serving")
    data = write(reviews(120), root / "reviews.csv")
    new = reviews(25, seed=1).drop(columns=["sentiment", "stars"])
    status = main([*TRAIN, "--task", data, "--text-column", "review", "--label-column", "sentiment",
                   "--output-dir", str(root / "model")])
    assert status == 0
    return {"root": root, "dir": root / "model", "data": data, "new": write(new, root / "new.jsonl")}


def cli(*args):
    return subprocess.run([sys.executable, "-m", "adapterlab", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def test_the_output_dir_holds_everything_predict_needs(trained):
    folder = trained["dir"]
    assert sorted(p.name for p in folder.iterdir()) == ["adapter.json", "adapter.safetensors", "metrics.json",
                                                        "serving.json"]
    info = json.loads((folder / "serving.json").read_text())
    assert info["label_names"] == ["meh", "neg", "pos"] and info["text_columns"] == ["review"]
    # every review has 8 tokens ([CLS] review N : three words [SEP]): fitted, 8 rounds up to the floor of 16
    assert info["label_column"] == "sentiment" and info["max_length"] == 16 and info["backbone"] == "tiny"
    assert info["base_fingerprint"] == {"model_type": "bert", "hidden_size": 64, "layers": {"encoder": 2}}
    assert info["method"]["name"] == "houlsby" and info["method"]["bottleneck"] == 8
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["metric"] == "accuracy" and 0 <= metrics["test"] <= 1 and metrics["steps"] == 30
    assert not [p for p in trained["root"].iterdir() if p.name.startswith(".")]  # no staging folder left


ADDED = ["label", "p_meh", "p_neg", "p_pos"]


def test_predict_writes_a_label_and_a_probability_per_class_in_input_order(trained):
    p = cli("predict", str(trained["dir"]), "--input", trained["new"])  # stdout: CSV
    assert p.returncode == 0, p.stderr
    table = pd.read_csv(pd.io.common.StringIO(p.stdout))
    new = pd.read_json(trained["new"], lines=True)
    assert list(table.columns) == [*new.columns, *ADDED] and len(table) == 25
    assert table["id"].tolist() == new["id"].tolist() and table["review"].tolist() == new["review"].tolist()
    assert np.allclose(table[["p_meh", "p_neg", "p_pos"]].sum(axis=1), 1, atol=1e-5)
    assert (table["label"] == table[["p_meh", "p_neg", "p_pos"]].idxmax(axis=1).str[2:]).all()
    # length-bucketed batches, order restored: the same as each row predicted on its own
    model, tokenizer, info = serving.load_trained(trained["dir"])
    rows = pd.read_json(trained["new"], lines=True)
    alone = pd.concat([serving.predict(model, tokenizer, info, rows.iloc[[i]], batch_size=1) for i in range(25)])
    assert (alone["label"].to_numpy() == table["label"].to_numpy()).all()
    assert np.allclose(alone["p_pos"].to_numpy(), table["p_pos"].to_numpy(), atol=1e-5)


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".parquet"])
def test_predict_output_format_follows_the_extension(trained, capsys, suffix):
    out = trained["root"] / f"predictions{suffix}"
    assert main(["predict", str(trained["dir"]), "--input", trained["new"], "--output", str(out)]) == 0
    table = {".csv": pd.read_csv, ".tsv": lambda p: pd.read_csv(p, sep="\t"),
             ".jsonl": lambda p: pd.read_json(p, lines=True), ".parquet": pd.read_parquet}[suffix](out)
    assert list(table.columns) == ["id", "review", "second", *ADDED] and len(table) == 25


def test_an_added_column_whose_name_the_input_has_is_prefixed_predicted(trained):
    """The input keeps its own label and p_pos; the model's go beside them as predicted_label, predicted_p_pos."""
    model, tokenizer, info = serving.load_trained(trained["dir"])
    rows = reviews(6, seed=2).rename(columns={"sentiment": "label"}).assign(p_pos="mine")
    table = serving.predict(model, tokenizer, info, rows)
    assert list(table.columns) == [*rows.columns, "predicted_label", "p_meh", "p_neg", "predicted_p_pos"]
    assert table[rows.columns].equals(rows)
    assert serving.added_name("label", ["label", "predicted_label"]) == "predicted_predicted_label"


def test_evaluate_scores_a_labelled_file_as_predict_sees_it(trained, capsys):
    assert main(["evaluate", str(trained["dir"]), "--input", trained["data"], "--json"]) == 0
    scores = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert scores["examples"] == 120 and scores["metric"] == "accuracy"
    model, tokenizer, info = serving.load_trained(trained["dir"])
    rows = pd.read_csv(trained["data"])
    predicted = serving.predict(model, tokenizer, info, rows)["label"]
    assert scores["accuracy"] == pytest.approx((predicted == rows["sentiment"]).mean())
    # on the run's own test split, evaluate gives the number training reported (train.evaluate's)
    task = load_task(trained["data"], text_columns="review", label_column="sentiment")
    test = task.splits["test"].to_pandas()
    test = test.assign(sentiment=[task.label_names[i] for i in test["label"]]).drop(columns="label")
    assert main(["evaluate", str(trained["dir"]), "--input", write(test, trained["root"] / "test.csv"), "--json"]) == 0
    on_test = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert on_test["accuracy"] == json.loads((trained["dir"] / "metrics.json").read_text())["test"]
    assert main(["evaluate", str(trained["dir"]), "--input", trained["data"]]) == 0
    assert "accuracy" in capsys.readouterr().out


def test_loading_onto_a_wrong_base_gets_load_adapters_error(trained, capsys):
    status = main(["predict", str(trained["dir"]), "--input", trained["new"], "--backbone", "default"])
    err = capsys.readouterr().err
    assert status == 2 and "trained on a different base model: hidden_size: saved 64, this model 384" in err


def test_serving_input_errors_name_the_fix(trained, capsys):
    other = write(pd.DataFrame({"text": ["a b c"]}), trained["root"] / "other.csv")
    assert main(["predict", str(trained["dir"]), "--input", other]) == 2
    assert "no column 'review'" in capsys.readouterr().err
    assert main(["predict", str(trained["root"] / "nowhere"), "--input", other]) == 2
    assert "no trained model at" in capsys.readouterr().err
    unknown = write(reviews(5).assign(sentiment="great"), trained["root"] / "unknown.csv")
    assert main(["evaluate", str(trained["dir"]), "--input", unknown]) == 2
    assert "labels 'great' in 'sentiment' are not among the known ones (meh, neg, pos)" in capsys.readouterr().err


def test_an_existing_output_dir_is_refused_before_training(trained, capsys):
    status = main([*TRAIN, "--task", trained["data"], "--text-column", "review", "--label-column", "sentiment",
                   "--output-dir", str(trained["dir"])])
    assert status == 2 and "already exists and is not empty" in capsys.readouterr().err


def test_a_failed_training_leaves_no_folder_half_written(trained, monkeypatch):
    def fails_after_writing(config, save_to=None, **kwargs):
        (save_to / "adapter.safetensors").write_bytes(b"half")
        raise RuntimeError("killed mid-run")

    monkeypatch.setattr(serving, "run", fails_after_writing)
    config = RunConfig(backbone="tiny", task=f"{trained['data']}?text=review&label=sentiment",
                       train=TrainConfig(max_steps=1))
    before = sorted(p.name for p in trained["root"].iterdir())
    with pytest.raises(RuntimeError, match="killed mid-run"):
        serving.train_to_dir(config, trained["root"] / "failed", device="cpu", progress=False)
    assert sorted(p.name for p in trained["root"].iterdir()) == before  # neither the folder nor its staging


@pytest.mark.parametrize("method", ["full", "top-k", "layernorm", "bitfit", "lora"])
def test_save_trained_keeps_the_changed_weights_of_every_method(tmp_path, method):
    """After training (here: noise on what trains), the saved folder loads back to the same function."""
    task = load_task(write(reviews(), tmp_path / "r.csv"), text_columns=["review", "second"], label_column="stars")
    model, tokenizer = load_backbone("tiny", num_labels=task.num_labels)
    al.adapt(model, method)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.05 * torch.randn_like(p))
    serving.save_trained(model, task, tmp_path / "kept", backbone="tiny", max_length=64)
    loaded, tokenizer, info = serving.load_trained(tmp_path / "kept")
    rows = task.splits["test"].to_pandas()
    ours = serving.predict(model, tokenizer, info, rows)
    theirs = serving.predict(loaded, tokenizer, info, rows)
    assert info["text_columns"] == ["review", "second"] and info["label_column"] == "stars"
    assert info["label_names"] == ["1", "3", "5"]
    assert ours.equals(theirs)


# ---------------------------------------------------------------- the base, named portably

def strings(value):
    """Every string in a JSON value, keys included."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


@pytest.fixture
def local_base(tmp_path):
    """A tiny base saved as a model folder (as a downloaded model is), in <tmp>/project/bases/tiny-bert."""
    model, tokenizer = load_backbone("tiny", num_labels=3)
    folder = tmp_path / "project" / "bases" / "tiny-bert"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_serving_json_names_a_local_base_by_its_path_from_the_saved_folder(tmp_path, local_base, monkeypatch):
    task = load_task(write(reviews(), tmp_path / "r.csv"), text_columns="review", label_column="sentiment")
    model, tokenizer = load_backbone(str(local_base), num_labels=task.num_labels)
    al.adapt(model, "houlsby", bottleneck=8)
    kept = tmp_path / "project" / "runs" / "mine"
    serving.save_trained(model, task, kept, backbone=str(local_base))  # the absolute path, as a user may give it
    info = json.loads((kept / "serving.json").read_text())
    assert info["backbone"] == "../../bases/tiny-bert" and info["task"] == "r.csv"
    assert not [s for s in strings(info) if os.path.isabs(s) or str(tmp_path) in s]
    rows = task.splits["test"].to_pandas()
    expected = serving.predict(model, tokenizer, info, rows)
    # the project moves (another machine, another folder): base and model move together and still serve
    moved = tmp_path / "elsewhere"
    shutil.move(tmp_path / "project", moved)
    monkeypatch.chdir(tmp_path)  # and it is loaded from another working folder
    loaded, tokenizer, _ = serving.load_trained(moved / "runs" / "mine")
    assert serving.predict(loaded, tokenizer, info, rows).equals(expected)
    # without its base: one line naming the fix; --backbone gives the base's new place
    shutil.move(moved / "bases", tmp_path / "bases")
    with pytest.raises(FileNotFoundError, match=r"trained on the model folder \.\./\.\./bases/tiny-bert .* "
                                                r"give the base model's folder with --backbone PATH"):
        serving.load_trained(moved / "runs" / "mine")
    loaded, tokenizer, _ = serving.load_trained(moved / "runs" / "mine", backbone=str(tmp_path / "bases" / "tiny-bert"))
    assert serving.predict(loaded, tokenizer, info, rows).equals(expected)


def test_serving_json_keeps_a_name_as_given(trained, tmp_path):
    """A name (default, tiny, a hub id) is looked up where the folder is loaded, not where it was trained."""
    text = (trained["dir"] / "serving.json").read_text()
    assert json.loads(text)["backbone"] == "tiny" and str(trained["root"]) not in text
    assert serving.portable_backbone("default", tmp_path) == "default"
    assert serving.portable_backbone("bert-base-uncased", tmp_path) == "bert-base-uncased"
    assert serving.located_backbone("bert-base-uncased", tmp_path) == "bert-base-uncased"
    # a name this machine cannot load: load_backbone's reason, then how to serve the folder anyway
    moved = shutil.copytree(trained["dir"], tmp_path / "hub-model")
    info = json.loads((moved / "serving.json").read_text())
    (moved / "serving.json").write_text(json.dumps({**info, "backbone": "some-user/not-cached"}))
    with pytest.raises(ValueError, match=r"cannot load backbone 'some-user/not-cached': offline mode is on.* "
                                         r"To serve .*hub-model, give a copy of its base with --backbone PATH\.$"):
        serving.load_trained(moved)
