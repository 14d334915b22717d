"""Work: one unit of a family's plan as the runners see it, whatever the family.

A unit is a record to make (stored under its family and key), the plain data a worker computes it
from (`spec`), and the units whose saved files it reads (`needs`). A training run of notebooks 03-07
is a unit with no needs; a step of notebook 08's stream may read the model a previous step saved.
planning.work lists a family's units; the two runners (running.run_plan in this process, the sweep
in worker processes or on Ray) run the ready ones (`ready`) through the same worker function
(running.execute) and store what comes back in the same way (running.store_result).

Why the files travel as bytes: a worker gets the files of its needs inside its spec and hands its own
back with its record, so a Ray cluster needs no shared disk and only the driver writes the store.
A unit's files live in a folder of the store named by its key, under `files_in`: "checkpoints" (the
committed adapters notebooks 03 and 04 read back) or "stream_files" (not committed: notebook 08's
fine-tuned models are ~90 MB each); `marker` is the file written last, whose presence says they are
complete.
"""
from dataclasses import dataclass

from .results import config_key


@dataclass(frozen=True)
class Work:
    """One unit of work: family and key (where the store keeps its record), spec (what a worker needs:
    spec["step"] names the function, running.worker), needs (the units whose files it reads), marker
    (the file it leaves last; None: it leaves no files), kept (False: its files go once no missing unit
    reads them, e.g. a fine-tuned model's 90 MB), files_in (the store's folder for them), control (a
    budget control: trained with its family's plan, read by the budget tables only) and a label for
    progress lines."""
    family: str
    key: dict
    spec: dict
    needs: tuple = ()
    marker: str | None = None
    kept: bool = True
    files_in: str = "checkpoints"
    control: bool = False
    label: str = ""

    @property
    def id(self):
        return config_key(self.key)

    @property
    def kind(self):
        return self.spec["step"]

    def __str__(self):
        return f"{self.family} {self.id}: {self.label}"


def folder(store, unit):
    """Where a unit's files live (not created here)."""
    return store.root / unit.files_in / unit.id


def has_files(store, unit):
    return unit.marker is None or (folder(store, unit) / unit.marker).exists()


def usable(store, unit):
    """Whether a unit that something reads is there to read: its record stored and its files complete.
    A stored record whose files are gone is not: the unit runs again and its record is replaced."""
    return store.get(unit.key, unit.family) is not None and has_files(store, unit)


def ready(units, store):
    """The units to run now, in plan order: those the store lacks whose needs are stored with their
    files, and any stored need whose files are gone (usable). Ask again after running them: a chain
    of steps grows one link at a time."""
    stored = {u.id for u in units if store.get(u.key, u.family) is not None}
    todo = {}
    for unit in units:
        if unit.id in stored:
            continue
        waiting = False
        for need in unit.needs:
            if usable(store, need):
                continue
            waiting = True
            if store.get(need.key, need.family) is not None:  # stored, its files gone: run it again
                todo.setdefault(need.id, need)
        if not waiting:
            todo.setdefault(unit.id, unit)
    return list(todo.values())


def disposable(units, store):
    """The file folders of units whose files are not kept and that no missing unit reads any more."""
    needed = {need.id for u in units if store.get(u.key, u.family) is None for need in u.needs}
    return [folder(store, u) for u in units
            if not u.kept and u.id not in needed and folder(store, u).exists()]
