"""How much of the default profile's protocol a study keeps: the cuts study init makes to fit --hours, in order.

A study is the default profile's figure families (notebooks 04-07, or those --only names) on the user's data,
every run at the steps the pilot found a run needs here (pilot.py) and every method comparison at SEEDS seeds.
When its estimate (estimate.py, the pilot's seconds included) is over --hours, init cuts its breadth, in this
order, each cut keeping the ones before it (CUTS):

    1. 06's methods: every entry of the default profile's, then the entries its claims name, then its
       reference arms (Family.reference_arms: full fine-tuning and Houlsby m=64);
    2. 07's training sizes: all that the data hold, then the SMALLEST_SIZES smallest;
    3. the budget controls: every seed, then the first seed only, then none.

Never cut: the steps (runs that have not learnt judge nothing), the seeds (an interval over fewer than three
seeds is too wide to decide a comparison), and the families, which are the user's choice (--only). When even
the last cut is over the hours, init refuses in one line (refusal): that study's hours, and the choices that
would fit, fewer families (--only) or shorter texts (--max-length).
"""
import math
from dataclasses import dataclass
from itertools import combinations

from . import families as registry

SEEDS = 3  # of every method comparison (the first trains a grid's trials, all three the chosen rate)
SMALLEST_SIZES = 3  # 07's curve keeps at least this many training sizes
SHORTEST = 16  # tokens: the shortest --max-length (tasks.fit_max_length's floor)


@dataclass(frozen=True)
class Cut:
    """How far a study is cut (see the module docstring): 06's methods ("every", "claimed" or "reference"),
    how many of 07's training sizes (None: all), and the budget controls ("every seed", "first seed", "none")."""
    methods: str
    sizes: int | None
    controls: str

    def text(self):
        methods = {"every": "every method of 06", "claimed": "06's methods its claims name",
                   "reference": "06's reference arms"}[self.methods]
        sizes = "all of 07's training sizes" if self.sizes is None else f"07's {self.sizes} smallest training sizes"
        controls = {"every seed": "budget controls at every seed", "first seed": "budget controls at the first seed",
                    "none": "no budget controls"}[self.controls]
        return f"{methods}, {sizes}, {controls}"


CUTS = (Cut("every", None, "every seed"), Cut("claimed", None, "every seed"), Cut("reference", None, "every seed"),
        Cut("reference", SMALLEST_SIZES, "every seed"), Cut("reference", SMALLEST_SIZES, "first seed"),
        Cut("reference", SMALLEST_SIZES, "none"))


# ----------------------------------------------------------------------------- the user's choices

def study_families():
    """The families a study plans (Family.study: what init writes for each), in notebook order."""
    return [f for f in registry.registered() if f.study]


def chosen_families(only=None):
    """The families --only names ("06,07": numbers or names), in notebook order; None: every study family. A
    family a study does not plan, or none at all, is a one-line ValueError naming the choices."""
    allowed = study_families()
    if only is None:
        return allowed
    choices = ", ".join(f"{f.number} ({f.name})" for f in allowed)
    tokens = [t.strip() for t in str(only).split(",") if t.strip()]
    if not tokens:
        raise ValueError(f"--only names no family: give some of {choices}, comma-separated")
    chosen = []
    for token in tokens:
        try:
            family = registry.get(token)
        except ValueError:
            raise ValueError(f"--only {token}: no such family; a study plans {choices}") from None
        if family not in allowed:
            raise ValueError(f"--only {token}: a study plans {choices} (notebooks 03 and 08 train on the packaged "
                             "tasks)")
        chosen.append(family)
    return [f for f in allowed if f in chosen]


def check_max_length(max_length):
    """--max-length: None (fit it to the texts) or at least SHORTEST tokens; else a one-line ValueError."""
    if max_length is not None and max_length < SHORTEST:
        raise ValueError(f"--max-length {max_length} is below {SHORTEST} tokens, too short for a text and its "
                         f"special tokens: give {SHORTEST} or more, or leave it out to fit it to the texts")
    return max_length


def numbers(chosen):
    """'04,05,06,07', '06,07': how the command line (--only) names the families."""
    return ",".join(f.number for f in chosen)


# ----------------------------------------------------------------------------- fitting

def hours_text(seconds):
    """'2.2 h', '0.35 h': hours to two significant digits below one, as a refusal compares them with --hours."""
    hours = seconds / 3600
    return f"{hours:.1f} h" if hours >= 1 else f"{hours:.2g} h"


def fit(price, hours, first_seconds=0.0):
    """(cut, seconds) of the first of CUTS whose study fits `hours` with `first_seconds` spent before it (the
    pilot's); (None, seconds of the last cut) when none does. `price`: cut -> the study's estimated seconds."""
    for cut in CUTS:
        seconds = first_seconds + price(cut)
        if seconds <= hours * 3600:
            return cut, seconds
    return None, seconds


def refusal(price, hours, chosen, max_length, first_seconds=0.0, limit=4):
    """The one line init refuses with when even CUTS[-1] is over `hours`: that study's hours, then what would fit
    at that cut, fewer families (the largest sets under --only that fit, at most `limit`) or shorter texts (the
    longest --max-length, halving down to SHORTEST, that fits); else the hours to give. `price`: (cut, families,
    max_length) -> seconds."""
    smallest = CUTS[-1]
    need = first_seconds + price(smallest, chosen, max_length)
    fits = lambda seconds: seconds <= hours * 3600  # noqa: E731
    subsets = [(subset, first_seconds + price(smallest, list(subset), max_length))
               for n in range(len(chosen) - 1, 0, -1) for subset in combinations(chosen, n)]
    fitting = [(s, t) for s, t in subsets if fits(t)]
    names = lambda families: {f.name for f in families}  # noqa: E731  (a Family holds dicts: no hash)
    largest = [(s, t) for s, t in fitting if not any(names(s) < names(o) for o, _ in fitting)]
    largest = sorted(largest, key=lambda st: (-len(st[0]), -st[1]))[:limit]
    ways = [f"--only {numbers(s)}: {hours_text(t)}" for s, t in largest]
    length = max_length // 2
    while length >= SHORTEST:
        seconds = first_seconds + price(smallest, chosen, length)
        if fits(seconds):
            ways.append(f"--max-length {length}: {hours_text(seconds)}")
            break
        length //= 2
    what = (f"cuts that fit: {'; '.join(ways)}" if ways else
            f"nothing smaller fits: give --hours {math.ceil(need / 360) / 10:g} or more, or a smaller --backbone")
    return (f"--hours {hours:g} is less than the smallest valid study of {numbers(chosen)} here ({smallest.text()}; "
            f"{SEEDS} seeds, the pilot's steps): about {hours_text(need)} with the pilot; {what}")
