"""The experiment families, one module each, registered on import (experiments.families.register).

Each module holds everything its family is: its typed settings and their values in the built-in profiles, its
plan of work and budget-control entry, its table, figures, reading and claims, and what `study init` writes for
it. The engines to the left (experiments/, report/) take a family and never name one; adding a family is adding a
module that registers one (tests/experiments/test_toy_family.py does it from outside the package).
"""
from . import teaching, layer_removal, init_scale, param_performance, low_resource, stream  # noqa: F401
