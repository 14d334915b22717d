"""Your own data as a task (training/files.py through tasks.load_task): the four formats, sentence pairs,
string and integer labels, the seeded stratified split and what the note says of it, hf: offline, and
every bad input's one-line error through the command line (in process: no model is loaded)."""
import os

os.environ["HF_HUB_OFFLINE"] = "1"

import json
import math

import numpy as np
import pandas as pd
import pytest

from adapterlab.__main__ import main
from adapterlab.training import files, tasks
from adapterlab.training.backbones import default_tokenizer
from adapterlab.training.tasks import encode, load_task

WORDS = {"pos": "good great lovely", "neg": "bad awful poor", "meh": "fine okay average"}


def reviews(n=60, seed=0):
    """n rows: an id, a review whose words give its class away, the class as a word and as stars."""
    rng = np.random.default_rng(seed)
    labels = rng.choice(list(WORDS), n, p=[0.5, 0.3, 0.2])
    return pd.DataFrame({"id": range(n), "review": [f"review {i}: {WORDS[c]}" for i, c in enumerate(labels)],
                         "second": [f"reply {i}" for i in range(n)], "sentiment": labels,
                         "stars": [{"pos": 5, "neg": 1, "meh": 3}[c] for c in labels]})


def write(frame, path):
    writers = {".csv": lambda p: frame.to_csv(p, index=False), ".tsv": lambda p: frame.to_csv(p, sep="\t", index=False),
               ".jsonl": lambda p: frame.to_json(p, orient="records", lines=True),
               ".parquet": lambda p: frame.to_parquet(p, index=False)}
    writers[path.suffix](path)
    return str(path)


def rows(task, split):
    return list(zip(*[task.splits[split][f] for f in (*task.text_fields, "label")]))


# ---------------------------------------------------------------- formats, columns, labels

@pytest.mark.parametrize("suffix", [".tsv", ".jsonl", ".parquet"])
def test_every_format_gives_the_task_the_csv_gives(tmp_path, suffix):
    frame = reviews()
    csv = load_task(write(frame, tmp_path / "r.csv"), text_columns="review", label_column="sentiment")
    other = load_task(write(frame, tmp_path / f"r{suffix}"), text_columns="review", label_column="sentiment")
    assert isinstance(other, tasks.Task) and other.kind == "classification" and other.metric == "accuracy"
    assert other.label_names == csv.label_names == ["meh", "neg", "pos"]
    for split in ("train", "validation", "test"):
        assert rows(other, split) == rows(csv, split)


def test_the_one_string_form_is_the_same_task_and_canonical(tmp_path):
    path = write(reviews(), tmp_path / "r.csv")
    spec = files.spec(path, text_columns=["review"], label_column="sentiment")
    assert spec == f"{path}?text=review&label=sentiment"
    assert files.spec(path, text_columns="text", label_column="label") == path  # defaults left out
    assert rows(load_task(spec), "test") == rows(load_task(path, text_columns="review", label_column="sentiment"), "test")
    assert files.is_source(spec) and files.is_source("hf:imdb") and not files.is_source("airline")


def test_sentence_pairs_encode_as_pairs(tmp_path):
    task = load_task(write(reviews(), tmp_path / "r.csv"), text_columns=["review", "second"], label_column="stars")
    assert task.text_fields == ("review", "second")
    encoded = encode(task, default_tokenizer(), max_length=32)["train"]
    assert 1 in encoded[0]["token_type_ids"]  # the second text is segment B


def test_integer_labels_keep_numeric_order_and_string_labels_alphabetical(tmp_path):
    frame = reviews().assign(stars=lambda f: f["stars"].map({1: 2, 3: 9, 5: 10}))
    task = load_task(write(frame, tmp_path / "r.jsonl"), text_columns="review", label_column="stars")
    assert task.label_names == ["2", "9", "10"]  # not "10" < "2"
    first = task.splits["train"][0]
    expected = frame.set_index("review").loc[first["review"], "stars"]
    assert task.label_names[first["label"]] == str(expected)
    words = load_task(write(frame, tmp_path / "r.csv"), text_columns="review", label_column="sentiment")
    assert words.label_names == ["meh", "neg", "pos"]


# ---------------------------------------------------------------- splits

def test_the_split_is_stratified_seeded_and_said(tmp_path):
    frame = reviews(200)
    path = write(frame, tmp_path / "r.csv")
    task = load_task(path, text_columns="review", label_column="sentiment")
    sizes = {s: len(d) for s, d in task.splits.items()}
    # 200 rows cannot give validation 200 examples: it takes the 30% the data allow (files.validation_size)
    assert sizes == {"train": 120, "validation": 60, "test": 20}
    overall = np.bincount(np.concatenate([d["label"] for d in task.splits.values()]), minlength=3) / 200
    for split in ("validation", "test"):  # stratified: each class within one example of its share
        counts = np.bincount(task.splits[split]["label"], minlength=3)
        assert np.all(np.abs(counts - overall * sizes[split]) <= 1), (split, counts, overall)
    assert "seeded 60/30/10 split" in task.note and "stratified by label" in task.note
    assert f"seed {tasks.SPLIT_SEED}" in task.note
    seen = [set(d["review"]) for d in task.splits.values()]
    assert sum(map(len, seen)) == len(set.union(*seen)) == 200  # every row in exactly one split
    (tmp_path / "copy").mkdir()
    again = load_task(write(frame, tmp_path / "copy" / "r.csv"), text_columns="review", label_column="sentiment")
    assert rows(again, "test") == rows(task, "test")  # the split depends on the seed, not on the run


def test_given_validation_and_test_files_are_used_and_said(tmp_path):
    frame = reviews(100)
    train, dev, test = (write(part, tmp_path / name) for part, name in
                        ((frame[:70], "train.csv"), (frame[70:85], "dev.jsonl"), (frame[85:], "test.parquet")))
    task = load_task(train, text_columns="review", label_column="sentiment", validation=dev, test=test)
    assert {s: len(d) for s, d in task.splits.items()} == {"train": 70, "validation": 15, "test": 15}
    assert f"Validation: {dev}." in task.note and f"Test: {test}." in task.note and "split" not in task.note
    only_test = load_task(train, text_columns="review", label_column="sentiment", test=test)
    assert {s: len(d) for s, d in only_test.splits.items()} == {"train": 49, "validation": 21, "test": 15}
    assert "Validation: a seeded 70/30 split" in only_test.note
    only_validation = load_task(train, text_columns="review", label_column="sentiment", validation=dev)
    assert {s: len(d) for s, d in only_validation.splits.items()} == {"train": 63, "validation": 15, "test": 7}
    assert "Test: a seeded 90/10 split" in only_validation.note


@pytest.mark.parametrize("rows, size", [
    (10, 3), (300, 90), (600, 180), (666, 199),  # under 667 rows 200 would take more than 30%: the 30% allowed
    (667, 200), (800, 200), (999, 200),  # 200 allowed, and more than a fifth
    (1000, 200), (1001, 201), (50_000, 10_000)])  # a fifth
def test_a_carved_validation_split_holds_a_fifth_and_200_where_the_data_allow(rows, size):
    assert files.validation_size(rows) == size
    assert rows * files.VALIDATION_SHARE <= size <= max(rows * files.VALIDATION_MAX_SHARE, rows * files.VALIDATION_SHARE)
    # train keeps at least 60% of the file beside a tenth for test
    assert rows - size - math.ceil(rows * files.HELD_OUT) >= 0.6 * rows - 1


def test_a_class_too_small_to_stratify_is_split_plainly_and_said(tmp_path):
    frame = reviews(40)
    frame.loc[0, "sentiment"] = "rare"  # one example: it cannot be in every split
    task = load_task(write(frame, tmp_path / "r.csv"), text_columns="review", label_column="sentiment")
    assert "not stratified" in task.note and "rare" in task.label_names
    assert sum(len(d) for d in task.splits.values()) == 40


def test_train_size_subsamples_the_file_tasks_train_split(tmp_path):
    task = load_task(write(reviews(), tmp_path / "r.csv"), train_size=10, seed=3, text_columns="review",
                     label_column="sentiment")
    assert len(task.splits["train"]) == 10 and "seeded subset of 10" in task.note


# ---------------------------------------------------------------- bad input: one line, exit 2, the fix

def cli_error(capsys, *args):
    """Run `train` in process with a file task; return its one error line (after checking exit 2)."""
    status = main(["train", "--backbone", "tiny", "--max-steps", "1", *args])
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if line.startswith("error:")]
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def data(tmp_path):
    return write(reviews(), tmp_path / "r.csv")


def test_a_missing_file_says_so(capsys, tmp_path):
    line = cli_error(capsys, "--task", str(tmp_path / "nope.csv"))
    assert "nope.csv' does not exist" in line and "check the path" in line


def test_a_misspelled_column_lists_the_columns_and_suggests_the_closest(capsys, data):
    line = cli_error(capsys, "--task", data, "--text-column", "reveiw", "--label-column", "sentiment")
    assert "no column 'reveiw'; did you mean 'review'?" in line
    assert "Its columns: id, review, second, sentiment, stars" in line and "--text-column" in line
    line = cli_error(capsys, "--task", data, "--text-column", "review", "--label-column", "Stars")
    assert "did you mean 'stars'?" in line and "--label-column" in line


def test_a_missing_default_column_names_the_option(capsys, data):
    line = cli_error(capsys, "--task", data)  # no "text" column: the default is not there
    assert "no column 'text'" in line and "--text-column" in line


def test_a_label_column_with_one_class(capsys, tmp_path):
    path = write(reviews().assign(sentiment="pos"), tmp_path / "r.csv")
    line = cli_error(capsys, "--task", path, "--text-column", "review", "--label-column", "sentiment")
    assert "has one class ('pos')" in line and "--label-column" in line


def test_empty_texts_name_their_rows(capsys, tmp_path):
    frame = reviews()
    frame.loc[[3, 7], "review"] = ["", "   "]
    line = cli_error(capsys, "--task", write(frame, tmp_path / "r.jsonl"), "--text-column", "review",
                     "--label-column", "sentiment")
    assert "2 of 60 rows have no text in 'review' (data rows 4, 8" in line and "fill them in or remove" in line


def test_missing_labels_name_their_rows(capsys, tmp_path):
    frame = reviews()
    frame.loc[5, "sentiment"] = None
    line = cli_error(capsys, "--task", write(frame, tmp_path / "r.parquet"), "--text-column", "review",
                     "--label-column", "sentiment")
    assert "1 rows have no label in 'sentiment' (data rows 6" in line


def test_a_file_that_is_not_utf8(capsys, tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("text,label\ncafé,a\nthé,b\n".encode("latin-1"))
    line = cli_error(capsys, "--task", str(path))
    assert "is not UTF-8 text (byte 0xe9 on line 2)" in line and "iconv -f latin1 -t utf-8" in line


def test_other_unreadable_input(capsys, tmp_path):
    (tmp_path / "empty.csv").write_text("")
    assert "is empty" in cli_error(capsys, "--task", str(tmp_path / "empty.csv"))
    (tmp_path / "header.csv").write_text("text,label\n")
    assert "has no rows" in cli_error(capsys, "--task", str(tmp_path / "header.csv"))
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    assert "cannot read" in cli_error(capsys, "--task", str(tmp_path / "bad.jsonl"))
    (tmp_path / "data.txt").write_text("text,label\n")
    assert "must end in .csv, .tsv, .jsonl, .parquet" in cli_error(capsys, "--task", str(tmp_path / "data.txt"))
    small = write(reviews(6), tmp_path / "small.csv")
    line = cli_error(capsys, "--task", small, "--text-column", "review", "--label-column", "sentiment")
    assert "only 6 rows" in line and "--validation FILE --test FILE" in line


def test_column_options_on_a_built_in_task_are_refused(capsys):
    assert "not the built-in task 'synthetic'" in cli_error(capsys, "--task", "synthetic", "--text-column", "x")


def test_hf_offline_says_how_to_use_a_local_file(capsys):
    line = cli_error(capsys, "--task", "hf:some-user/reviews:plain")
    assert "cannot load hf:some-user/reviews:plain: offline mode is on" in line
    assert "load_dataset('some-user/reviews', 'plain')" in line and "--task reviews.csv" in line


def test_an_unknown_task_also_names_the_file_formats():
    with pytest.raises(ValueError, match=r"unknown task 'imdb'.*\.csv, \.tsv, \.jsonl, \.parquet.*hf:NAME"):
        load_task("imdb")


# ---------------------------------------------------------------- the command line

def test_train_help_lists_every_built_in_task_from_the_registry(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["train", "--help"])
    assert exit.value.code == 0
    out = capsys.readouterr().out
    for name in tasks.TASKS:
        assert f"  {name} " in out, name
    assert "tweets/claritin" in out and "--text-column" in out and "hf:NAME" in out


def test_train_on_a_file_says_which_split_it_used(capsys, data):
    status = main(["train", "--backbone", "tiny", "--task", data, "--text-column", "review", "--label-column",
                   "sentiment", "--method", "houlsby", "--bottleneck", "8", "--max-steps", "2", "--batch-size", "16",
                   "--device", "cpu", "--json"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "data: " in out and "seeded 60/30/10 split" in out
    record = json.loads(out.strip().splitlines()[-1])
    assert record["task"] == f"{data}?text=review&label=sentiment"  # the run's name carries its columns


@pytest.fixture
def lengths_known(tmp_path):
    """A file whose 20 texts have known token lengths (train, validation and test alike, so the train split
    is the whole file): 19 of 10 tokens ([CLS], 8 words, [SEP]) and one of 30."""
    texts = [("good " if i % 2 else "bad ") * 8 for i in range(19)] + ["good " * 28]
    frame = pd.DataFrame({"review": texts, "sentiment": ["neg" if i % 2 == 0 else "pos" for i in range(20)]})
    path = write(frame, tmp_path / "r.csv")
    return ["--task", path, "--validation", path, "--test", path, "--text-column", "review", "--label-column",
            "sentiment"]


def train_lines(capsys, *args):
    """Train one step on the tiny backbone; (the max_length line, the run's record)."""
    status = main(["train", "--backbone", "tiny", "--max-steps", "1", "--batch-size", "16", "--device", "cpu",
                   "--json", *args])
    out = capsys.readouterr().out
    assert status == 0, out
    return [line for line in out.splitlines() if line.startswith("max_length")], json.loads(out.splitlines()[-1])


@pytest.mark.parametrize("given,chosen,cut", [(None, 16, 1), ("30", 30, 0), ("29", 29, 1)])
def test_train_on_a_file_fits_max_length_to_its_texts_and_says_what_it_cuts(capsys, lengths_known, given, chosen,
                                                                            cut):
    """The 95th percentile of 19 x 10 and 1 x 30 tokens is 10, rounded up to 16: the text of 30 is cut.
    A given --max-length is kept; the text of 30 tokens fits 30 whole and is cut at 29."""
    lines, record = train_lines(capsys, *lengths_known, *(["--max-length", given] if given else []))
    how = "--max-length" if given else "fitted to the train texts: their 95th percentile in tokens"
    assert len(lines) == 1 and lines[0].startswith(f"max_length {chosen} ({how}")
    assert lines[0].endswith(f"it cuts {cut} of 20 train texts (the longest has 30 tokens)")
    assert record["config"]["max_length"] == chosen


def test_a_max_length_beyond_the_models_limit_is_refused(capsys, lengths_known):
    line = cli_error(capsys, *lengths_known, "--max-length", "513")
    assert "--max-length 513 is more than tiny reads (512 tokens): use at most 512" in line
    assert "--max-length must be a positive number" in cli_error(capsys, *lengths_known, "--max-length", "0")


def test_a_built_in_task_keeps_max_length_128(capsys):
    lines, record = train_lines(capsys, "--task", "synthetic")
    assert lines == [] and record["config"]["max_length"] == 128


def test_a_fitted_max_length_stops_at_the_models_limit(capsys, tmp_path):
    texts = ["good " * 598] * 2 + ["good bad"] * 18  # two of 600 tokens: 10%, more than the 5% the fit cuts
    path = write(pd.DataFrame({"review": texts, "sentiment": ["pos", "neg"] * 10}), tmp_path / "long.csv")
    lines, record = train_lines(capsys, "--task", path, "--validation", path, "--test", path, "--text-column",
                                "review", "--label-column", "sentiment")
    assert lines == ["max_length 512 (the 512-token limit of the model): it cuts 2 of 20 train texts "
                     "(the longest has 600 tokens)"]
    assert record["config"]["max_length"] == 512
