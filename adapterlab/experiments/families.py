"""The experiment families: which notebook trains which store of runs, and which split each one scores.

A **family** is one experiment: one plan of work (planning.work), one store file of records
(data/results/<profile>/<family>.jsonl), its tables, figures and readings, one notebook. FAMILIES
are the four figure families of training runs compared across methods; notebook 03's **teaching**
runs are planned and stored like theirs but draw no figure; notebook 08's **stream** plans steps
that read each other's weights instead of independent training runs. All of them are PLANNED: the
runners (running.run_plan, the sweep) treat them alike.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    """One family's registration, as the experiment layer knows it. Its settings (profiles.SETTINGS), its
    planner (planning), and its table builder, figures and reading (report: tables.BUILDERS, figures.FIGURES,
    findings.READERS) are registered under the same name in their own layers, since imports flow one way and
    this module cannot name what comes after it; tests/checks/test_one_path.py keeps the tables in step.

    name      the store file's name and the key of the per-layer tables
    notebook  the notebook (stem) that trains it and draws its figures
    figure    one of the figure families compared across methods (FAMILIES)
    trained   its plan is training runs (planning.plan: run configs; costs.py); else steps of its own
    split     which split its table's `value` column measures (its `split` column says the same per row): spans
              and init scales are scored on validation; the method comparisons report the test score of the
              state that was best on validation, tested once. None: a table without one such column
    claims    the table its claims read when not its own: layer removal's spans scored again on examples its
              run never trained on (its own table, on validation, is the heatmap's)"""
    name: str
    notebook: str
    figure: bool = True
    trained: bool = True
    split: str | None = None
    claims: str | None = None


REGISTRY = (
    Family("teaching", "03_training_adapters", figure=False),  # the lesson's runs: stored, drawn, no claim
    Family("layer_removal", "04_layer_removal", split="validation", claims="layer_removal_held_out"),
    Family("init_scale", "05_init_scale", split="validation"),
    Family("param_performance", "06_params_vs_performance", split="test"),
    Family("low_resource", "07_low_resource", split="test"),
    Family("stream", "08_stream_of_tasks", figure=False, trained=False),  # steps that read each other's weights
)

FAMILIES = tuple(f.name for f in REGISTRY if f.figure)
STREAM = next(f.name for f in REGISTRY if not f.trained)  # notebook 08: its steps (stream.py) are units of work
TRAINED = tuple(f.name for f in REGISTRY if f.trained)  # the plans of training runs (planning.plan; costs.py)
PLANNED = tuple(f.name for f in REGISTRY)  # everything with a plan of work (planning.work) and a store file
# notebook stem -> the family whose runs it trains and draws; 01 and 02 train nothing
NOTEBOOK_FAMILY = {f.notebook: f.name for f in REGISTRY}
FAMILY_NOTEBOOK = {f.name: f.notebook for f in REGISTRY}
SPLITS = {f.name: f.split for f in REGISTRY if f.split}
CLAIMS_TABLE = {f.name: f.claims or f.name for f in REGISTRY}  # family -> the table its claims read


def family_of(token):
    """The planned family a user names: "04", "4", "04_layer_removal" or "layer_removal".
    A ValueError lists the choices."""
    token = str(token).strip()
    if token in PLANNED:
        return token
    number = token.zfill(2) if token.isdigit() else token[:2]
    for stem, family in NOTEBOOK_FAMILY.items():
        if stem[:2] == number:
            return family
    choices = ", ".join(f"{stem[:2]} ({family})" for stem, family in NOTEBOOK_FAMILY.items())
    raise ValueError(f"no experiment {token!r}; choose among {choices}")
