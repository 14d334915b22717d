"""Every paper claim the study judges, declared before its data: what is compared, on which split and metric,
the hypothesis (in the paper's direction, one-sided, or as equivalence within a margin), the members of a claim
made of several comparisons, and the paper's own words and number.

    from adapterlab.report.claims import CLAIMS, of
    of("init_scale")          # the claims notebook 05's table is judged on, in order

findings.py measures each claim's comparisons on its family's table and judges them (stats.verdict); only the
declared test's p-value enters Holm's correction over every tested claim (document.py, stats.holm). A claim's
verdict never depends on which way the data fell: "reversed" and "not reproduced" are read from the two-sided
interval, not tested. Exact checks (no sampling stands between the measurement and the claim) are declared
here too and reported apart, outside Holm's family.

Splits: runs choose their best state and their learning rate on the validation split (SELECTION), so no claim
is judged on it; "test" is the held-out test split every run is scored on, and "held-out" any split no choice
was made on (layer removal: its spans are scored on validation today, so its claims await held-out scoring).
"""
import math
from dataclasses import dataclass

from ..experiments import stats

TEST, HELD_OUT = "test", "held-out"
SELECTION = "validation"  # where each run's best state and learning rate are chosen: it judges no claim
PER_RUN = "per training run"  # a cost measured while training (peak memory, seconds per epoch)
FILES = "saved files"


@dataclass(frozen=True)
class Claim:
    """One paper claim as this study tests it.

    family      the table it is read from (families.FAMILIES)
    says        the claim in words, as the claims table names it; braces are filled by the family's reading
                ({task}, {a} and {b} as the table names them, {last_lower}, {ref}, {size}, {order})
    hypothesis  ">" (a above b) or "<" (a below b): the paper's direction, tested one-sided; "==" (a equals b
                within `margin`): equivalence, tested by TOST
    a, b        what is compared (a - b), in the family's own names
    members     where the claim is several comparisons that must each hold, the rule that lists them (its p is
                the largest of theirs: an intersection-union test); "" for one comparison
    per         a table column whose every value is a claim of its own (07: each training size), or ""
    within      for members over a setting (05's init std): the range (low, high] the members lie in
    metric      what is measured, and split the examples (or runs, or files) it is measured on
    column      the table column of a cost claim (judged as a log ratio); "" for accuracy
    margin      a difference worth seeing (stats.MARGIN; the paper's own where it states one)
    paper, paper_value
                the paper's words, and its number in the difference's units (None: a direction only)
    budget      whether the claim can move with the training budget (a cost per epoch or an exact check cannot)
    check       an exact measurement, reported as a check outside Holm's family
    """

    family: str
    says: str
    hypothesis: str
    a: str
    b: str
    metric: str
    split: str
    paper: str
    paper_value: float | None = None
    margin: float = stats.MARGIN
    members: str = ""
    per: str = ""
    within: tuple = ()
    column: str = ""
    unit: str = "points"
    budget: bool = True
    check: bool = False

    @property
    def log_ratio(self):
        return bool(self.column)


# The papers' numbers are the ones closest to our setting, a sentence classification: MNLI where the paper
# gives MNLI and CoLA, the GLUE mean otherwise.
FIG6 = "Houlsby Fig. 6"
PROMPT_LAGS = "Prompt Tuning 'lags behind fine-tuning substantially' (Compacter §4, Table 1)"
LOW_RESOURCE = ("Compacter++ above T5-base fine-tuning in the low-resource setting (Compacter Fig. 4, GLUE "
                "subsampled to 100-4,000)")
PERFECT_MEMORY = ("frozen shared weights give 'perfect memory of previous tasks using a small number of task-specific "
                  "parameters' (Houlsby et al. §4, on continual learning)")
FORGETTING = ("a network re-trained on each new task forgets the earlier ones, catastrophic forgetting (Houlsby et "
              "al. §4, on continual learning)")
COMPACT = ("adapters add 3.6% of the parameters per task (Houlsby abstract), 1.3x the base model in all for nine "
           "GLUE tasks against 9x for one fine-tuned copy per task (Table 1)")
HOULSBY_GROWTH = 0.036  # a share of one model per task
# the papers' differences smaller than the margin: no verdict a 1.5-point margin could give
UNTESTABLE = ("AdapterDrop −0.65, Adapter-LowRank −0.68 and Intrinsic-SAID −1.05 points against full "
              "(Compacter §4-5.5)")
COST_MARGIN = math.log1p(stats.COST_MARGIN)  # 5% more or less, as a log ratio


def _accuracy(family, says, hypothesis, a, b, paper, paper_value=None, **kw):
    return Claim(family, says, hypothesis, a, b, "accuracy", kw.pop("split", TEST), paper, paper_value, **kw)


def _vs_full(a, hypothesis, paper, paper_value=None):
    """06: setting a against b (full fine-tuning unless said), its test accuracy, paired by seed."""
    words = {">": "above", "<": "below", "==": "on par with"}[hypothesis]
    return _accuracy("param_performance", f"{{task}}: {{a}} {words} {{b}}", hypothesis, a, "full", paper, paper_value)


def _cost(a, column, what, paper, paper_value=None):
    """06: a cost of setting a against full fine-tuning's, Compacter 5.5 (T5-base on a 24 GB GPU; here process
    RSS and seconds on a CPU)."""
    metric = {"peak_memory_mb": "peak memory", "seconds_per_epoch": "time per epoch"}[column]
    return Claim("param_performance", f"{{task}}: {{a}} needs {what} ({metric}, ratio to full)", ">", a, "full",
                 metric, PER_RUN, paper, None if paper_value is None else math.log1p(paper_value), COST_MARGIN,
                 column=column, unit="%", budget=False)


CLAIMS = (
    # 04: one trained model with the adapters of some layers removed, paired by example with it
    _accuracy("layer_removal", "{task}: lower layers' adapters removable with a small loss (layers 0–{last_lower} "
              "removed vs none)", "==", "lower half removed", "none removed",
              f"removing layers 0–4 of 12 barely affects MNLI ({FIG6})", split=HELD_OUT),
    _accuracy("layer_removal", "{task}: upper layers' adapters matter more (lower half removed minus upper half "
              "removed)", ">", "lower half removed", "upper half removed",
              f"removing layers 8–11 costs far more than 0–4 ({FIG6})", split=HELD_OUT),
    _accuracy("layer_removal", "{task}: any single layer's adapters removable (each layer removed vs none)", "==",
              "one layer removed", "none removed", f"at most 2 points for any single layer ({FIG6}, diagonal)",
              split=HELD_OUT, margin=0.02, members="each layer"),
    _accuracy("layer_removal", "{task}: all adapters removed falls to the majority class (paired by example with "
              "the majority-class predictor)", "==", "all removed", "majority class",
              f"the majority class: 37% MNLI, 69% CoLA ({FIG6})", split=HELD_OUT),
    # 05: every std against the smallest, paired by seed
    _accuracy("init_scale", "{task}: seed means flat for std ≤ 1e-02 (each std minus std {ref:.0e})", "==",
              "each std", "the smallest std", "within about 1 point of the best for std 1e-7 to 1e-2 on MNLI and "
              f"CoLA ({FIG6}, right)", members="each std ≤ 1e-2", within=(0.0, 1e-2)),
    _accuracy("init_scale", "{task}: degrades for std > 1e-02 (each larger std minus std {ref:.0e})", "<",
              "each std", "the smallest std", f"degrades at 1e-1 and above, more on CoLA ({FIG6}, right)",
              members="each std > 1e-2", within=(1e-2, math.inf)),
    # 06: the papers' separations, test accuracy paired by seed
    _vs_full("layernorm", "<", "LayerNorm only 3.5 (CoLA) to 4 (MNLI) points below full fine-tuning (Houlsby "
                               "Fig. 4)", -0.04),
    _vs_full("top-k k=1", "<", "top layer only 77.8 against 84.4 on MNLI (Houlsby Fig. 4)", -0.066),
    _vs_full("top-k k=3", "<", "fewer layers fine-tuned: GLUE score 'decreases dramatically' (Houlsby Fig. 3)"),
    _accuracy("param_performance", "{task}: {a} above {b}", ">", "houlsby m=64", "top-k k=1",
              "adapters m=64 83.7 against the top layer's 77.8 on MNLI with a quarter of the parameters (Houlsby "
              "Fig. 4)", 0.059),
    _vs_full("houlsby m=64", "==", "within 0.4 points of full fine-tuning on GLUE, 3.6% of the parameters (Houlsby "
                                   "Table 1)"),
    _vs_full("compacter", "==", "on par with full fine-tuning, 0.073% of the parameters (Compacter Table 1)"),
    _vs_full("compacter++", "==", "on par with full fine-tuning, 0.047% of the parameters (Compacter Table 1)"),
    _vs_full("bitfit", "<", "below full fine-tuning on GLUE (Compacter Table 1)", -0.0153),
    _vs_full("prompt-tuning-R n=100", "<", PROMPT_LAGS),
    _vs_full("prompt-tuning-T n=100", "<", PROMPT_LAGS),
    _vs_full("head-only", "<", "fine-tuning 'often enjoys better performance than feature-based transfer' (Houlsby "
                               "§1; Table 2: 72.7 for its feature-based baseline against 73.7)", -0.010),
    _cost("intrinsic-said", "peak_memory_mb", "more peak memory than full fine-tuning",
          "more memory than T5-base fine-tuning on a GPU (Compacter §5.5)", 0.4114),
    _cost("prompt-tuning-R n=100", "peak_memory_mb", "more peak memory than full fine-tuning",
          "more memory than T5-base fine-tuning on a GPU (Compacter §5.5)", 0.2442),
    _cost("intrinsic-said", "seconds_per_epoch", "more time per epoch than full fine-tuning",
          "among the slowest to train (Compacter §5.5, Table 3)"),
    _cost("prompt-tuning-R n=100", "seconds_per_epoch", "more time per epoch than full fine-tuning",
          "among the slowest to train (Compacter §5.5, Table 3)"),
    # 07: Compacter++ against full fine-tuning at each training size, paired by seed
    _accuracy("low_resource", "{task}: Compacter++ above full fine-tuning at {size:,} examples", ">", "compacter++",
              "full", LOW_RESOURCE, per="train_size"),
    # 08: a stream of tasks
    Claim("stream", "order {order}: adapters keep perfect memory (earlier tasks' accuracy after the last task minus "
          "right after their training)", "==", "adapters after the last task", "adapters right after their task",
          "accuracy", TEST, PERFECT_MEMORY, per="order", budget=False, check=True),
    Claim("stream", "order {order}: sequential fine-tuning forgets (earlier tasks' accuracy right after their "
          "training minus after the last task)", ">", "sequential right after its task",
          "sequential after the last task", "accuracy", TEST, FORGETTING, per="order"),
    Claim("stream", "adapters store a small part of a model per task, a copy a whole model (bytes added per task, "
          "adapters minus copies, as a share of one fine-tuned model)", "<", "adapters", "copies", "bytes on disk",
          FILES, COMPACT, HOULSBY_GROWTH - 1, stats.COST_MARGIN, unit="% of a model", budget=False, check=True),
)


def of(family):
    """The claims declared for a family, in the order its reading prints them."""
    return [c for c in CLAIMS if c.family == family]

