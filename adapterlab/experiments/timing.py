"""A machine's measured speed and what it makes of a run: the seconds an estimate scales.

study init measures one (study_init.time_training, time_scoring) to size a study for this machine, and the
dry run measures or reads one (costs.speed_here, gpu_speed) to put hours on a plan: both then ask the one
estimate (estimate.py), which asks Timing.run_seconds what each run costs.
"""
import math
from dataclasses import dataclass

from ..methods.config import method

FULL_BACKWARD = 1.5  # a step that trains every weight, relative to an adapter step: backward 2x forward, not 1x


@dataclass(frozen=True)
class Timing:
    """Seconds measured here: one training step of `backbone` (batch_size examples of max_length tokens, a
    Houlsby adapter; for a study, the length its batches pad to), one load of the backbone and, where it was
    measured (time_scoring), one example's scoring of every span of notebook 04's layer removal."""
    device: str
    step_seconds: float
    load_seconds: float
    batch_size: int
    max_length: int
    span_seconds: float | None = None
    backbone: str = "default"

    def run_seconds(self, config, sizes, eval_cap, scale=1.0):
        """A run's estimated seconds: the backbone's load, its steps and its evaluations (validation each
        eval_every steps and test once, a forward pass costing half an adapter step per example). `scale`: how
        many times a timed example each of the run's examples costs (estimate.scale: another backbone or
        length)."""
        t = config.train
        n = config.train_size or sizes["train"]
        per_epoch = math.ceil(n / t.batch_size)
        steps = t.max_steps or math.ceil(t.epochs * per_epoch)
        evaluations = math.ceil(steps / (t.eval_every or per_epoch))
        example = self.step_seconds * scale / self.batch_size  # one example's share of a timed step
        step = example * t.batch_size
        weight = FULL_BACKWARD if method(config.method, **config.method_args).trains == "all" else 1.0
        cap = eval_cap or math.inf
        examples = evaluations * min(sizes["validation"], cap) + min(sizes["test"], cap)
        return self.load_seconds + steps * step * weight + examples * example / 2
