"""adapterlab: adapter layers for transformers (Houlsby, PHM, Compacter), built to be read.

    import adapterlab as al
    model = al.adapt(model, "compacter", n=4, bottleneck=24)
    print(al.count_parameters(model))
"""
from .inject import adapt, adapters_disabled, load_adapter, save_adapter
from .layers import BottleneckAdapter, LowRankLinear, PHMLinear
from .methods import METHODS, MethodConfig, method
from .params import count_parameters

__all__ = [
    "METHODS", "MethodConfig", "method", "adapt", "adapters_disabled", "save_adapter", "load_adapter",
    "count_parameters", "BottleneckAdapter", "LowRankLinear", "PHMLinear",
]
