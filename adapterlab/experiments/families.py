"""The experiment families: which notebook trains which store of runs, and which split each one scores.

A **family** is one figure experiment: one planner (planning.plan), one store file of runs
(data/results/<profile>/<family>.jsonl), one table (tables.write), one notebook. Notebook 03's
**teaching** runs are planned and stored like a family's but draw no figure, so teaching is in
PLANNED and not in FAMILIES.
"""

FAMILIES = ("layer_removal", "init_scale", "param_performance", "low_resource")
PLANNED = ("teaching", *FAMILIES)  # everything with a plan of training runs (and a store file)

STREAM = "stream"  # notebook 08's steps (stream.py): stored like runs (stream.jsonl) but planned as a stream

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
    if token in PLANNED or token == STREAM:
        return token
    number = token.zfill(2) if token.isdigit() else token[:2]
    for stem, family in NOTEBOOK_FAMILY.items():
        if stem[:2] == number:
            return family
    choices = ", ".join(f"{stem[:2]} ({family})" for stem, family in NOTEBOOK_FAMILY.items())
    raise ValueError(f"no experiment {token!r}; choose among {choices}")
