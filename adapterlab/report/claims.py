"""What a paper claim is, as the study judges it, declared before its data: what is compared, on which split and
metric, the hypothesis (in the paper's direction, one-sided, or as equivalence within a margin), the members of a
claim made of several comparisons, and the paper's own words and number. Each family declares its own claims
(Family.claims, in its module under adapterlab/families/), in the order its reading judges them.

A family's reading measures each claim's comparisons on its table and judges them (judge.verdict); only the
declared test's p-value enters Holm's correction over every tested claim (document.py, judge.holm). A claim's
verdict never depends on which way the data fell: "reversed" and "not reproduced" are read from the two-sided
interval, not tested. Exact checks (no sampling stands between the measurement and the claim) are declared
here too and reported apart, outside Holm's family.

Splits: runs choose their best state and their learning rate on the validation split (SELECTION), so no claim
is judged on it; "test" is the held-out test split every run is scored on, and "held-out" any split no choice
was made on (layer removal: its spans are scored on the train examples the run's seeded subset left out,
tasks.unused).
"""
import datetime
import math
from dataclasses import dataclass

from ..experiments import judge, stats

# When the hypotheses were first fixed, in one registry (report/claims.py, commit 75f2717): some of the records
# they judge are older (docs/protocol.md says which); FINDINGS.md counts them (document.declared_line)
DECLARED_AT = datetime.datetime(2026, 12, 4, 21, 29, 39, tzinfo=datetime.timezone.utc)
TEST, HELD_OUT = "test", "held-out"
SELECTION = "validation"  # where each run's best state and learning rate are chosen: it judges no claim
PER_RUN = "per training run"  # a cost measured while training (peak memory, seconds per epoch)
PER_TIMING_RUN = "per timing run"  # the same costs measured by short runs made to measure them (06's timing runs)
FILES = "saved files"


@dataclass(frozen=True)
class Claim:
    """One paper claim as this study tests it.

    family      the name of the family that declares it (the table it is read from)
    says        the claim in words, as the claims table names it; braces are filled by the family's reading
                ({task}, {a} and {b} as the table names them, {last_lower}, {ref}, {size}, {order})
    hypothesis  ">" (a above b) or "<" (a below b): the paper's direction, tested one-sided; "==" (a equals b
                within `margin`): equivalence, tested by TOST
    a, b        what is compared (a - b), as the claim's words name it
    arms        the plan entries the claim compares, as a plan names a run: (method, method_args), or a method's
                name for whichever one entry of that method the plan has; () for a claim about every run of its
                family (04's one model, 05's stds). A plan without one of them cannot judge the claim, and
                planning.unplanned_claims says so before anything trains
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
    arms: tuple = ()

    @property
    def log_ratio(self):
        return bool(self.column)


# The papers' numbers are the ones closest to our setting, a sentence classification: MNLI where the paper
# gives MNLI and CoLA, the GLUE mean otherwise.
FIG6 = "Houlsby Fig. 6"
COST_MARGIN = math.log1p(judge.COST_MARGIN)  # 5% more or less, as a log ratio


def accuracy_claim(family, says, hypothesis, a, b, paper, paper_value=None, **kw):
    """A claim on accuracy, judged on the test split unless `split` says otherwise."""
    return Claim(family, says, hypothesis, a, b, "accuracy", kw.pop("split", TEST), paper, paper_value, **kw)


