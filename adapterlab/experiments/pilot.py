"""The pilot: how many steps a run needs on a study's data, learnt before study init sizes the study.

    found = pilot.run(pilot.configs(profile, families, cap=360), eval_size=profile.eval_size)
    found.steps      # every run of the study trains at least this many steps

The arms its claims are measured against (Family.reference_arms: full fine-tuning and Houlsby m=64) train once
each, seed 0, on the study's own data, length and evaluation sets, for `cap` steps (the default profile's),
validated EVALUATIONS times. The project's convergence rule (rules.convergence) then reads each curve as it
stood at each validation: the first step at which its verdict on the curve so far is "converged" is what that
arm needs (needed_steps); the pilot's answer is the most any arm needs, or the cap where an arm never converges
within it (then the runs may not converge either, and the header says so).

A prefix of one long run stands for a run of that length, which would cost one run per length tried; the two
differ in the rate's schedule (a run of that length decays its rate to zero by its end, the prefix has not), so
the study's budget controls, each run again at twice the steps, check afterwards whether the steps were enough.
Its seconds count in the study's cost: it is the first thing the study's hours buy.
"""
import time
from dataclasses import dataclass

from . import families as registry
from . import planning, rules
from ..training import train as T

EVALUATIONS = 12  # validations of a pilot run: the resolution of the steps it finds is cap / 12


@dataclass(frozen=True)
class Pilot:
    """What the pilot found: the steps a run needs here (at most `cap`), the seconds it took, and per arm
    (label, the step its curve converged at, or None: not within the cap)."""
    steps: int
    seconds: float
    cap: int
    arms: tuple = ()

    @property
    def converged(self):
        return all(step is not None for _, step in self.arms)

    def text(self):
        """A sentence for the study's header: what each arm needed, or that the value was given."""
        if not self.arms:
            return f"{self.steps} steps a run (given, not measured)"
        found = ", ".join(f"{label} converged by step {step}" if step else f"{label} did not converge within "
                          f"{self.cap} steps" for label, step in self.arms)
        return (f"{self.steps} steps a run, what the pilot found a run needs here ({found}, under the convergence "
                f"rule {rules.CONVERGENCE_RULE_VERSION}; {self.seconds / 60:.1f} min, counted in the estimate)")


def configs(profile, chosen, cap, evaluations=EVALUATIONS):
    """The pilot's runs: each reference arm (Family.reference_arms) of the families `chosen`, once, seed 0, at its
    rate without a grid (planning.method_lr), for `cap` steps validated `evaluations` times, on the profile's task,
    train size, length and backbone."""
    every = max(1, cap // evaluations)
    arms = dict.fromkeys((m, tuple(sorted(args.items())), f.name) for f in map(registry.get, chosen)
                         for m, args in f.reference_arms)
    return [planning.config_for(profile, task=profile.tasks[0], method=m, method_args=dict(args),
                                lr=planning.method_lr(profile, m, profile.settings(name)), max_steps=every * evaluations,
                                eval_every=every, seed=0)
            for m, args, name in arms]


def needed_steps(curve, entropy):
    """The first validation step at which the convergence rule finds the curve so far converged; None if never."""
    for end in range(2, len(curve) + 1):  # the rule needs two validations
        if rules.convergence(curve[:end], entropy)["converged"]:
            return curve[end - 1]["step"]
    return None


def trained(config, eval_size=None, device="auto"):
    """One pilot run's training (train.train: its curve and the class entropy), without what a stored run also
    measures (its serving latency, its parameters): the pilot keeps only its curve."""
    model, tokenizer, task = T.build(config)
    return T.train(model, tokenizer, T.cap_eval(task, eval_size), config.train, device=device,
                   max_length=config.max_length, progress=False)


def run(runs, eval_size=None, device="auto", train=trained):
    """Train the pilot's runs (configs) and read them (needed_steps): a Pilot. `train`: how a run trains
    (trained; a test passes its own)."""
    if not runs:
        raise ValueError("the pilot has no arms to train: none of the study's families names reference_arms")
    start, arms = time.perf_counter(), []
    for config in runs:
        record = train(config, eval_size=eval_size, device=device)
        label = " ".join([config.method, *(f"{k}={v}" for k, v in config.method_args.items())])
        arms.append((label, needed_steps(record["curve"], record.get("class_entropy"))))
    cap = runs[0].train.max_steps
    steps = max(cap if step is None else step for _, step in arms)
    return Pilot(steps, time.perf_counter() - start, cap, tuple(arms))
