"""GLUE's data as its publishers ship it: the official TSV files, or the Hugging Face hub's copy.

    train, dev, source = read("rte", glue_dir)    # DataFrames of the task's fields + "label"

Each GLUE task ships in a way of its own: its folder, its column names, labels written as words or as
numbers, CoLA without a header, MNLI with two dev sets. GLUE (the dict) writes down each task's way once,
so that one reader serves them all. Reading is all this module does: tasks.py carves validation out of the
official train set and makes the task (load_task("glue/rte")).
"""
import csv
from dataclasses import dataclass
from pathlib import Path

import datasets
import pandas as pd


@dataclass(frozen=True)
class GlueSpec:
    folder: str                   # folder name in the official GLUE download
    columns: dict[str, str]       # our field name -> TSV column; "label" last
    label_names: list[str] | None
    metrics: tuple[str, ...]      # primary first
    dev_file: str = "dev.tsv"     # the official dev set: our test split
    hub_config: str = ""          # config of the hub's "nyu-mll/glue" (default: our name)
    hub_dev_split: str = "validation"


GLUE = {
    "cola": GlueSpec("CoLA", {"sentence": "sentence", "label": "label"},
                     ["unacceptable", "acceptable"], ("mcc",)),
    "sst2": GlueSpec("SST-2", {"sentence": "sentence", "label": "label"},
                     ["negative", "positive"], ("accuracy",)),
    "mrpc": GlueSpec("MRPC", {"sentence1": "#1 String", "sentence2": "#2 String", "label": "Quality"},
                     ["not_equivalent", "equivalent"], ("f1", "accuracy")),
    "qqp": GlueSpec("QQP", {"question1": "question1", "question2": "question2", "label": "is_duplicate"},
                    ["not_duplicate", "duplicate"], ("f1", "accuracy")),
    "stsb": GlueSpec("STS-B", {"sentence1": "sentence1", "sentence2": "sentence2", "label": "score"},
                     None, ("spearman", "pearson")),
    "mnli": GlueSpec("MNLI", {"premise": "sentence1", "hypothesis": "sentence2", "label": "gold_label"},
                     ["entailment", "neutral", "contradiction"], ("accuracy",),
                     dev_file="dev_matched.tsv", hub_dev_split="validation_matched"),
    "mnli-mm": GlueSpec("MNLI", {"premise": "sentence1", "hypothesis": "sentence2", "label": "gold_label"},
                        ["entailment", "neutral", "contradiction"], ("accuracy",),
                        dev_file="dev_mismatched.tsv", hub_config="mnli", hub_dev_split="validation_mismatched"),
    "qnli": GlueSpec("QNLI", {"question": "question", "sentence": "sentence", "label": "label"},
                     ["entailment", "not_entailment"], ("accuracy",)),
    "rte": GlueSpec("RTE", {"sentence1": "sentence1", "sentence2": "sentence2", "label": "label"},
                    ["entailment", "not_entailment"], ("accuracy",)),
}
COLA_COLUMNS = ["source", "label", "original_label", "sentence"]  # CoLA's TSVs have no header


class GlueUnavailable(ValueError):
    """GLUE was asked for without a local copy, and the hub cannot be used."""


def _parse_label(value, label_names):
    """TSV label -> class id (or float score); None for unusable values such as MNLI's "-"."""
    try:
        if label_names is None:
            return float(value)
        return label_names.index(value) if value in label_names else int(value)
    except (TypeError, ValueError):
        return None


def _read_tsv(path: Path, spec: GlueSpec, headerless: bool):
    """One GLUE TSV -> (DataFrame of fields + label, number of rows dropped).

    csv with QUOTE_NONE, as GLUE's files need: their sentences contain stray
    quote characters that must not start quoted fields. Rows with missing
    fields (a few in QQP's train set) or no usable label are dropped.
    """
    if not path.is_file():
        layout = f"{spec.folder}/train.tsv, {spec.folder}/{spec.dev_file}, ..."
        raise ValueError(f"GLUE file not found: {path}. Point glue_dir (the command line's --glue-dir or "
                         f"ADAPTERLAB_GLUE_DIR) at the folder that holds the official GLUE layout ({layout})")
    rows, dropped = [], 0
    with open(path, encoding="utf-8-sig", newline="") as file:  # -sig: MRPC starts with a BOM
        reader = csv.DictReader(file, fieldnames=COLA_COLUMNS if headerless else None,
                                delimiter="\t", quoting=csv.QUOTE_NONE)
        for record in reader:
            row = {ours: record.get(theirs) for ours, theirs in spec.columns.items()}
            row["label"] = _parse_label(row["label"], spec.label_names)
            if any(value is None for value in row.values()):
                dropped += 1
            else:
                rows.append(row)
    return pd.DataFrame(rows, columns=list(spec.columns)), dropped


def _read_folder(glue_dir: Path, spec: GlueSpec):
    headerless = spec.folder == "CoLA"
    train, dropped_train = _read_tsv(glue_dir / spec.folder / "train.tsv", spec, headerless)
    dev, dropped_dev = _read_tsv(glue_dir / spec.folder / spec.dev_file, spec, headerless)
    dropped = dropped_train + dropped_dev
    source = f"the GLUE TSV files in {glue_dir}" + (f" ({dropped} malformed rows dropped)" if dropped else "")
    return train, dev, source


def _read_hub(name: str, spec: GlueSpec):
    from .backbones import hub_unavailable_reason  # one reachability check for models and data

    fixes = ("pass glue_dir= (the command line's --glue-dir, or set ADAPTERLAB_GLUE_DIR for it) a folder with the "
             f"official GLUE TSV files ({spec.folder}/train.tsv, ...), or go online")
    reason = hub_unavailable_reason()
    if reason and "offline mode" not in reason:  # offline mode may still find it in the datasets cache
        raise GlueUnavailable(f"cannot load GLUE {name}: {reason}. Either {fixes} "
                              "(or set HF_HUB_OFFLINE=1 to use a copy in your datasets cache).")
    try:
        glue = datasets.load_dataset("nyu-mll/glue", spec.hub_config or name)
    except (ConnectionError, OSError) as error:
        raise GlueUnavailable(f"cannot load GLUE {name}: {reason or error}. Either {fixes}.") from error
    fields = list(spec.columns)  # our field names are the hub's column names
    return glue["train"].to_pandas()[fields], glue[spec.hub_dev_split].to_pandas()[fields], "the Hugging Face hub"


def read(name: str, glue_dir: str | None):
    """GLUE task `name`'s official train and dev sets, as DataFrames of its fields and "label", and where they
    came from (for the task's note): from the TSV files under `glue_dir`, or from the hub when it is None."""
    spec = GLUE[name]
    return _read_folder(Path(glue_dir), spec) if glue_dir else _read_hub(name, spec)
