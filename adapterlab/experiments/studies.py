"""Studies: a profile written as a TOML file (data, never code), for a researcher's own data and model.

    python -m adapterlab study init --task reviews.csv --text-column review --label-column stars --out reviews.toml
    python -m adapterlab regenerate --profile reviews.toml --only 04,05,06,07

    p = profiles.get("reviews.toml")    # a profiles.Profile, read by load() here

A study file holds what a profile of profiles.py holds:

    name = "reviews"        its records go to data/results/reviews/, its figures to figures/reviews/
    description = "..."     optional
    backbone = "default"    "default", a local model folder (relative to the study file) or a hub name
    train_size, max_length, eval_size, method_lr, [train]      the profile-wide settings (profiles.Profile)
    [task]                  data = "reviews.csv" (relative to the study file) or "hf:NAME[:CONFIG]";
                            text_columns = ["review"] (two for sentence pairs); label_column = "stars";
                            optional: validation and test files, and name (default: the data file's stem)
    [<family>]              each registered family's settings by its name ([init_scale], ...), with the keys
                            of its typed settings (Family.settings)
    [sized_on]              optional, written by study init: the speed it measured and sized the study at
                            (timing.Timing's fields), which the study's page prices the plan at, beside what
                            the runs took

Every value is checked against those typed settings: an unknown key, a value of the wrong type or a
missing required key is a one-line ValueError naming the valid choices. TOML has lists where the
settings hold tuples, and text keys where a setting keys by size (low_resource epochs = {100 = 4}):
load turns both back, because the planner compares entries such as ("houlsby", {"bottleneck": 64})
with its runs. profiles.get reads a study through load() and hands it the Profile class: this module
builds on profiles.py and so cannot import it.

The data become a task under the [task] name, so run keys and figures carry that name, never the file's
path on this machine; where the data and a local model lie here travels as values in the Profile
(task_sources, model_folders) and from there in every run config it plans. What the name stands for is kept
beside the records: a runner about to write into data/results/<name>/ claims it (claim: the data read and
checked, refusing a missing column or a single class; study.json written the first time with the task, its
columns and each data file's sha256); a study with other data under that name is refused there, before
anything trains, and the folder is left as it was. The dry run checks the same (check) and writes nothing.
Reading the records (tables, figures, findings) checks nothing and reads no data: the runs they read were
checked when they were written.
"""
import functools
import hashlib
import json
import re
import tomllib
import typing
from dataclasses import MISSING, fields, is_dataclass
from pathlib import Path

from . import families
from .timing import Timing
from ..methods.writing import atomic_write
from ..training import files
from ..training import tasks as task_registry
from ..training.serving import portable_backbone
from ..training.train import TrainConfig

IDENTITY = "study.json"  # beside a study's records: what its task name stands for
TASK_KEYS = ("data", "text_columns", "label_column", "validation", "test", "name")
REQUIRED_TASK_KEYS = ("data", "text_columns", "label_column")
SIZED_ON = "sized_on"  # the table of the speed study init measured (Profile.sized_on)
PROFILE_KEYS = ("name", "description", "backbone", "train", "train_size", "max_length", "eval_size", "method_lr")
BUILT_IN_BACKBONES = ("default", "tiny", "tiny-t5")
STUDY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # it names a folder
TYPE_NAMES = {str: "text", int: "an integer", float: "a number", bool: "true or false", tuple: "a list",
              dict: "a table"}


# ----------------------------------------------------------------------------- reading a study

def load(path, profile_class, reserved=()):
    """The Profile (an instance of `profile_class`, profiles.Profile) a study file describes (see the module
    docstring), its data a task of its own. `reserved`: names a study may not take (the built-in
    profiles', whose folders hold their records)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"study file {str(path)!r} does not exist: check the path, or write one with "
                                "python -m adapterlab study init")
    try:
        study = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path} is not a valid study file: {error}; fix it there (TOML: key = value, "
                         "[table])") from None
    return from_dict(study, path.parent, profile_class, reserved, str(path), source=str(path.resolve()))


def families_of(profile_class):
    """{family name: its typed settings class}: what a study's tables may be (Family.settings)."""
    return {f.name: f.settings for f in families.registered()}


def from_dict(study, folder, profile_class, reserved=(), where="study", source=None):
    """The Profile of a study already read into a dict (load); relative paths are relative to `folder`;
    `source`: the file it was read from, if any (Profile.source)."""
    folder, settings_classes = Path(folder), families_of(profile_class)
    _check_keys(study, (*PROFILE_KEYS[:3], "task", *PROFILE_KEYS[3:], *settings_classes, SIZED_ON), where,
                ("name", "task"))
    _check_table(study["task"], f"{where} [task]")
    sized_on = _sized_on(study[SIZED_ON], f"{where} [{SIZED_ON}]") if SIZED_ON in study else None
    task, task_source = _task(study["task"], folder, f"{where} [task]")
    model_folders = {}  # filled by _model: each local model's name -> its folder here
    given = {key: plain(value) for key, value in study.items() if key not in ("task", SIZED_ON)}
    types = typing.get_type_hints(profile_class)
    for key, value in given.items():
        if key in settings_classes:
            _check_table(value, f"{where} [{key}]")
        else:
            _check_type(value, types[key], f"{where} {key}")
    name = check_name(given["name"], reserved, where)
    settings = {family: _family_settings(families.get(family), given[family], folder, model_folders,
                                         f"{where} [{family}]")
                for family in settings_classes if family in given}
    _check_train(given.get("train", {}), f"{where} [train]")
    wide = {key: given[key] for key in PROFILE_KEYS[4:] if key in given}  # train_size, ..., method_lr
    profile = profile_class(
        name=name, description=given.get("description", f"a study of {task} ({Path(where).name})"),
        backbone=_model(given.get("backbone", "default"), folder, model_folders), tasks=(task,),
        train=given.get("train", {}), source=source, task_sources={task: task_source}, model_folders=model_folders,
        sized_on=sized_on, **wide, **settings)
    _check_grids(profile, where)
    return profile


def _sized_on(table, where):
    """The [sized_on] table (what `study init` measured: timing.Timing's fields) as a Timing, each key checked."""
    _check_table(table, where)
    required = [f.name for f in fields(Timing) if f.default is MISSING]
    _check_keys(table, [f.name for f in fields(Timing)], where, required)
    types = typing.get_type_hints(Timing)
    for key, value in table.items():
        _check_type(value, types[key], f"{where} {key}")
    return Timing(**table)


def plain(value):
    """A TOML value as the typed settings hold it: lists as tuples, at any depth (tables stay dicts), and
    a table key that is a whole number as that number (TOML keys are text; low_resource keys by size)."""
    if isinstance(value, (list, tuple)):
        return tuple(plain(v) for v in value)
    if isinstance(value, dict):
        return {(int(k) if isinstance(k, str) and k.isdigit() else k): plain(v) for k, v in value.items()}
    return value


SPLIT_STEMS = {"train", "training", "dev", "validation", "test", "data"}  # names of a split, not of a task


def task_name_for(data) -> str:
    """The default name of a study's task: the data file's stem ("reviews.csv" -> "reviews"), or its
    folder's name when the stem names a split ("deflategate/train.csv" -> "deflategate"), or a hub
    dataset's name and config ("hf:glue:sst2" -> "glue-sst2"), as letters, digits, '-' and '_'."""
    data = str(data)
    if data.startswith(files.HF_PREFIX):
        stem = data.removeprefix(files.HF_PREFIX).replace("/", "-")
    else:
        path = Path(data).resolve()
        stem = path.parent.name if path.stem.lower() in SPLIT_STEMS and path.parent.name else path.stem
    return re.sub(r"[^A-Za-z0-9_-]+", "-", stem).strip("-_") or "data"


# ----------------------------------------------------------------------------- checks, one rule each

def _check_keys(table, valid, where, required=()):
    unknown = [k for k in table if k not in valid]
    if unknown:
        raise ValueError(f"{where} has unknown key(s) {', '.join(map(repr, unknown))}; valid: {', '.join(valid)}")
    missing = [k for k in required if k not in table]
    if missing:
        raise ValueError(f"{where} lacks the required key(s) {', '.join(map(repr, missing))}; valid: "
                         f"{', '.join(valid)}")


def _check_table(value, where):
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a table (a [section], or key = {{...}}), not {value!r}")


def _check_type(value, annotation, where):
    """`value` is of one of the types `annotation` allows (int where a number is asked for; never bool for
    a number); None is never written, since TOML has no null: a key left out keeps its default."""
    allowed = [t for t in (typing.get_args(annotation) or (annotation,)) if t is not type(None)]
    ok = any(isinstance(value, t) and (t is bool or not isinstance(value, bool)) for t in allowed)
    ok = ok or (float in allowed and isinstance(value, int) and not isinstance(value, bool))
    if not ok:
        names = " or ".join(TYPE_NAMES.get(t, t.__name__) for t in allowed)
        raise ValueError(f"{where} must be {names}, not {value!r}")


def _check_train(train, where):
    """Training settings are TrainConfig's fields."""
    valid = [f.name for f in fields(TrainConfig)]
    _check_keys(train, valid, where)


def _family_settings(family, table, folder, model_folders, where):
    """A family's table as its typed settings (family.settings): known keys only, each value of its field's
    type, its `train` TrainConfig's fields, its backbone resolved like the study's (_model). A local model
    folder is for a family of training runs, whose run configs carry it to the workers; a family of steps of
    its own (the stream) loads its backbone by name."""
    cls = family.settings
    types = typing.get_type_hints(cls)
    _check_keys(table, list(types), where)
    for key, value in table.items():
        _check_type(value, types[key], f"{where} {key}")
    if "train" in table:
        _check_train(table["train"], f"{where} train")
    _check_method_entries(table.get("methods", ()), where)
    if table.get("backbone"):
        if not family.trains_runs and _is_model_folder(table["backbone"], folder):
            raise ValueError(f"{where} backbone {table['backbone']!r} is a local model folder, which only the "
                             "families of training runs (04-07) take: give a built-in or hub name")
        table = {**table, "backbone": _model(table["backbone"], folder, model_folders)}
    return cls(**table)


def _check_method_entries(entries, where):
    """A methods entry is a method name, or a list: [method, {settings}] or [method, {settings}, {training}]."""
    for i, entry in enumerate(entries):
        if isinstance(entry, str):
            continue
        if not (isinstance(entry, tuple) and 2 <= len(entry) <= 3 and isinstance(entry[0], str)
                and all(isinstance(part, dict) for part in entry[1:])):
            raise ValueError(f"{where} methods[{i}] must be a method name or [method, {{settings}}] or [method, "
                             f"{{settings}}, {{lrs = [...], other training settings}}], not {entry!r}")


def _check_grids(profile, where):
    """Every learning-rate grid has two rates or more: a choice on validation from one rate chooses nothing,
    and a grid brackets its choice only when rates lie on both sides of it."""
    grids = [(f"{f.name} {what}", grid) for f in families.registered()
             for what, grid in getattr(profile.settings(f), "grids", lambda: [])()]
    for what, grid in grids:
        if grid is not None and len(set(grid)) < 2:
            raise ValueError(f"{where} {what} = {list(grid)} has fewer than two rates, so it cannot bracket the "
                             "best one: give two or more (e.g. the default profile's profiles.DEFAULT_LR_GRID), or "
                             "leave it out to train at the method's one rate (method_lr)")


def check_name(name, reserved, where):
    """A study's name: it names its folders, and may not be one of the `reserved` (built-in) profiles'."""
    if not STUDY_NAME.fullmatch(name):
        raise ValueError(f"{where} name {name!r} names the study's folders: use letters, digits, '.', '-' and "
                         "'_' (e.g. name = \"reviews\")")
    if name in reserved:
        raise ValueError(f"{where} name {name!r} is a built-in profile's, whose records its folder holds: "
                         "give the study a name of its own")
    return name


def _is_model_folder(backbone, folder):
    return backbone not in BUILT_IN_BACKBONES and (folder / backbone).is_dir()


def _model(backbone, folder, model_folders):
    """A backbone as run keys name it: a built-in name or a hub name as written; a model folder by its path
    from the study file ("./models/my-bert", serving.portable_backbone), so that run keys hold no machine's
    absolute path and a checkout elsewhere finds its records. The folder it is here goes into
    `model_folders` under that name (Profile.model_folders)."""
    if not _is_model_folder(backbone, folder):
        return backbone
    name = portable_backbone(str(folder / backbone), folder)
    model_folders[name] = str((folder / backbone).resolve())
    return name


def _local(value, folder):
    """A data file as an absolute path (relative to the study file's folder); hf:NAME as written."""
    return value if value.startswith(files.HF_PREFIX) else str((folder / value).resolve())


def _task(table, folder, where):
    """(name, source) of the [task] table: the task's name (tasks.check_data_name) and the data it stands for
    in files.spec's form, as train --task FILE names the data; a data file that is missing or of another
    format is refused here (its rows are read by the runners: claim)."""
    _check_keys(table, TASK_KEYS, where, REQUIRED_TASK_KEYS)
    columns = table["text_columns"]
    columns = [columns] if isinstance(columns, str) else columns
    if not (isinstance(columns, list) and 1 <= len(columns) <= 2 and all(isinstance(c, str) for c in columns)):
        raise ValueError(f"{where} text_columns must list one column, or two for sentence pairs "
                         f"(text_columns = [\"question\", \"answer\"]), not {table['text_columns']!r}")
    for key in ("data", "label_column", "validation", "test", "name"):
        if key in table:
            _check_type(table[key], str, f"{where} {key}")
    paths = {key: _local(table[key], folder) for key in ("data", "validation", "test") if key in table}
    for path in paths.values():
        if not path.startswith(files.HF_PREFIX):
            files.check_format(path)
    spec = files.spec(paths["data"], text_columns=columns, label_column=table["label_column"],
                      validation=paths.get("validation"), test=paths.get("test"))
    files.stamp(spec)  # a missing file: FileNotFoundError naming it
    try:
        return task_registry.check_data_name(table.get("name") or task_name_for(paths["data"]), spec), spec
    except ValueError as error:
        raise ValueError(f"{where}: {error} (name = \"...\" in [task] names it)") from None


# ----------------------------------------------------------------------------- the study's folder

def own_tasks(profile):
    """The profile's tasks that are data of its own (Profile.task_sources): none for the built-in profiles."""
    return [task for task in profile.tasks if task in profile.task_sources]


@functools.lru_cache(maxsize=16)
def _sha256(path, size, mtime_ns):
    """A file's sha256, computed once per version of the file (size and time)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def identity(profile) -> dict:
    """What a study's records stand for: per task of its own data, its columns and the sha256 of each data
    file (a hub dataset: its name). The data are read and checked first (tasks.load_task): a missing column
    or a single class is refused here."""
    out = {"study": profile.name, "tasks": {}}
    for task in own_tasks(profile):
        spec = profile.task_sources[task]
        task_registry.load_task(task, source=spec)
        base, options = files.parse_spec(spec)
        data = {}
        for role, path in [("data", base), *((s, options[s][-1]) for s in ("validation", "test") if s in options)]:
            if path.startswith(files.HF_PREFIX):
                data[role] = {"hub": path}
            else:
                info = Path(path).stat()
                data[role] = {"file": Path(path).name, "sha256": _sha256(str(Path(path).resolve()), info.st_size,
                                                                         info.st_mtime_ns)}
        out["tasks"][task] = {"text_columns": options.get("text", list(files.DEFAULT_TEXT)),
                              "label_column": options.get("label", [files.DEFAULT_LABEL])[-1], "data": data}
    return out


def _essence(ident):
    """An identity without the file names: the same data under another file name are the same data."""
    return {task: {**entry, "data": {role: {k: v for k, v in d.items() if k != "file"}
                                     for role, d in entry["data"].items()}}
            for task, entry in ident["tasks"].items()}


def _describe(ident):
    parts = []
    for task, entry in ident["tasks"].items():
        data = ", ".join(f"{d.get('file') or d.get('hub')}" + (f" sha256 {d['sha256'][:12]}" if "sha256" in d else "")
                         for d in entry["data"].values())
        parts.append(f"task {task!r}: {data}, text {entry['text_columns']}, label {entry['label_column']!r}")
    return "; ".join(parts)


def check(profile, folder):
    """Whether this study may write into `folder` (data/results/<name>/): its data read and checked (identity)
    and compared with the study.json there. Refused, with one line naming both, when that names other data,
    or when records lie there without one. Returns the identity to write when the folder has none yet (None:
    nothing to write). A profile with no data of its own (every built-in profile) checks nothing. The dry run
    calls this; the runners call claim, which is this and the write."""
    if not own_tasks(profile):
        return None
    folder, mine = Path(folder), identity(profile)
    path = folder / IDENTITY
    if path.exists():
        theirs = json.loads(path.read_text())
        if _essence(theirs) != _essence(mine):
            raise ValueError(f"{folder} holds the records of study {theirs.get('study')!r} on other data "
                             f"({_describe(theirs)}; this study: {_describe(mine)}): give this study another name, "
                             "or move that folder away (nothing in it was changed)")
        return None
    if any(folder.glob("*.jsonl")):
        raise ValueError(f"{folder} holds records but no {IDENTITY}, so which data they come from is unknown: give "
                         "this study another name, or move that folder away (nothing in it was changed)")
    return mine


def claim(profile, folder):
    """Make sure `folder` holds this study's records only (check), writing its study.json the first time:
    what a runner does before it writes a record there."""
    mine = check(profile, folder)
    if mine is not None:
        atomic_write(Path(folder) / IDENTITY, json.dumps(mine, indent=1, sort_keys=True) + "\n")


# ----------------------------------------------------------------------------- the resolved study, beside its records

RESOLVED = "resolved.toml"  # beside a study's records: every setting as its runs used it


def toml_value(value):
    """A value as TOML: text quoted (JSON's escapes are TOML's), lists in brackets, tables inline (TOML has
    no null: None is left out by the caller)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise ValueError(f"cannot write {value!r} as TOML")


def toml_key(key):
    key = str(key)
    return key if key.replace("-", "").replace("_", "").isalnum() and key.isascii() else toml_value(key)



def resolved(profile):
    """Every setting of a profile as its runs use it, as TOML would hold it: the profile-wide settings, then
    each registered family's typed settings, defaults filled in (None, which TOML cannot hold, left out)."""
    def plain_value(value):
        if is_dataclass(value):
            return {f.name: plain_value(getattr(value, f.name)) for f in fields(value)
                    if getattr(value, f.name) is not None}
        if isinstance(value, dict):
            return {str(k): plain_value(v) for k, v in value.items() if v is not None}
        if isinstance(value, (list, tuple)):
            return [plain_value(v) for v in value]
        return value
    wide = {key: plain_value(getattr(profile, key)) for key in ("name", "description", "backbone", "tasks",
                                                               *PROFILE_KEYS[3:]) if getattr(profile, key) is not None}
    return wide | {f.name: plain_value(profile.settings(f)) for f in families.registered()}


def resolved_text(profile):
    """resolved() as a TOML file: what `data/results/<name>/resolved.toml` holds."""
    settings = resolved(profile)
    lines = [f"# Every setting of study {profile.name!r} as its runs use it (the study file's, the defaults filled in).",
             "# Written by the runners beside the study's records; a later run of a changed study file says what "
             "changed."]
    lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in settings.items() if not isinstance(v, dict)
              or k in PROFILE_KEYS]
    for table, value in settings.items():
        if isinstance(value, dict) and table not in PROFILE_KEYS:
            lines += ["", f"[{toml_key(table)}]"] + [f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()]
    return "\n".join(lines) + "\n"


def changes(old, new, where=""):
    """['init_scale.seeds: [0] -> [0, 1, 2]', ...]: the settings that differ between two resolved() dicts."""
    out = []
    for key in dict.fromkeys([*old, *new]):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += changes(a, b, f"{where}{key}.")
        elif a != b:
            out.append(f"{where}{key}: {toml_value(a) if a is not None else '(unset)'} -> "
                       f"{toml_value(b) if b is not None else '(unset)'}")
    return out


def record_resolved(profile, folder):
    """Write `folder`/resolved.toml for a study (a profile with data of its own) before its runs are made, and
    return what changed since the one there (changes(); [] the first time, or when nothing did). Built-in
    profiles' settings are the code's, so they write none."""
    if not own_tasks(profile):
        return []
    path = Path(folder) / RESOLVED
    before = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    text = resolved_text(profile)
    if before is None or tomllib.loads(text) != before:
        atomic_write(path, text)
    return [] if before is None else changes(before, tomllib.loads(text))
