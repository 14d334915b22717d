"""The result store: run config -> record, so figures redraw without retraining.

Every training run is described by a config (a JSON-able dict: backbone, task, method settings, sizes, seed,
epochs, lr, ...). We hash the config to a short key and keep one JSON line per run in `root/<family>.jsonl`:

    {"key": ..., "schema": 1, "family": "runs", "config": {...},
     "record": {...}, "created": "2025-01-01T12:00:00+00:00"}

Design choices, and why:

- One line per run, one file per experiment family: plain text that diffs well in git and that a person can
  read (or fix) in an editor.
- Every write rewrites the whole file into a temp file in the same directory, fsyncs it and `os.replace`s it
  onto the target. A reader therefore sees either the old file or the new one, never half a line, even if the
  writer is killed mid-write. Files hold a few hundred lines, so rewriting is cheap.
- The read-modify-write happens under an exclusive `fcntl.flock` on `root/.lock`, so two processes (notebooks
  run in parallel) never lose each other's records. Reads take no lock: thanks to `os.replace` they are safe.
- The store only reads and writes records: whoever runs a unit of work (running.run_unit, the sweep's
  driver) trains outside the lock and puts the record after, so parallel runs do not wait on each other.
  If two processes happen to compute the same config, the second put replaces the first: still one line
  per key. A unit's files (a saved adapter) live beside the store, in the folder work.folder names.
- A line that is not valid JSON (hand edits, a file copied mid-write) is reported with a warning naming the
  file and line number, skipped, and the run counts as missing so it gets recomputed. We keep such lines in
  the file (put copies them over unchanged): the store never deletes text it did not understand. Delete the
  line yourself to silence the warning.
- Lines from another SCHEMA_VERSION are ignored on read but kept on disk, so older code reading a newer file
  (or the reverse) loses nothing. The schema version is also part of every key, so bumping it makes all runs
  "missing" and they are recomputed next to the old lines.
- Reads are cached per file, keyed by the file's (inode, size, mtime): parsing 500 lines takes ~15 ms, which a
  notebook redrawing a figure from 300 cached runs would pay 300 times; a stat() is ~100x cheaper. Every write
  replaces the file (new inode, new mtime), so the cache notices. (Another process writing a same-size file
  within one clock tick onto a reused inode could go unseen; the worst outcome is one extra rerun. put() never
  trusts the cache: under the lock it always reads the file.) get() and records() hand out copies, so callers
  cannot change the cache.
- A store can be told to ignore records made before a time (`since`): those runs count as missing and are
  retrained, and their lines are replaced when the new record is put. The functions that train
  (running.run_plan, running.run_config, sweep.sweep, regenerate) take `fresh` and turn it into that time
  once per call (fresh_since): True means "before this call began", so every run retrains exactly once however often
  the call meets it, and an ISO time means "before then", which is how an interrupted from-scratch run
  resumes: what was retrained after that time is kept.
"""

import contextlib
import copy
import datetime
import hashlib
import json
import math
import os
import re
import warnings
from pathlib import Path

from ..methods.writing import atomic_write

# Bump this when the meaning of configs or records changes: old lines are then ignored (not deleted) and every
# run is recomputed.
SCHEMA_VERSION = 1


def parse_time(text, what="time"):
    """An ISO 8601 time (text or a datetime) as an aware datetime (UTC when no zone is given); a clear
    error otherwise."""
    try:
        when = text if isinstance(text, datetime.datetime) else datetime.datetime.fromisoformat(str(text))
    except ValueError:
        raise ValueError(f"{what} {text!r} is not an ISO 8601 time; write it like 2026-12-01T19:30:00+00:00") from None
    return when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)


def fresh_since(fresh, what="fresh"):
    """The store's `since` for a `fresh` argument: None for False (read the store); for True the time
    now, in whole seconds (records made before the call count as missing: `created` keeps whole
    seconds, so a record made later in this second must not count as older); for an ISO 8601 time
    (text or datetime) that time, which resumes an interrupted fresh run. `what` names the argument
    in the error for a malformed time."""
    if fresh is False or fresh is None:
        return None
    if fresh is True:
        return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return parse_time(fresh, what)


class CorruptLineWarning(UserWarning):
    """A line of a results file could not be used (it is skipped, not deleted)."""


# -----------------------------------------------------------------------------
# stable keys

def _check_jsonable(obj, where="config", allow_nan=False):
    """Raise ValueError (naming the place) for anything JSON would lose or refuse.

    json.dumps alone is not strict enough for hashing: it turns the dict key 1 into "1" (so {1: x} and
    {"1": x} would collide) and writes NaN, which is not JSON and is never equal to itself.
    """
    if obj is None or isinstance(obj, (str, bool, int)):
        return
    if isinstance(obj, float):
        if not allow_nan and not math.isfinite(obj):
            raise ValueError(f"{where} is {obj!r}; use a finite number or None")
        return
    if isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            _check_jsonable(item, f"{where}[{i}]", allow_nan)
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, str):
                raise ValueError(f"{where} has the non-string key {k!r}; use str keys")
            _check_jsonable(v, f"{where}[{k!r}]", allow_nan)
        return
    raise ValueError(
        f"{where} is {obj!r} of type {type(obj).__name__}, which is not JSON-able; "
        "convert it to str, int, float, bool, None, list or dict first "
        "(e.g. int(x) for a numpy integer)")


def canonical_json(config):
    """The one text form of a config: sorted keys, no spaces, tuples as lists.

    Floats are written by Python's repr (the shortest text that reads back as the same float), which is the
    same on every platform and Python 3 version. Note 1 and 1.0 are different texts, hence different keys:
    keep types steady.
    """
    _check_jsonable(config)
    return json.dumps(config, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True, allow_nan=False)


def config_key(config):
    """A 16-hex-digit sha256 of the config's canonical JSON and the schema version.

    Stable across processes and runs (unlike hash(), which is salted per process).
    """
    text = f"adapterlab-results-v{SCHEMA_VERSION}:{canonical_json(config)}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def write_csvs(frames, folder):
    """{name: DataFrame} as folder/<name>.csv, each written atomically (atomic_write); the paths written."""
    paths = [Path(folder) / f"{name}.csv" for name in frames]
    for path, frame in zip(paths, frames.values()):
        atomic_write(path, frame.to_csv(index=False))
    return paths


# -----------------------------------------------------------------------------
# the store

_FAMILY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@contextlib.contextmanager
def _lock(root):
    """An exclusive flock on root/.lock; released when the file is closed."""
    import fcntl  # POSIX only; imported here so reading works everywhere
    Path(root).mkdir(parents=True, exist_ok=True)
    with open(Path(root) / ".lock", "a") as file:  # closing releases the lock
        fcntl.flock(file, fcntl.LOCK_EX)  # blocks until the other writer is done
        yield


class ResultStore:
    """Records as JSON lines under `root`, one file per experiment family."""

    def __init__(self, root, since=None):
        self.root = Path(root)
        self._cache = {}  # path -> (stat signature, parsed lines)
        self.since = None if since is None else parse_time(since, "since")  # older records count as missing

    def path(self, family="runs"):
        """The file that holds one family's records."""
        if not isinstance(family, str) or not _FAMILY_NAME.fullmatch(family):
            raise ValueError(f"family {family!r} must be a plain file name (letters, digits, '_')")
        return self.root / f"{family}.jsonl"

    # --- reading -------------------------------------------------------------

    def _parse(self, family, use_cache=True):
        """The file's lines as (text, entry) pairs; entry is None for unusable lines.

        Bad lines get a warning naming file and line; lines of another schema are unusable but silent (they
        are not errors, just not ours).
        """
        path = self.path(family)
        try:
            with open(path, "rb") as f:  # stat the file we read, not a newer one
                st = os.fstat(f.fileno())
                signature = (st.st_ino, st.st_size, st.st_mtime_ns)
                cached = self._cache.get(path)
                if use_cache and cached is not None and cached[0] == signature:
                    return cached[1]
                text = f.read().decode("utf-8")
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as e:
            warnings.warn(f"{path}: cannot read results file ({e}); treating it as empty",
                          CorruptLineWarning, stacklevel=4)
            return []
        pairs = []
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue  # blank lines (and the end of the last line) carry nothing
            try:
                entry = json.loads(line)
            except ValueError:
                entry = None
            if isinstance(entry, dict) and "schema" in entry and entry["schema"] != SCHEMA_VERSION:
                entry = None  # another schema: ignored here, kept on disk
            elif not (isinstance(entry, dict) and isinstance(entry.get("key"), str)
                      and isinstance(entry.get("record"), dict)):
                warnings.warn(f"{path}:{lineno}: not a valid result line; skipped "
                              "(left in the file: delete it to silence this warning)",
                              CorruptLineWarning, stacklevel=4)
                entry = None
            pairs.append((line, entry))
        self._cache[path] = (signature, pairs)
        return pairs

    def _entries(self, family):
        """{key: entry} of the usable lines made at or after `since`, in file order; for a duplicated
        key the last wins."""
        entries = {e["key"]: e for _, e in self._parse(family) if e is not None}
        if self.since is None:
            return entries
        return {k: e for k, e in entries.items() if parse_time(e.get("created", "1970-01-01"), "created") >= self.since}

    def get(self, config, family="runs"):
        """The stored record for this config, or None."""
        entry = self._entries(family).get(config_key(config))
        return None if entry is None else copy.deepcopy(entry["record"])

    def records(self, family="runs"):
        """All usable entries (key, schema, family, config, record, created), in file order."""
        return copy.deepcopy(list(self._entries(family).values()))

    # --- writing -------------------------------------------------------------

    def put(self, config, record, family="runs"):
        """Store (or replace) the record for config; return the stored entry.

        The file keeps exactly one line per key: a replaced record keeps its old position, a new one is
        appended. Lines we cannot use are copied over unchanged.
        """
        key = config_key(config)
        if not isinstance(record, dict):
            raise ValueError(f"record must be a dict, got {type(record).__name__}")
        _check_jsonable(record, "record", allow_nan=True)  # a metric may be NaN
        entry = {
            "key": key,
            "schema": SCHEMA_VERSION,
            "family": family,
            "config": json.loads(canonical_json(config)),  # tuples -> lists, as on disk
            "record": json.loads(json.dumps(record)),
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
        new_line = json.dumps(entry, sort_keys=True, separators=(",", ":"))
        path = self.path(family)
        with _lock(self.root):
            # read again under the lock, bypassing the cache: another process may have written since, and a
            # write we miss here would be lost for good
            out, placed = [], False
            for line, old in self._parse(family, use_cache=False):
                if old is not None and old["key"] == key:
                    if placed:
                        continue  # drop a duplicate of the same run
                    line, placed = new_line, True
                out.append(line)
            if not placed:
                out.append(new_line)
            atomic_write(path, "".join(line + "\n" for line in out))
        return entry

    def __repr__(self):
        return f"ResultStore({str(self.root)!r})"
