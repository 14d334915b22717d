"""The project's convergence rule: when has a run stopped improving? One place, versioned.

A run has converged when
  (a) PLATEAU: it has shown that it stopped improving. Its last-third gain is the best validation score in
      the last CONVERGENCE["tail"] of its steps minus the best before them; its SE is paired (the two
      checkpoints' correct bits on the same validation examples: stats.paired_difference). The gain's
      one-sided 95% upper confidence bound, gain + 1.645 x SE, must lie below stats.MARGIN (1.5 points, the
      project's one "difference worth seeing"). A gain that cannot be measured (no per-example bits, fewer
      than two evaluations) never counts as a plateau: the burden of proof is on "it stopped";
  (b) LEARNED: its final training loss (the mean over the last evaluation interval) is under
      CONVERGENCE["loss_ratio"] x the entropy of the training labels, the loss of predicting only the class
      frequencies (0.91 nats for airline tweets); without an entropy (regression, text-to-text) (a) decides.

The runner stamps every record with the verdict and CONVERGENCE_RULE_VERSION; tables write the stored
verdict, never a recomputed one. Earlier versions and why each changed: docs/protocol.md.
"""
import math

from . import stats

CONVERGENCE_RULE_VERSION = 3
CONVERGENCE = {"margin": stats.MARGIN, "z": stats.Z_ONE_SIDED, "tail": 1 / 3, "loss_ratio": 0.8}
CONVERGENCE_RULE = (f"rule {CONVERGENCE_RULE_VERSION}: the last-third validation gain + {CONVERGENCE['z']:.3f} "
                    f"paired SE < {CONVERGENCE['margin'] * 100:g} points (a gain without per-example bits never "
                    f"counts) and final train loss < {CONVERGENCE['loss_ratio']:g} x class entropy")


def _missing(x):
    return x is None or (isinstance(x, float) and math.isnan(x))


def converged(gain, se, final_loss, entropy=None, rule=CONVERGENCE):
    """The rule's verdict from its four numbers (what a record or a table row keeps): (a) the gain's one-sided
    95% upper bound below the margin (stats.gain_below_margin; False when gain or se is missing) and (b)
    final_loss below loss_ratio x entropy."""
    plateaued = stats.gain_below_margin(gain, se, rule["margin"])
    learned = _missing(entropy) or (not _missing(final_loss) and final_loss < rule["loss_ratio"] * entropy)
    return bool(plateaued and learned)


def last_third_gain(curve, rule=CONVERGENCE):
    """(gain, se) of a curve: the best validation in the last `tail` of the steps minus the best before
    (the first best, as train keeps it), and the paired SE of the two checkpoints (None without their
    correct bits); (None, None) with fewer than two evaluations."""
    if len(curve) < 2:
        return None, None
    cut = (1 - rule["tail"]) * curve[-1]["step"]
    n_before = max(1, sum(p["step"] <= cut for p in curve))  # at least one point on each side
    before = max(curve[:n_before], key=lambda p: p["validation"])
    after = max(curve[n_before:], key=lambda p: p["validation"])
    se = None
    if "correct" in before and "correct" in after:
        se = stats.paired_difference(before["correct"], after["correct"], before["examples"])[1]
    return after["validation"] - before["validation"], se


def convergence(curve, entropy=None, rule=CONVERGENCE):
    """The convergence verdict of a run from its curve, as the runner stores it: {"converged",
    "final_train_loss", "plateau_gain", "plateau_se", "rule_version"}."""
    final_loss = curve[-1]["train_loss"] if curve else None
    gain, se = last_third_gain(curve, rule)
    return {"converged": converged(gain, se, final_loss, entropy, rule), "final_train_loss": final_loss,
            "plateau_gain": gain, "plateau_se": se, "rule_version": CONVERGENCE_RULE_VERSION}


def stored_rule_version(record):
    """The version of the rule a stored verdict was made under (every record keeps it); None when unknown."""
    return None if record.get("rule_version") is None else int(record["rule_version"])
