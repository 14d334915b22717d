"""How a course check judges an answer: the Result it prints, the Hint that names what is wrong without
giving the answer away, and the guards every check shares (a stub is "not yet"; a number, a count or a
tensor of the wrong type or shape gets a hint, never a traceback; a forbidden library function fails inside
the check; the largest tensor an answer builds is watched). The checks themselves: checks_methods.py
(notebooks 01-03) and checks_study.py (04-08); exercises.py lists them.
"""
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


@dataclass
class Result:
    exercise: str
    passed: bool
    message: str

    def __bool__(self):
        return self.passed

    def __str__(self):
        mark = "PASS" if self.passed else "NOT YET"
        return f"[{mark}] {self.exercise}: {self.message}"


class Hint(Exception):
    """Raised inside a checker: the answer is wrong, and the message says how."""


def _stub(answer):
    return answer is None or answer is Ellipsis


def _call(fn, *args):
    """Run the student's function; a stub or a crash becomes a hint, not a traceback."""
    try:
        return fn(*args)
    except Hint:  # a forbidden shortcut, refused inside the student's code (see _refused)
        raise
    except NotImplementedError:
        raise Hint("the stub is still there: replace `raise NotImplementedError` with your code") from None
    except Exception as error:  # the student's bug, reported in one line
        raise Hint(f"your function raised {type(error).__name__}: {error}") from None


def _describe(value):
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return f"a {type(value).__name__} of shape {tuple(value.shape)}"
    return f"{type(value).__name__} {value!r}" if isinstance(value, (str, bool)) else f"a {type(value).__name__}"


def _number(value, what):
    """`value` as a Python float when it is one number: an int or float, a NumPy scalar, or a tensor or
    array with one element (np.int64(2), np.float32(2) and torch.tensor(2.) are numbers too); else a hint."""
    if isinstance(value, (bool, np.bool_)):
        raise Hint(f"{what} should be a number, got {_describe(value)}")
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    if isinstance(value, (torch.Tensor, np.ndarray)):
        if value.dtype in (torch.bool, np.bool_) or (isinstance(value, torch.Tensor) and value.is_complex()):
            raise Hint(f"{what} should be a real number, got {_describe(value)}")
        if (value.size if isinstance(value, np.ndarray) else value.numel()) == 1:
            return float(value.item())
        raise Hint(f"{what} should be one number, got {_describe(value)}")
    raise Hint(f"{what} should be a number, got {_describe(value)}")


def _count(value, what):
    """`value` as an int when it is a whole number (3, np.int64(3), torch.tensor(3), 3.0); else a hint."""
    number = _number(value, what)
    if not number.is_integer():
        raise Hint(f"{what} should be a whole number, got {number:g}")
    return int(number)


_MISSING = object()
KRON = [(torch, "kron"), (torch.Tensor, "kron"), (np, "kron")]  # every library Kronecker product


@contextmanager
def _refused(targets, hint):
    """Inside the block, calling any of `targets` ((owner, attribute name) pairs) raises Hint(hint): the
    exercise forbids that shortcut, so an answer built on it fails with the reason instead of passing."""
    def refuse(*args, **kwargs):
        raise Hint(hint)

    saved = [(owner, name, owner.__dict__.get(name, _MISSING)) for owner, name in targets]
    for owner, name in targets:
        setattr(owner, name, refuse)
    try:
        yield
    finally:
        for owner, name, original in saved:
            if original is _MISSING:  # inherited (torch.Tensor.kron lives on the C base class)
                delattr(owner, name)
            else:
                setattr(owner, name, original)


class _LargestTensor(TorchDispatchMode):
    """Records the size of the largest tensor any torch operation computes inside the block (views and
    intermediates included: einsum, matmul and broadcasting all reach the dispatcher as aten ops)."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        # inputs too: a matrix built outside torch (numpy, scipy) shows up when an operation reads it
        for leaf in tree_leaves((out, args, kwargs)):
            if isinstance(leaf, torch.Tensor):
                self.largest = max(self.largest, leaf.numel())
        return out


def _same(a, b):
    # float64 on inputs of order one: rounding differences are ~1e-15, a real mistake is order one
    return isinstance(a, torch.Tensor) and a.shape == b.shape and torch.allclose(a, b, rtol=1e-9, atol=1e-12)


def _close(a, b):
    """Two float64 results that agree up to rounding."""
    return abs(a - b) <= 1e-9 * abs(b)


def _first_slip(matches, slips, otherwise=None):
    """Raise the hint of the first (candidate, hint) in `slips` whose candidate the answer `matches` (a
    candidate None is skipped: a slip that cannot be told apart on these inputs); when none does, raise
    Hint(otherwise), unless it is None."""
    for candidate, hint in slips:
        if candidate is not None and matches(candidate):
            raise Hint(hint)
    if otherwise is not None:
        raise Hint(otherwise)


def _randn(gen, *shape):
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def _tiny_bert(method=None, dropout=0.1, **options):
    """A 2-layer BERT small enough to train in a check; with `method`, adapted (al.adapt) with `options`."""
    from transformers import BertConfig, BertForSequenceClassification

    from ..methods.inject import adapt

    config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16, num_labels=3,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    return adapt(model, method, **options) if method else model


def _shape(result, expected, what):
    if not isinstance(result, torch.Tensor):
        raise Hint(f"{what} should be a torch.Tensor, got {type(result).__name__}")
    if result.shape != expected.shape:
        raise Hint(f"{what} has shape {tuple(result.shape)}, expected {tuple(expected.shape)}")

