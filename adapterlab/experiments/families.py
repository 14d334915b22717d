"""The experiment families: which notebook trains which store of runs, and which split each one scores.

A **family** is one experiment: one plan of work (planning.work), one store file of records
(data/results/<profile>/<family>.jsonl), its tables, figures and readings, one notebook. FAMILIES
are the four figure families of training runs compared across methods; notebook 03's **teaching**
runs are planned and stored like theirs but draw no figure; notebook 08's **stream** plans steps
that read each other's weights instead of independent training runs. All of them are PLANNED: the
runners (running.run_plan, the sweep) treat them alike.
"""

FAMILIES = ("layer_removal", "init_scale", "param_performance", "low_resource")
STREAM = "stream"  # notebook 08: its steps (stream.py) are units of work like the others' training runs
TRAINED = ("teaching", *FAMILIES)  # the plans of training runs (planning.plan: run configs; costs.py)
PLANNED = (*TRAINED, STREAM)  # everything with a plan of work (planning.work) and a store file

# notebook stem -> the family (or "teaching", or STREAM) whose runs it trains and draws; 01 and 02 train nothing
NOTEBOOK_FAMILY = {"03_training_adapters": "teaching", "04_layer_removal": "layer_removal",
                   "05_init_scale": "init_scale", "06_params_vs_performance": "param_performance",
                   "07_low_resource": "low_resource", "08_stream_of_tasks": STREAM}
FAMILY_NOTEBOOK = {family: stem for stem, family in NOTEBOOK_FAMILY.items()}

# Which split a family's `value` column measures (its table's `split` column says the same per row):
# spans and init scales are scored on validation; the method comparisons report the test score of
# the state that was best on validation, tested once.
SPLITS = {"layer_removal": "validation", "init_scale": "validation", "param_performance": "test",
          "low_resource": "test"}


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
