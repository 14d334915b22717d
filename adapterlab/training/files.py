"""Your own data as a task: a table file (.csv, .tsv, .jsonl, .parquet) or a hub dataset (hf:NAME[:CONFIG]).

    load_task("reviews.csv", text_columns=["review"], label_column="stars")   # tasks.load_task
    load_task("reviews.csv?text=review&label=stars")                          # the same, in one string

The one-string form (`spec`) is what a RunConfig keeps: the columns and the validation/test files
decide a run's numbers, so they belong in the task name the result store hashes. Defaults: text
column "text", label column "label".

This module reads and checks the table and makes the splits; tasks.load_task wraps them in the Task
every built-in task is (tasks.py imports this module, never the other way round). Validation and test
come from their own files when given; whichever is missing is carved from the training file by a
seeded split, stratified by class where every class is large enough (the task's note says which): test a
tenth of the file, validation a fifth or, where the data allow, 200 rows (validation_size).

Labels may be strings or integers. The label names are the distinct values, written as text, in
numeric order when all are integers and in alphabetical order otherwise (a hub dataset's ClassLabel
keeps its own order); class id i is label_names[i].

Bad input raises a one-line ValueError (FileNotFoundError for a missing file) that names the fix.
"""
import difflib
import io
import math
import numbers
from pathlib import Path
from typing import NamedTuple
from urllib.parse import parse_qs, urlencode

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

FORMATS = (".csv", ".tsv", ".jsonl", ".parquet")
HF_PREFIX = "hf:"
DEFAULT_TEXT, DEFAULT_LABEL = ("text",), "label"
HELD_OUT = 0.1  # a test split carved from the training file takes a tenth of it
# A validation split carved from the training file chooses every run's learning rate and best state: at least a
# fifth of the file and, where the data allow, 200 examples; the data allow what leaves train 60% (validation_size)
VALIDATION_SHARE, VALIDATION_MIN, VALIDATION_MAX_SHARE = 0.2, 200, 0.3
MIN_ROWS_TO_SPLIT = 10  # fewer rows cannot give every split at least one example
OPTIONS = ("text", "label", "validation", "test")  # the spec's keys, in the order spec() writes them
FLAGS = {"text": "--text-column / text_columns=", "label": "--label-column / label_column="}


# ---------------------------------------------------------------- naming a data source

def is_source(name: str) -> bool:
    """Whether a task name is a data file or a hub dataset rather than a built-in task."""
    base = name.partition("?")[0]
    return base.startswith(HF_PREFIX) or Path(base).suffix.lower() in FORMATS


def parse_spec(name: str) -> tuple[str, dict]:
    """"reviews.csv?text=review&label=stars" -> ("reviews.csv", {"text": ["review"], "label": ["stars"]})."""
    base, _, query = name.partition("?")
    try:
        options = parse_qs(query, strict_parsing=True) if query else {}
    except ValueError:
        raise ValueError(f"cannot read the options of task {name!r}: write them as "
                         "FILE?text=COLUMN&label=COLUMN&validation=FILE&test=FILE") from None
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r} in task {name!r}: use {', '.join(OPTIONS)}")
    return base, options


def spec(name: str, text_columns=None, label_column=None, validation=None, test=None) -> str:
    """The one-string form of a data task: `name` (a file, hf:NAME, or a spec already) with the keyword
    options over its own. Options equal to the defaults are left out, so one run has one name."""
    base, options = parse_spec(name)
    given = {"text": [text_columns] if isinstance(text_columns, str) else text_columns, "label": label_column,
             "validation": validation, "test": test}
    if not is_source(base):
        if any(v is not None for v in given.values()) or options:
            raise ValueError(f"text columns, label column, validation and test files are for a data file "
                             f"({', '.join(FORMATS)}) or hf:NAME, not the built-in task {base!r}")
        return base
    for key, value in given.items():
        if value is not None:
            options[key] = [str(v) for v in value] if key == "text" else [str(value)]
    if options.get("text") == list(DEFAULT_TEXT):
        del options["text"]
    if options.get("label") == [DEFAULT_LABEL]:
        del options["label"]
    query = urlencode([(key, value) for key in OPTIONS for value in options.get(key, [])])
    return base + ("?" + query if query else "")


def files_of(name: str) -> list[Path]:
    """The local files a spec reads (the cache in tasks.py keys on their size and time)."""
    base, options = parse_spec(name)
    paths = [] if base.startswith(HF_PREFIX) else [base]
    return [Path(p) for p in paths + options.get("validation", []) + options.get("test", [])]


def stamp(name: str) -> tuple:
    """(path, size, mtime) of every file a spec reads: a changed file is read again. A missing file
    raises here, before anything else is loaded."""
    out = []
    for path in files_of(name):
        _check_exists(path)
        info = path.stat()
        out.append((str(path.resolve()), info.st_size, info.st_mtime_ns))
    return tuple(out)


# ---------------------------------------------------------------- reading a table

def _check_exists(path: Path):
    if not path.is_file():
        where = "is a folder" if path.is_dir() else "does not exist"
        raise FileNotFoundError(f"data file {str(path)!r} {where}: check the path (a task is a built-in "
                                f"name, a {', '.join(FORMATS)} file, or hf:NAME)")


def check_format(path, writing=False) -> str:
    """The file's extension, if it is one of FORMATS (the format follows the extension)."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS and writing:
        raise ValueError(f"cannot write {str(path)!r}: name the output file with one of {', '.join(FORMATS)}")
    if suffix not in FORMATS:
        raise ValueError(f"cannot read {str(path)!r}: a data file must end in {', '.join(FORMATS)}; "
                         "convert it (pandas: read it, then .to_csv('data.csv', index=False))")
    return suffix


class NotUtf8(ValueError):
    """A text file in another encoding (its message says how to convert it)."""


def _utf8_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")  # -sig: spreadsheet exports often start with a byte-order mark
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise NotUtf8(f"{path} is not UTF-8 text (byte 0x{data[error.start]:02x} on line {line}): re-save it "
                         f"as UTF-8, e.g. iconv -f latin1 -t utf-8 {path} > {path.stem}.utf8{path.suffix}") from None


def _read_delimited(path, sep):
    # every cell as text, nothing turned into NaN: an empty cell stays "" and "007" stays "007"
    return pd.read_csv(io.StringIO(_utf8_text(path)), sep=sep, dtype=str, keep_default_na=False)


READERS = {
    ".csv": lambda path: _read_delimited(path, ","),
    ".tsv": lambda path: _read_delimited(path, "\t"),
    ".jsonl": lambda path: pd.read_json(io.StringIO(_utf8_text(path)), lines=True, dtype=False),
    ".parquet": pd.read_parquet,
}
KINDS = {".csv": "CSV", ".tsv": "tab-separated values", ".jsonl": "JSON lines (one object per line)",
         ".parquet": "Parquet"}


def read_table(path) -> pd.DataFrame:
    """A data file as a DataFrame (column names as text), by its extension."""
    path = Path(path)
    _check_exists(path)
    suffix = check_format(path)
    try:
        frame = READERS[suffix](path)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path} is empty: it needs a header row and one row per example") from None
    except NotUtf8:
        raise  # its own message says how to convert the file
    except (ValueError, OSError, pd.errors.ParserError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"cannot read {path} as {KINDS[suffix]}: {first}. Check the file, or its extension") from None
    if len(frame) == 0:
        raise ValueError(f"{path} has no rows: it needs one row per example")
    frame.columns = [str(c) for c in frame.columns]
    return frame


# ---------------------------------------------------------------- checking columns, texts and labels

def check_columns(frame: pd.DataFrame, columns, where, option, fix=None):
    """Every name in `columns` is a column of `frame`; else name the closest one and list them all.
    `fix` replaces the default advice (name the right column with the option)."""
    present = list(frame.columns)
    for column in columns:
        if column in present:
            continue
        same_case = [c for c in present if c.lower() == column.lower()]
        close = same_case or difflib.get_close_matches(column, present, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else "."
        raise ValueError(f"{where} has no column {column!r}{hint} Its columns: {', '.join(present)}. "
                         + (fix or f"Name the right one with {FLAGS[option]}"))


def _as_text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def texts(frame: pd.DataFrame, columns, where) -> pd.DataFrame:
    """The text columns as strings; an empty text (blank, or missing) is refused with its rows named."""
    out = pd.DataFrame({c: frame[c].map(_as_text) for c in columns}, index=frame.index)
    for column in columns:
        empty = np.flatnonzero(out[column].str.strip().eq("").to_numpy())
        if len(empty):
            rows = ", ".join(str(i + 1) for i in empty[:5]) + (", ..." if len(empty) > 5 else "")
            raise ValueError(f"{where}: {len(empty)} of {len(out)} rows have no text in {column!r} "
                             f"(data rows {rows}, counting from 1): fill them in or remove those rows")
    return out.reset_index(drop=True)


def _label_text(value) -> str:
    """A label as text: 3, 3.0 and "3" are one class; None and NaN are no label."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real) and float(value).is_integer():
        return str(int(value))
    return str(value).strip()


def label_texts(frame: pd.DataFrame, column, where) -> list[str]:
    values = [_label_text(v) for v in frame[column]]
    empty = [i for i, v in enumerate(values) if v == ""]
    if empty:
        rows = ", ".join(str(i + 1) for i in empty[:5]) + (", ..." if len(empty) > 5 else "")
        raise ValueError(f"{where}: {len(empty)} rows have no label in {column!r} (data rows {rows}, counting "
                         "from 1): label them or remove those rows")
    return values


def _is_int(text):
    try:
        int(text)
    except ValueError:
        return False
    return True


def label_order(values) -> list[str]:
    """The label names: numeric order when every label is an integer, else alphabetical."""
    distinct = set(values)
    return sorted(distinct, key=int) if all(_is_int(v) for v in distinct) else sorted(distinct)


def label_ids(values, label_names, where, column) -> np.ndarray:
    """Class ids of label texts; a label the model does not know is refused, with the ones it knows."""
    index = {name: i for i, name in enumerate(label_names)}
    unknown = sorted(set(values) - set(index))
    if unknown:
        raise ValueError(f"{where}: labels {', '.join(map(repr, unknown[:5]))} in {column!r} are not among the "
                         f"known ones ({', '.join(label_names)}); check {FLAGS['label']} or the file")
    return np.array([index[v] for v in values], dtype=np.int64)


# ---------------------------------------------------------------- splitting

def _split(frame, fraction, seed):
    """(rest, held): a seeded split of `fraction` of the rows, stratified by label when every class can
    be in both parts; the third value says whether it was."""
    try:
        rest, held = train_test_split(frame, test_size=fraction, stratify=frame["label"], random_state=seed)
        return rest, held, True
    except ValueError:  # a class too small for both parts: a plain seeded split keeps every row
        rest, held = train_test_split(frame, test_size=fraction, random_state=seed)
        return rest, held, False


# Bump when carve changes which rows a carved split holds, so that runs stored under the old splits stop matching
# (planning.run_key); 1 was a tenth of the file for validation (80/10/10)
CARVE_VERSION = 2


def carves_validation(name: str) -> bool:
    """Whether a task spec's validation split may be carved from its training file (no validation file given;
    a hub dataset may still have its own)."""
    return is_source(name) and "validation" not in parse_spec(name)[1]


def validation_size(rows):
    """How many of a training file's `rows` a validation split carved from it takes: VALIDATION_SHARE of them
    (rounded up) or, where the data allow, VALIDATION_MIN, whichever is more. The data allow k examples when k is
    at most VALIDATION_MAX_SHARE of the rows (rounded down), so that train keeps at least 60% of the file beside
    a 10% test split, twice what validation may take. So: below 667 rows, 30% of them (fewer than 200: study
    init warns); from 667 to 999 rows, 200; from 1,000 rows on, a fifth.

    Why: validation picks the learning rate of each grid and the best state of each run; on 60 examples one
    accuracy's sampling SE is up to 6.5 points, so its choices among rates and states a few points apart are
    noise. 200 examples bring that under 3.5 points; a fifth keeps it shrinking with the data."""
    allowed = min(VALIDATION_MIN, math.floor(VALIDATION_MAX_SHARE * rows))
    return max(math.ceil(VALIDATION_SHARE * rows), allowed)


def carve(frame, missing, seed, source):
    """The splits of `missing` ("validation", "test" or both) carved from `frame`; the rest is train.
    Validation takes validation_size of the rows, test HELD_OUT of them. Returns (splits, sentence for the
    note)."""
    n = len(frame)
    if n < MIN_ROWS_TO_SPLIT:
        raise ValueError(f"{source} has only {n} rows, too few to carve {' and '.join(missing)} from; "
                         f"give them as files (--validation FILE --test FILE) or use at least "
                         f"{MIN_ROWS_TO_SPLIT} rows")
    size = {"validation": validation_size(n), "test": math.ceil(HELD_OUT * n)}
    train, held, stratified = _split(frame, sum(size[split] for split in missing), seed)
    parts = {"train": train}
    if len(missing) == 2:
        parts["validation"], parts["test"], second = _split(held, size["test"], seed)
        stratified = stratified and second
    else:
        parts[missing[0]] = held
    shares = "/".join(f"{round(100 * len(part) / n)}" for part in parts.values())
    how = "stratified by label" if stratified else "not stratified (a class is too small to be in every split)"
    sentence = f"{' and '.join(missing).capitalize()}: a seeded {shares} split of {source} (seed {seed}), {how}."
    return parts, sentence


# ---------------------------------------------------------------- the task's data

class TaskData(NamedTuple):
    """What tasks.load_task makes a Task of: per split a DataFrame of the text columns + "label" (class id).
    label_column is the file's own name for the label (serving records it, so evaluate reads the same file)."""
    name: str
    text_fields: tuple[str, ...]
    label_names: list[str]
    splits: dict
    note: str
    label_column: str


def _columns(options):
    text = tuple(options.get("text", DEFAULT_TEXT))
    label = options.get("label", [DEFAULT_LABEL])[-1]
    if not 1 <= len(text) <= 2 or len(set(text)) != len(text):
        raise ValueError(f"give one text column, or two different ones for sentence pairs (got {list(text)}); "
                         f"use {FLAGS['text']} once or twice")
    if label in text:
        raise ValueError(f"{label!r} is named as both a text column and the label column: name the label "
                         f"column with {FLAGS['label']}")
    return text, label


def _prepared(frame, text_fields, label, where):
    """The rows as text columns + label texts, each checked."""
    check_columns(frame, text_fields, where, "text")
    check_columns(frame, [label], where, "label")
    out = texts(frame, text_fields, where)
    out["label"] = label_texts(frame, label, where)
    return out


def read_source(name: str, split_seed: int) -> TaskData:
    """Read, check and split the data a spec names (see the module docstring)."""
    base, options = parse_spec(name)
    text_fields, label = _columns(options)
    if base.startswith(HF_PREFIX):
        tables, order, source = _hub_tables(base, label)
    else:
        tables, order, source = {"train": read_table(base)}, None, base
    for split in ("validation", "test"):
        if options.get(split):
            tables[split] = read_table(options[split][-1])
    where = {split: (options[split][-1] if options.get(split) else source if split == "train"
                     else f"{source} ({split} split)") for split in tables}
    frames = {split: _prepared(table, text_fields, label, where[split]) for split, table in tables.items()}
    classes = sorted(set(frames["train"]["label"]))
    if len(classes) < 2:
        raise ValueError(f"{source}: the label column {label!r} has one class ({classes[0]!r}); a classifier "
                         f"needs two or more. Is it the right column? (name it with {FLAGS['label']})")
    every = [v for frame in frames.values() for v in frame["label"]]
    label_names = order or label_order(every)
    for split, frame in frames.items():
        frame["label"] = label_ids(frame["label"], label_names, where[split], label)
    given = [s for s in ("validation", "test") if s in frames]
    missing = [s for s in ("validation", "test") if s not in frames]
    sentences = [f"{s.capitalize()}: {where[s]}." for s in given]
    if missing:
        carved, sentence = carve(frames.pop("train"), missing, split_seed, source)
        frames.update(carved)
        sentences.append(sentence)
    splits = {s: frames[s].reset_index(drop=True) for s in ("train", "validation", "test")}
    counts = ", ".join(f"{s} {len(f)}" for s, f in splits.items())
    columns = " + ".join(map(repr, text_fields))
    note = (f"{source}: text {columns}, label {label!r} ({len(label_names)} classes: {', '.join(label_names)}). "
            + " ".join(sentences) + f" Sizes: {counts}.")
    return TaskData(base, text_fields, label_names, splits, note, label)


# ---------------------------------------------------------------- the hub

def _hub_tables(base, label):
    """hf:NAME[:CONFIG] -> ({split: DataFrame}, ClassLabel names or None, name). Labels a split hides
    (all -1, as GLUE's test sets) drop that split: it is carved from train instead."""
    import datasets

    from .backbones import hub_unavailable_reason  # one reachability check for models and data

    name, _, config = base.removeprefix(HF_PREFIX).partition(":")
    reason = hub_unavailable_reason()
    try:
        loaded = datasets.load_dataset(name, config or None)
    except (ConnectionError, OSError, ValueError) as error:
        why = reason or str(error).strip().splitlines()[0]
        args = repr(name) + (f", {config!r}" if config else "")
        raise ValueError(f"cannot load {base}: {why}, and it is not in the datasets cache. Use a local file "
                         f"instead: where you are online, datasets.load_dataset({args})['train'].to_csv("
                         f"'{name.split('/')[-1]}.csv', index=False), then --task {name.split('/')[-1]}.csv") from None
    if "train" not in loaded:
        raise ValueError(f"{base} has no train split (it has {', '.join(loaded)}): save the split you want to "
                         "train on as a file and use --task FILE")
    tables, order = {}, None
    for split in ("train", "validation", "test"):
        if split not in loaded:
            continue
        frame = loaded[split].to_pandas()
        labels = loaded[split].features.get(label)
        if isinstance(labels, datasets.ClassLabel):
            if split != "train" and (frame[label] < 0).all():
                continue  # hidden labels
            order = list(labels.names)
            frame[label] = [labels.names[i] if i >= 0 else None for i in frame[label]]
        tables[split] = frame
    return tables, order, base
