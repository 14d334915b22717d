"""Writing a file atomically: a reader sees the old file or the new one, never half of it.

Saved adapters, serving bundles, the doctor's report, the result store, its CSVs and the findings page are
written this way. The write lives in methods/, the first part of the flow that writes a file, so that every
later part imports it from an earlier one (nn -> methods -> training -> experiments -> report -> families ->
course).
"""
import os
import tempfile
from pathlib import Path


def atomic_write(path, data):
    """Write text (str) or bytes to `path` so that a reader sees the old file or the new one, never half:
    into a temp file beside it, fsync, rename over it, fsync the folder (a power cut could otherwise undo
    the rename). Creates the folder. The project's one atomic write: the store, the CSVs, the sweep's
    failure list and the saved adapters all go through it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the rename
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; results are meant to be shared
        os.replace(tmp, path)  # atomic: readers see the old or the new file
    except BaseException:
        try:
            os.remove(tmp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return path
