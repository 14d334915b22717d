"""The experiment families, each registered once: what an engine needs to know of a family, as one value.

A **family** is one experiment: one notebook, one store file of records (data/results/<profile>/<family>.jsonl),
one plan of work, one table, its figures, its reading and its claims. Everything a family is lives in one module,
adapterlab/families/<name>.py, which builds a Family and registers it (register), as PEFT registers each tuner
once. The engines to its left (experiments/, report/) never name a family: they take a Family, or look one up
by the name a user or a record gives (get), and call what it holds.

    from adapterlab.experiments import families
    family = families.get("05")            # by notebook number, notebook stem or store name
    family.plan(profile, chosen)           # its training runs; family.build(profile, records, root): its table
    [f.name for f in families.registered()]

A family defined outside the package registers the same way (tests/experiments/test_toy_family.py).
"""
from dataclasses import dataclass, field
from typing import Callable

# The questions a page's "What to use" answers (report.what_to_use), each from the table of the family that
# declares it (Family.answers): which method to train, and how much labelled data it needs.
WHICH_METHOD, HOW_MUCH_DATA = "which method", "how much data"


@dataclass(frozen=True)
class Family:
    """Everything the engines know of one family. The callables are the family module's own functions.

    name        the store file's name (<name>.jsonl, <name>.csv) and the key of its settings in a profile
    notebook    the notebook (stem) that runs it and draws its figures
    settings    its typed settings (a frozen dataclass: a misspelled key is a ValueError naming the valid ones)
    profiles    {built-in profile name: its settings there, as a dict}; a profile absent here takes the defaults
    split       which split its table's `value` column measures (None: no one such column)
    plan        (profile, chosen) -> [train.RunConfig]: its independent training runs (planning.plan adds the
                budget controls); None for a family whose units are steps of its own (`work`)
    control_entry
                RunConfig -> how a `budget_control` entry of its settings names that run (None: no controls)
    work        (profile, family, store) -> [work.Work]: its units of work; None: one unit per planned run
    passes      (profile, store or None) -> [work.Work]: the units its work adds beside its runs (04's scoring
                passes, once its runs are stored, with a stand-in for each run not stored yet; 06's timing runs):
                what estimate.py counts and prices before anything is trained; None: none
    steps       {a unit's spec["step"]: its worker(spec, folders of its needs' files, folder for its own files)}:
                the workers of units other than training runs (running.execute finds them here)
    columns     its table's columns as DESIGN.md's "Result tables" fix them (the contract), first in its CSV
    build       (profile, records, root) -> report.tables.FamilyResult: its table from its plan's records
    read        (table, budget table) -> (markdown lines, [(claim title, judge.Verdict)]): its reading
    claims      its declared claims (report.claims.Claim), in the order its reading judges them
    claims_table
                the table its claims read when not its own (layer removal's spans scored on held-out examples)
    figures     {figure name: report.figures.Entry}: the figure definitions drawn from its tables
    filters     {table column: picker label}: what its explorer filters by
    study       (default settings, study_init.Scale) -> [(key, value, comment)]: what `study init` writes for
                it (None: a study leaves it out)
    reference_arms
                plan entries (method, method_args) its claims are measured against: what study init's pilot
                trains to learn the steps a run needs on the user's data, and the arms a study keeps longest
                when it cuts methods to fit its hours (sizing.py)
    teaches     its runs are the lesson's own: drawn and read, no claim rests on them
    answers     the question of a page's "What to use" its table answers: WHICH_METHOD (one row per method
                setting `label` and seed, with its test bits, share trained and costs) or HOW_MUCH_DATA (one row
                per method `label`, `train_size` and seed, with its test bits); "" for none
    """
    name: str
    notebook: str
    settings: type
    profiles: dict = field(default_factory=dict)
    split: str | None = None
    plan: Callable | None = None
    control_entry: Callable | None = None
    work: Callable | None = None
    passes: Callable | None = None
    steps: dict = field(default_factory=dict)
    columns: tuple = ()
    build: Callable | None = None
    read: Callable | None = None
    claims: tuple = ()
    claims_table: str | None = None
    figures: dict = field(default_factory=dict)
    filters: dict = field(default_factory=dict)
    study: Callable | None = None
    reference_arms: tuple = ()
    teaches: bool = False
    answers: str = ""

    @property
    def trains_runs(self):
        """Its work is independent training runs (planning.plan), which costs.py can price one by one."""
        return self.plan is not None

    @property
    def judged_table(self):
        """The table its claims read: claims_table, else its own."""
        return self.claims_table or self.name

    @property
    def number(self):
        """Its notebook's number, "04"."""
        return self.notebook[:2]


_REGISTRY = {}


def register(family):
    """Add a family (once per name; registering the same name again replaces it, as re-running a notebook cell
    that defines a family would). Returns the family."""
    if not isinstance(family, Family):
        raise TypeError(f"register takes a Family, got {type(family).__name__}")
    _REGISTRY[family.name] = family
    return family


def unregister(name):
    """Remove a family registered by name (a test's toy family, once its test is done)."""
    _REGISTRY.pop(name, None)


def registered():
    """Every registered family, in the order of their notebooks."""
    return sorted(_REGISTRY.values(), key=lambda f: f.notebook)


def get(token):
    """The family a user or a record names: a Family as it is, or "04", "4", "04_layer_removal" or its store
    name. A ValueError lists the choices."""
    if isinstance(token, Family):
        return token
    token = str(token).strip()
    if token in _REGISTRY:
        return _REGISTRY[token]
    number = token.zfill(2) if token.isdigit() else token[:2]
    for family in registered():
        if family.number == number:
            return family
    names = ", ".join(f.name for f in registered())
    numbers = ", ".join(f"{f.number} ({f.name})" for f in registered())
    raise ValueError(f"unknown family {token!r}; choose one of {names}, or a notebook's number: {numbers}")


def family_of(token):
    """The name of the family get() finds."""
    return get(token).name


def of_notebook(stem):
    """The family notebook `stem` runs, or None (01 and 02 run none)."""
    return next((f for f in registered() if f.notebook == stem), None)
