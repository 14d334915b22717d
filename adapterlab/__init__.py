"""adapterlab: adapter layers for transformers (Houlsby, PHM, Compacter), built to be read.

    import adapterlab as al
    model = al.adapt(model, "compacter", n=4, bottleneck=24)
    print(al.count_parameters(model))
"""
from .methods.inject import adapt, adapters_disabled
from .methods.saving import load_adapter, save_adapter
from .nn.layers import BottleneckAdapter, LowRankLinear, PHMLinear
from .methods.config import METHODS, MethodConfig, method
from .methods.params import count_parameters

from . import families  # noqa: E402,F401  (each family registers itself: the engines find them by name)

__all__ = [
    "METHODS", "MethodConfig", "method", "adapt", "adapters_disabled", "save_adapter", "load_adapter",
    "count_parameters", "BottleneckAdapter", "LowRankLinear", "PHMLinear",
]
