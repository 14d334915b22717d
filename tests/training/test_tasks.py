import os

os.environ["HF_HUB_OFFLINE"] = "1"  # before any Hugging Face import: the hub is never needed here

import time
from pathlib import Path

import datasets
import numpy as np
import pytest

from adapterlab.training import tasks
from adapterlab.training.backbones import default_tokenizer
from adapterlab.training.glue import GlueUnavailable
from adapterlab.training.tasks import batches, encode, load_task, padded_length, subsample, target_text, unused

GLUE_FIXTURES = Path(__file__).parents[1] / "fixtures" / "glue"


@pytest.fixture(scope="module")
def tokenizer():
    return default_tokenizer()


@pytest.fixture(scope="module")
def airline():
    return load_task("airline")


def texts(dataset, fields=("text",)):
    return list(zip(*[dataset[f] for f in fields]))


# ---------------------------------------------------------------- registry

def test_unknown_task_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown task 'glue/colaa'.*airline.*glue/cola"):
        load_task("glue/colaa")


def test_registry_has_every_task():
    expected = {"synthetic", "synthetic-pair", "airline", "glue/mnli-mm"}
    expected |= {f"glue/{t}" for t in ("cola", "sst2", "mrpc", "qqp", "stsb", "mnli", "qnli", "rte")}
    expected |= {f"tweets/{t}" for t in ("deflategate", "apple", "coachella", "self-driving", "claritin")}
    assert expected == set(tasks.TASKS)


# ---------------------------------------------------------------- airline

def test_airline_rows_labels_and_splits(airline):
    sizes = {split: len(data) for split, data in airline.splits.items()}
    assert sizes == {"train": 11540, "validation": 1442, "test": 1443}
    assert 14_000 < sum(sizes.values()) < 14_700
    assert airline.label_names == ["negative", "neutral", "positive"]
    assert airline.kind == "classification" and airline.num_labels == 3 and airline.metric == "accuracy"
    assert set(airline.splits["train"].column_names) == {"text", "label"}
    assert "11540" in airline.note


def test_airline_splits_are_stratified(airline):
    shares = {split: np.bincount(data["label"], minlength=3) / len(data) for split, data in airline.splits.items()}
    assert np.allclose(shares["train"], shares["validation"], atol=0.01)
    assert np.allclose(shares["train"], shares["test"], atol=0.01)


def test_airline_has_no_text_in_two_splits(airline):
    seen = [set(data["text"]) for data in airline.splits.values()]
    assert sum(len(s) for s in seen) == len(set.union(*seen))


def test_airline_tweets_address_an_airline(airline):
    assert all("@" in text for text in airline.splits["test"]["text"])


def test_majority_baseline_predicts_the_most_frequent_train_label(airline):
    baseline = airline.majority_baseline()
    test_labels = np.asarray(airline.splits["test"]["label"])
    assert baseline == {"accuracy": pytest.approx(np.mean(test_labels == 0))}  # 0 = negative, the majority
    assert 0.6 < baseline["accuracy"] < 0.66


# ---------------------------------------------------------------- tweet domains

TOPIC_TASKS = [f"tweets/{d}" for d in tasks.TWEET_TOPICS]


@pytest.fixture(scope="module")
def domains():
    return tasks.tweet_domains()


def test_the_domain_rule_assigns_almost_every_tweet(domains):
    # counts of the committed corpus under the rule (tasks.TWEET_TOPICS): a change of a pattern shows here
    assert len(domains) == 38158
    assert domains["domain"].value_counts().to_dict() == {
        "airline": 14638, "deflategate": 9377, "self-driving": 4720, "apple": 3795, "coachella": 3721,
        "claritin": 1693}
    dropped = domains["domain"].isna()
    assert dropped.sum() == 214 and dropped.mean() < 0.01  # coverage > 99%
    # dropped = ambiguous: no pattern or two; an assigned non-airline tweet matches exactly one
    assert set(domains.loc[dropped, "matches"]) <= {0, 2}
    assert (domains.loc[~dropped & (domains["domain"] != "airline"), "matches"] == 1).all()


def test_airline_handles_win_over_topic_patterns(domains):
    handle = domains["text"].str.contains("@(?:" + "|".join(tasks.AIRLINE_HANDLES) + ")", case=False)
    assert (domains.loc[handle, "domain"] == "airline").all()
    assert (domains.loc[~handle, "domain"] != "airline").all()


def test_no_tweet_is_in_two_domains():
    seen = {name: set().union(*(set(d["text"]) for d in load_task(name).splits.values()))
            for name in ["airline", *TOPIC_TASKS]}
    assert sum(map(len, seen.values())) == len(set().union(*seen.values()))


@pytest.mark.parametrize("name", TOPIC_TASKS)
def test_tweet_domain_splits_are_disjoint_and_stratified(name):
    task = load_task(name)
    sizes = {split: len(data) for split, data in task.splits.items()}
    total = sum(sizes.values())
    # train_test_split rounds the held-out share up: 20% of the rows, then half of those
    assert sizes["validation"] + sizes["test"] == -(-total // 5)
    assert task.label_names == ["negative", "neutral", "positive"] and task.metric == "accuracy"
    seen = [set(data["text"]) for data in task.splits.values()]
    assert sum(len(s) for s in seen) == len(set.union(*seen)) == total  # disjoint, no duplicate text
    counts = {split: np.bincount(data["label"], minlength=3) for split, data in task.splits.items()}
    # stratified: each split's count of a class is its share of the whole, up to rounding (one per cut)
    whole = sum(counts.values())
    for split, size in sizes.items():
        assert np.all(np.abs(counts[split] - whole * size / total) <= 2), (split, counts[split])


def test_class_counts_per_domain():
    counts = {name: np.bincount(np.concatenate([d["label"] for d in load_task(name).splits.values()]),
                                minlength=3).tolist() for name in TOPIC_TASKS}
    assert counts == {"tweets/deflategate": [5012, 3135, 1229], "tweets/apple": [1100, 1662, 371],
                      "tweets/coachella": [550, 912, 2259], "tweets/self-driving": [109, 4147, 455],
                      "tweets/claritin": [87, 1391, 185]}


def test_an_unknown_domain_lists_the_valid_names():
    with pytest.raises(ValueError, match="unknown tweet domain 'tweets/apples'.*airline.*tweets/apple.*tweets/claritin"):
        load_task("tweets/apples")
    with pytest.raises(ValueError, match="unknown tweet domain 'ski'.*tweets/coachella"):
        tasks.tweet_task("ski")
    assert tasks.tweet_task("apple") == "tweets/apple" and tasks.tweet_task("airline") == "airline"


# ---------------------------------------------------------------- synthetic

@pytest.mark.parametrize("name, fields, num_labels", [
    ("synthetic", ("text",), 3),
    ("synthetic-pair", ("sentence1", "sentence2"), 2),
])
def test_synthetic_is_fast_deterministic_and_balanced(name, fields, num_labels):
    tasks._load_full.cache_clear()
    start = time.perf_counter()
    first = load_task(name)
    assert time.perf_counter() - start < 1.0
    tasks._load_full.cache_clear()
    second = load_task(name)
    for split in ("train", "validation", "test"):
        assert first.splits[split][:] == second.splits[split][:]
    assert first.text_fields == fields and first.num_labels == num_labels
    counts = np.bincount(first.splits["train"]["label"])
    assert len(counts) == num_labels and counts.min() > 0.2 * len(first.splits["train"])
    all_texts = [set(texts(data, fields)) for data in first.splits.values()]
    assert sum(len(s) for s in all_texts) == len(set.union(*all_texts))  # no example in two splits


def test_synthetic_labels_follow_the_rule():
    task = load_task("synthetic")
    for text, label in zip(task.splits["test"]["text"][:200], task.splits["test"]["label"][:200]):
        words = text.split()
        positive = sum(w in tasks.POSITIVE_WORDS for w in words)
        negative = sum(w in tasks.NEGATIVE_WORDS for w in words)
        assert label == 1 + np.sign(positive - negative)


# ---------------------------------------------------------------- subsampling

def test_subsets_are_nested_for_one_seed():
    small = load_task("synthetic", train_size=100, seed=3).splits["train"]
    large = load_task("synthetic", train_size=500, seed=3).splits["train"]
    other = load_task("synthetic", train_size=100, seed=4).splits["train"]
    assert len(small) == 100 and len(large) == 500
    assert set(small["text"]) <= set(large["text"])
    assert set(small["text"]) != set(other["text"])


def test_subsample_keeps_validation_and_test():
    full, small = load_task("synthetic"), load_task("synthetic", train_size=50)
    assert small.splits["test"][:] == full.splits["test"][:]
    assert len(full.splits["train"]) == 2000  # the cached full task is not cut down
    assert "50 of the 2000" in small.note


@pytest.mark.parametrize("n", [0, 2001])
def test_subsample_rejects_impossible_sizes(n):
    with pytest.raises(ValueError, match="between 1 and 2000"):
        load_task("synthetic", train_size=n)


def test_subsample_is_a_seeded_permutation_prefix():
    dataset = load_task("synthetic").splits["train"]
    assert subsample(dataset, 10, seed=1)[:] == subsample(dataset, 10, seed=1)[:]


def test_unused_examples_are_those_the_seeded_subset_left_out_and_no_text_it_trained_on():
    dataset = datasets.Dataset.from_dict({"sentence": [f"text {i % 90}" for i in range(100)],
                                          "label": [i % 2 for i in range(100)]})  # rows 90-99 repeat rows 0-9
    trained = set(subsample(dataset, 30, seed=3)["sentence"])
    held = unused(dataset, 30, seeds=(3,), text_fields=("sentence",))
    assert not trained & set(held["sentence"])  # no row, and no text, the subset trained on
    rest = np.random.default_rng(3).permutation(100)[30:]  # subsample's permutation, after its first 30
    assert held["sentence"] == [f"text {i % 90}" for i in rest if f"text {i % 90}" not in trained]
    assert len(held) < 70  # some repeats of trained texts were dropped
    assert unused(dataset, 30, (3,), ("sentence",), n=5)["sentence"] == held["sentence"][:5]  # same order, capped
    with pytest.raises(ValueError, match="leaves none held out"):
        unused(dataset, 100, (3,), ("sentence",))


def test_unused_examples_of_several_seeds_avoid_every_subsets_texts_in_the_first_seeds_order():
    dataset = datasets.Dataset.from_dict({"sentence": [f"text {i % 90}" for i in range(100)],
                                          "label": [i % 2 for i in range(100)]})  # rows 90-99 repeat rows 0-9
    trained = {t for seed in (3, 4, 5) for t in subsample(dataset, 20, seed=seed)["sentence"]}
    held = unused(dataset, 20, (3, 4, 5), ("sentence",))
    assert not trained & set(held["sentence"])  # no row, and no repeat of a text, that any subset trained on
    order = np.random.default_rng(3).permutation(100)  # the first seed's
    assert held["sentence"] == [f"text {i % 90}" for i in order if f"text {i % 90}" not in trained]
    rows = {int(i) for seed in (3, 4, 5) for i in np.random.default_rng(seed).permutation(100)[:20]}
    assert len(held) < 100 - len(rows)  # some rows no subset holds were dropped: repeats of a trained text
    assert set(held["sentence"]) < set(unused(dataset, 20, (3,), ("sentence",))["sentence"])


# ---------------------------------------------------------------- GLUE from TSV files

@pytest.mark.parametrize("name, fields, label_names, metrics, first_test_label", [
    ("cola", ("sentence",), ["unacceptable", "acceptable"], ("mcc",), 1),
    ("sst2", ("sentence",), ["negative", "positive"], ("accuracy",), 1),
    ("mrpc", ("sentence1", "sentence2"), ["not_equivalent", "equivalent"], ("f1", "accuracy"), 1),
    ("qqp", ("question1", "question2"), ["not_duplicate", "duplicate"], ("f1", "accuracy"), 1),
    ("stsb", ("sentence1", "sentence2"), None, ("spearman", "pearson"), 5.0),
    ("mnli", ("premise", "hypothesis"), ["entailment", "neutral", "contradiction"], ("accuracy",), 1),
    ("mnli-mm", ("premise", "hypothesis"), ["entailment", "neutral", "contradiction"], ("accuracy",), 2),
    ("qnli", ("question", "sentence"), ["entailment", "not_entailment"], ("accuracy",), 0),
    ("rte", ("sentence1", "sentence2"), ["entailment", "not_entailment"], ("accuracy",), 1),
])
def test_glue_fixture_loads(name, fields, label_names, metrics, first_test_label):
    task = load_task(f"glue/{name}", glue_dir=GLUE_FIXTURES)
    assert task.text_fields == fields and task.label_names == label_names and task.metrics == metrics
    assert set(task.splits["test"].column_names) == {*fields, "label"}
    assert task.splits["test"][0]["label"] == first_test_label
    assert all(len(task.splits[s]) > 0 for s in ("train", "validation", "test"))
    assert all(text.strip() for f in fields for text in task.splits["train"][f])
    assert "official dev set" in task.note and "test" in task.note
    baseline = task.majority_baseline()
    assert set(baseline) == set(metrics)


def test_class_counts_without_reading_glue_files(monkeypatch):
    """tasks.num_labels plans runs for GLUE without its files (offline, no hub): the specs know the labels,
    and they agree with the tasks the fixtures load."""
    glue = [name for name in tasks.TASKS if name.startswith("glue/")]
    loaded = {name: load_task(name, glue_dir=GLUE_FIXTURES).num_labels for name in glue}
    monkeypatch.setattr(tasks, "_load_glue", lambda *a: pytest.fail("num_labels read GLUE's files"))
    assert {name: tasks.num_labels(name) for name in glue} == loaded
    assert loaded["glue/mnli"] == 3 and loaded["glue/stsb"] == 1 and tasks.num_labels("glue/cola:accuracy") == 2
    for name in ("airline", "synthetic", "synthetic-pair"):  # local tasks: loaded
        assert tasks.num_labels(name) == load_task(name).num_labels


def test_glue_quotes_are_plain_characters():
    """QUOTE_NONE: a stray quote in CoLA (headerless) must not swallow the next lines."""
    cola = load_task("glue/cola", glue_dir=GLUE_FIXTURES)
    assert cola.splits["test"]["sentence"][0] == 'She said "hello and left.'
    assert len(cola.splits["test"]) == 4
    assert len(cola.splits["train"]) + len(cola.splits["validation"]) == 10


def test_glue_drops_malformed_rows():
    qqp = load_task("glue/qqp", glue_dir=GLUE_FIXTURES)
    assert len(qqp.splits["train"]) + len(qqp.splits["validation"]) == 10  # 11 rows, one cut short
    mnli = load_task("glue/mnli", glue_dir=GLUE_FIXTURES)
    assert len(mnli.splits["test"]) == 3  # the "-" gold label is dropped
    assert "dropped" in qqp.note


def test_glue_mismatched_shares_train_with_matched():
    matched = load_task("glue/mnli", glue_dir=GLUE_FIXTURES)
    mismatched = load_task("glue/mnli-mm", glue_dir=GLUE_FIXTURES)
    assert matched.splits["train"][:] == mismatched.splits["train"][:]
    assert matched.splits["test"][:] != mismatched.splits["test"][:]


def test_the_command_line_takes_the_glue_dir_from_the_environment(monkeypatch):
    import argparse

    from adapterlab.__main__ import add_glue_dir_argument

    monkeypatch.setenv("ADAPTERLAB_GLUE_DIR", str(GLUE_FIXTURES))
    parser = argparse.ArgumentParser()
    add_glue_dir_argument(parser)
    glue_dir = parser.parse_args([]).glue_dir
    assert glue_dir == str(GLUE_FIXTURES) and parser.parse_args(["--glue-dir", "elsewhere"]).glue_dir == "elsewhere"
    assert load_task("glue/rte", glue_dir=glue_dir).splits["test"][0]["label"] == 1


def test_glue_missing_file_names_the_layout(tmp_path):
    with pytest.raises(ValueError, match="RTE/train.tsv"):
        load_task("glue/rte", glue_dir=tmp_path)


def test_glue_without_files_offline_fails_fast_naming_both_fixes(monkeypatch):
    monkeypatch.setenv("ADAPTERLAB_GLUE_DIR", str(GLUE_FIXTURES))  # the command line's default, not the library's
    start = time.perf_counter()
    with pytest.raises(ValueError, match="ADAPTERLAB_GLUE_DIR.*go online") as error:
        load_task("glue/cola")
    assert time.perf_counter() - start < 5
    assert isinstance(error.value, GlueUnavailable)


# ---------------------------------------------------------------- metrics

def test_cola_metric_is_matthews_correlation():
    cola = load_task("glue/cola", glue_dir=GLUE_FIXTURES)
    labels = [1, 1, 0, 0]
    assert cola.compute_metrics([1, 1, 0, 0], labels) == {"mcc": 1.0}
    assert cola.compute_metrics([0, 0, 1, 1], labels) == {"mcc": -1.0}


def test_mrpc_reports_f1_and_accuracy():
    mrpc = load_task("glue/mrpc", glue_dir=GLUE_FIXTURES)
    scores = mrpc.compute_metrics([1, 1, 0, 0], [1, 0, 1, 0])
    assert scores == {"f1": pytest.approx(0.5), "accuracy": pytest.approx(0.5)}
    logits = np.array([[0.1, 0.9], [0.8, 0.2]])  # logits are reduced with argmax
    assert mrpc.compute_metrics(logits, [1, 0])["accuracy"] == 1.0
    assert mrpc.compute_metrics([-1, -1], [1, 0])["f1"] == 0.0  # unreadable text-to-text answers


def test_stsb_reports_spearman_and_pearson():
    stsb = load_task("glue/stsb", glue_dir=GLUE_FIXTURES)
    assert stsb.kind == "regression" and stsb.num_labels == 1
    scores = stsb.compute_metrics(np.array([[0.1], [0.2], [0.9]]), [1.0, 2.0, 3.0])
    assert scores["spearman"] == pytest.approx(1.0)
    assert 0 < scores["pearson"] < 1
    assert stsb.majority_baseline() == {"spearman": 0.0, "pearson": 0.0}  # a constant has no correlation


# ---------------------------------------------------------------- encoding and batching

def test_encode_gives_model_inputs_labels_and_lengths(tokenizer):
    task = load_task("synthetic-pair", train_size=64)
    encoded = encode(task, tokenizer, max_length=32)
    row = encoded["train"][0]
    assert {"input_ids", "attention_mask", "token_type_ids", "labels", "length"} <= set(row)
    assert row["length"] == len(row["input_ids"]) <= 32
    assert 1 in row["token_type_ids"]  # the second sentence is its own segment
    assert encoded["train"]["labels"] == task.splits["train"]["label"]


def test_encode_regression_labels_are_floats(tokenizer):
    stsb = load_task("glue/stsb", glue_dir=GLUE_FIXTURES)
    batch = next(iter(batches(encode(stsb, tokenizer)["test"], tokenizer, 4, shuffle=False)))
    assert batch["labels"].dtype.is_floating_point


def test_batches_pad_dynamically_and_cover_every_row(tokenizer, airline):
    encoded = encode(load_task("airline", train_size=640), tokenizer)["train"]
    train = batches(encoded, tokenizer, batch_size=32, shuffle=True, seed=0)
    seen = []
    for batch in train:
        assert batch["input_ids"].shape[1] < 128
        assert batch["input_ids"].shape[1] == batch["attention_mask"].sum(1).max()  # padded to its longest row
        seen += batch["index"].tolist()
    assert len(train) == 20 and sorted(seen) == list(range(640))


def test_length_bucketing_saves_padding(tokenizer):
    encoded = encode(load_task("airline", train_size=640), tokenizer)["train"]
    padded = sum(b["input_ids"].numel() for b in batches(encoded, tokenizer, 32, shuffle=True, seed=0))
    assert padded < 32 * 20 * max(encoded["length"])
    assert padded < 1.2 * sum(encoded["length"])


def test_padded_length_is_what_training_batches_pad_to(tokenizer):
    """study init times a step at padded_length: the mean width of the batches batches() really builds
    (seed 0), no wider than the longest example and no narrower than the mean one."""
    encoded = encode(load_task("airline", train_size=640), tokenizer)["train"]
    widths = [b["input_ids"].shape[1] for b in batches(encoded, tokenizer, 32, shuffle=True, seed=0)]
    assert padded_length(encoded["length"], 32) == pytest.approx(sum(widths) / len(widths), abs=1e-12)
    assert np.mean(encoded["length"]) <= padded_length(encoded["length"], 32) <= max(encoded["length"])


def test_shuffled_batches_are_deterministic_per_seed(tokenizer):
    encoded = encode(load_task("synthetic", train_size=256), tokenizer)["train"]
    order = lambda seed: [b["index"].tolist() for b in batches(encoded, tokenizer, 16, shuffle=True, seed=seed)]
    assert order(0) == order(0)
    assert order(0) != order(1)


def test_evaluation_order_is_recoverable(tokenizer):
    task = load_task("synthetic")
    encoded = encode(task, tokenizer)["test"]
    predictions = np.full(len(encoded), -1)
    lengths = []
    for batch in batches(encoded, tokenizer, 64, shuffle=False):
        predictions[batch["index"].numpy()] = batch["labels"].numpy()  # a perfect "model"
        lengths.append(batch["input_ids"].shape[1])
    assert lengths == sorted(lengths)
    assert predictions.tolist() == task.splits["test"]["label"]


def test_text_to_text_encoding(tokenizer):
    rte = load_task("glue/rte", glue_dir=GLUE_FIXTURES)
    encoded = encode(rte, tokenizer, text_to_text=True)["test"]
    row = encoded[0]
    assert "token_type_ids" not in row  # T5 has no segment embeddings
    source = tokenizer.decode(row["input_ids"], skip_special_tokens=True)
    assert source.startswith("rte sentence1 : dana reeve") and "sentence2 : christopher" in source
    assert row["label"] == 1
    assert tokenizer.decode(row["labels"], skip_special_tokens=True) == "not _ entailment"
    assert row["labels"][-1] == tokenizer.sep_token_id  # tiny-t5's end of sequence
    batch = next(iter(batches(encoded, tokenizer, 2, shuffle=False)))
    assert set(batch) == {"input_ids", "attention_mask", "labels", "index", "label"}
    assert (batch["labels"] == -100).any()  # "entailment" is shorter than "not_entailment"


# ---------------------------------------------------------------- max_length from the data

def test_fit_max_length_is_the_95th_percentile_rounded_up_to_a_multiple_of_8():
    assert tasks.fit_max_length(range(1, 101)) == 96  # 95 of the 100 lengths are <= 95
    assert tasks.fit_max_length([41] * 19 + [300]) == 48  # the one long text in 20 (5%) is cut
    assert tasks.fit_max_length([41] * 18 + [300] * 2) == 304  # two in 20 (10%) would be too many to cut
    assert tasks.fit_max_length([40] * 20) == 40  # a multiple of 8 stays
    assert tasks.fit_max_length([5] * 20) == 16  # at least 16
    assert tasks.fit_max_length([300] * 20, limit=100) == 100  # at most the model's limit
    assert tasks.fit_max_length([41] * 20, limit=512) == 48
    with pytest.raises(ValueError, match="no texts to fit max_length to"):
        tasks.fit_max_length([])


def one_split(*columns):
    """A task whose train split holds these texts (a column per text field), labels 0, 1, 0, ..."""
    fields = ("first", "second")[:len(columns)]
    rows = {f: list(c) for f, c in zip(fields, columns)}
    data = datasets.Dataset.from_dict({**rows, "label": [i % 2 for i in range(len(columns[0]))]})
    return tasks.Task("mine", fields, ["a", "b"], "accuracy", {"train": data}, "")


def test_a_text_of_known_length_is_cut_exactly_when_max_length_is_shorter(tokenizer):
    task = one_split(["good " * 30, "good bad"])  # [CLS] + 30 words + [SEP]; [CLS] good bad [SEP]
    assert tasks.token_lengths(task, tokenizer).tolist() == [32, 4]
    whole = tokenizer("good " * 30)["input_ids"]
    assert encode(task, tokenizer, max_length=32)["train"][0]["input_ids"] == whole  # 32 tokens fit 32
    assert encode(task, tokenizer, max_length=31)["train"][0]["input_ids"] != whole  # and not 31
    assert len(encode(task, tokenizer, max_length=31)["train"][0]["input_ids"]) == 31


def test_token_lengths_count_pairs_and_text_to_text_inputs_as_encode_makes_them(tokenizer):
    pair = one_split(["good bad", "good"], ["fine", "fine fine"])
    assert tasks.token_lengths(pair, tokenizer).tolist() == [6, 6]  # [CLS] a b [SEP] c [SEP]
    for text_to_text in (False, True):
        encoded = encode(pair, tokenizer, max_length=512, text_to_text=text_to_text)["train"]
        assert tasks.token_lengths(pair, tokenizer, text_to_text=text_to_text).tolist() == encoded["length"]
    assert tasks.token_lengths(pair, tokenizer, text_to_text=True).tolist()[0] > 6  # the prefix and field names


def label_from_text(task, text):
    """Inverse of `target_text` for generated text: class id (-1 if the text names
    no class: counted as wrong) or score (NaN if not a number). Spaces are
    ignored because WordPiece decoding writes "not_entailment" as "not _ entailment"."""
    text = "".join(text.split()).lower()
    if task.kind == "regression":
        try:
            return float(text)
        except ValueError:
            return float("nan")
    words = ["".join(name.split()).lower() for name in task.label_names]
    return words.index(text) if text in words else -1


def test_text_to_text_targets_round_trip():
    rte = load_task("glue/rte", glue_dir=GLUE_FIXTURES)
    stsb = load_task("glue/stsb", glue_dir=GLUE_FIXTURES)
    assert target_text(rte, 1) == "not_entailment"
    assert label_from_text(rte, "not _ entailment") == 1 and label_from_text(rte, "maybe") == -1
    assert target_text(stsb, 3.43) == "3.4" and target_text(stsb, 2.57) == "2.6" and target_text(stsb, 5.0) == "5.0"
    assert label_from_text(stsb, "3. 4") == 3.4 and np.isnan(label_from_text(stsb, "many"))
    assert stsb.prefix == "stsb" and load_task("glue/mnli-mm", glue_dir=GLUE_FIXTURES).prefix == "mnli"


# ---------------------------------------------------------------- data under a name of their own

def test_data_load_under_the_name_given_with_them(tmp_path):
    path = tmp_path / "reviews.csv"
    path.write_text("review,stars\n" + "".join(f"text {i},{i % 2}\n" for i in range(40)))
    spec = tasks.files.spec(str(path), text_columns="review", label_column="stars")
    task, direct = load_task("reviews", train_size=10, seed=1, source=spec), load_task(spec, train_size=10, seed=1)
    assert task.name == "reviews" and task.num_labels == tasks.num_labels("reviews", spec) == 2
    assert texts(task.splits["train"], ("review",)) == texts(direct.splits["train"], ("review",))
    with pytest.raises(ValueError, match="unknown task 'reviews'"):  # the name alone stands for nothing
        load_task("reviews")
    for name, error in [("airline", "a built-in task's"), ("glue/mine", "must be letters"), ("my:data", "must be letters"),
                        ("reviews.csv", "must be letters")]:
        with pytest.raises(ValueError, match=error):
            load_task(name, source=spec)
    with pytest.raises(ValueError, match="must name a data file"):
        tasks.check_data_name("other", "airline")
