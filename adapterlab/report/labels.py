"""The project's display names, defined once: method labels, legend labels, metric names.

Plots, widgets, findings, the tables and the notebooks all read their words from here, so a legend,
a CSV's `label` column and a sentence in a finding cannot spell the same thing two ways.

Vocabulary (each word means one thing in the package):

- **family**: one experiment and its notebook, everything it is in one module (adapterlab/families/): one plan,
  one store file of runs (data/results/<profile>/<family>.jsonl), one table and CSV, its figures, its reading
  and its claims. experiments.families lists the registered ones; notebook 03's lesson is one too, whose runs
  teach and judge no claim.
- **method line**: the line of the parameter/performance plot a method belongs to (Houlsby adapters
  of every size are one line, "adapters"). The param_performance CSV keeps it in its column named
  `family` (a column name kept for the committed tables' sake; it is not a family above).
- **label**: one trained method setting, as the run tables' `label` column spells it ("houlsby m=64",
  method_label: every knob); a **legend label** is what a reader sees in a legend or the efficiency
  table ("Houlsby m=64", legend_label: the method's display name and its plot-line knob).

Nothing here imports torch or pandas: the names are plain data.
"""

# ----------------------------------------------------------------------------- methods

# method -> its line in the parameter/performance plot; methods not listed are their own line
METHOD_LINE = {"houlsby": "adapters"}

# method (or method line) -> display name; names not listed are shown as they are
METHOD_NAMES = {
    "full": "full fine-tuning", "top-k": "top-k layers", "layernorm": "LayerNorm only", "bitfit": "BitFit",
    "houlsby": "Houlsby adapters", "adapters": "Houlsby adapters", "pfeiffer": "Pfeiffer adapter",
    "adapter-lowrank": "Adapter-LowRank", "adapterdrop": "AdapterDrop", "phm": "PHM adapter",
    "compacter": "Compacter", "compacter++": "Compacter++", "prompt-tuning-R": "Prompt Tuning-R",
    "prompt-tuning-T": "Prompt Tuning-T", "intrinsic-said": "Intrinsic-SAID", "lora": "LoRA",
    "head-only": "head only",
}


def method_line(method_name):
    """The plot line of a method: "adapters" for houlsby, else the method's own name."""
    return METHOD_LINE.get(method_name, method_name)


def variant(m):
    """A method setting's name where one method has variants the papers name apart (a MethodConfig):
    prompt tuning's two inits are Compacter's Prompt Tuning-R (random) and -T (token embeddings)."""
    if m.name == "prompt-tuning":
        return f"prompt-tuning-{'R' if m.prompt_init == 'random' else 'T'}"
    return m.name


def method_name(name):
    """Display name of a method or method line: "houlsby" -> "Houlsby adapters"."""
    return METHOD_NAMES.get(str(name), str(name))


def method_label(m):
    """The label of one method setting (a methods.MethodConfig), as the CSVs' `label` column has it:
    "houlsby m=64", "top-k k=3", "phm n=4 m=24", "compacter n=4 m=24", "prompt-tuning-T n=100",
    "intrinsic-said d'=1400", "lora r=8", "full"."""
    if m.trains == "top-k":
        return f"top-k k={m.k}"
    if m.projection == "phm":
        return f"{m.name} n={m.n} m={m.bottleneck}"
    if m.has_adapters:
        return f"{m.name} m={m.bottleneck}"
    if m.name == "prompt-tuning":
        return f"{variant(m)} n={m.prompt_tokens}"
    if m.name == "intrinsic-said":
        return f"intrinsic-said d'={m.intrinsic_dim}"
    if m.name == "lora":
        return f"lora r={m.rank}"
    return m.name


def legend_label(method, size=None):
    """The reader-facing name of a method setting from a table's `method` and `size` columns, as the
    figures' legends and the efficiency table (param_performance_table.csv) show it: "Houlsby m=64",
    "top-3", "PHM n=4", "full fine-tuning". method_label is the exact setting (it names every knob);
    this one names only the knob along the method's plot line, in the papers' words."""
    method = str(method)
    if size is None or size != size:  # None or NaN: a method without a size
        return method_name(method)
    size = int(size) if float(size).is_integer() else size
    if method == "top-k":
        return f"top-{size}"
    if method == "phm":
        return f"PHM n={size}"
    return f"{method_name(method).replace(' adapters', '').replace(' adapter', '')} m={size}"


def method_size(m):
    """The `size` of a method setting (a MethodConfig): the knob that varies along its plot line, k (blocks
    trained) for top-k, n (Kronecker terms) for phm, the bottleneck m for the other adapter methods; None
    (NaN in the table) for the rest."""
    if m.trains == "top-k":
        return m.k
    if m.name == "phm":
        return m.n
    if m.has_adapters:
        return m.bottleneck
    return None


# ----------------------------------------------------------------------------- the stream's learners

# notebook 08's learners (families/stream.py LEARNERS) -> display name, in the order every figure shows them
LEARNER_NAMES = {"sequential": "sequential fine-tuning", "adapters": "adapters (frozen base)",
                 "copies": "one fine-tuned copy per task"}


# ----------------------------------------------------------------------------- metrics

SCALE = 100  # fractions -> percent / "x 100", as the papers report
METRIC_NAMES = {"accuracy": "accuracy", "f1": "F1", "mcc": "MCC", "spearman": "Spearman", "pearson": "Pearson"}
PERCENT_METRICS = frozenset({"accuracy", "f1"})  # fractions of examples: shown as %; the others as x 100


def metric_name(metric):
    """Display name of a metric: "mcc" -> "MCC"."""
    return METRIC_NAMES.get(str(metric), str(metric))


def metric_unit(metric):
    """The unit after a value x SCALE: " %" for accuracy and F1, nothing for correlations."""
    return " %" if metric in PERCENT_METRICS else ""


def delta_unit(metric):
    """The unit after a difference x SCALE: " pp" (percentage points) or " pts"."""
    return " pp" if metric in PERCENT_METRICS else " pts"


def metric_label(metric, relative=False):
    """Axis text for a metric, with its unit: 'accuracy (%)', 'MCC × 100', 'Δ accuracy (percentage points)'."""
    name = metric_name(metric)
    if relative:
        return f"Δ {name} ({'percentage points' if metric in PERCENT_METRICS else 'points × 100'})"
    return f"{name} (%)" if metric in PERCENT_METRICS else f"{name} × 100"
