"""adapterlab with transformers.Trainer: al.adapt, then Trainer's own loop, leaves the frozen weights as
they were and moves the adapters; save_trained makes the result servable, and `evaluate` reads the user's
own file with it. This is the README's Python path ("Your own model and data"), on the tiny backbone and a
small file."""
import inspect
import json
import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"

import torch
from transformers import DataCollatorWithPadding, Trainer, TrainingArguments

import adapterlab as al
from adapterlab.__main__ import main
from adapterlab.training import serving
from adapterlab.training.backbones import load_backbone
from adapterlab.training.tasks import encode, load_task

from test_files import reviews, write


def test_trainer_moves_only_what_adapt_left_trainable_and_the_result_serves(tmp_path, capsys):
    path = write(reviews(), tmp_path / "reviews.csv")
    # --- the README's Python path, with "tiny" for "default" ---
    task = load_task(path, text_columns="review", label_column="sentiment")
    model, tokenizer = load_backbone("tiny", num_labels=task.num_labels)
    al.adapt(model, "houlsby", bottleneck=8)
    data = encode(task, tokenizer, max_length=128)
    args = TrainingArguments(str(tmp_path / "trainer"), max_steps=3, per_device_train_batch_size=8,
                             learning_rate=1e-2, report_to=[], save_strategy="no", use_cpu=True, disable_tqdm=True)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    Trainer(model=model, args=args, train_dataset=data["train"], data_collator=DataCollatorWithPadding(tokenizer)).train()
    serving.save_trained(model, task, tmp_path / "my-model", backbone="tiny")
    # --- end of the README's path ---
    moved = []
    for name, p in model.named_parameters():
        if p.requires_grad:
            moved.append(not torch.equal(p.detach().cpu(), before[name]))
        else:
            assert torch.equal(p.detach().cpu(), before[name]), f"Trainer changed the frozen {name}"
    assert any(moved) and sum(p.requires_grad for p in model.parameters()) < len(before)
    loaded, tokenizer, info = serving.load_trained(tmp_path / "my-model")
    rows = task.splits["test"].to_pandas()
    assert serving.predict(loaded, tokenizer, info, rows).equals(serving.predict(model.cpu(), tokenizer, info, rows))
    # the saved folder knows the user's columns: evaluate reads the training file with no --label-column
    assert info["text_columns"] == ["review"] and info["label_column"] == "sentiment"
    assert main(["evaluate", str(tmp_path / "my-model"), "--input", path, "--json"]) == 0
    scores = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert scores["examples"] == 60 and 0 <= scores["accuracy"] <= 1


def test_the_readme_shows_this_path():
    """Every line of the README's Python block is a line of the test above, with the README's names for the
    test's files and backbone (the README trains "default" on reviews.csv; the test "tiny" on a small file);
    only the training arguments differ (three steps here), and the imports are this file's own."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Your own model and data", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    source = inspect.getsource(test_trainer_moves_only_what_adapt_left_trainable_and_the_result_serves)
    path = source.split("# --- the README's Python path", 1)[1].split("# --- end of the README's path", 1)[0]
    here = {line.strip() for line in path.splitlines()}
    imports = {line.strip() for line in inspect.getsource(inspect.getmodule(test_the_readme_shows_this_path))
               .splitlines() if line.startswith(("import ", "from "))}
    for line in filter(None, (line.strip() for line in block.splitlines())):
        if line.startswith(("import ", "from ")):
            assert line in imports, line
        elif not line.startswith("args = "):
            mine = (line.replace('"reviews.csv"', "path").replace('"default"', '"tiny"')
                    .replace('"my-model"', 'tmp_path / "my-model"'))
            assert mine in here, f"the README's line {line!r} is not the tested path's"
