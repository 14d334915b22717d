"""Checkers for the course exercises: `check(name, answer)` in a notebook cell.

A checker compares the student's answer with the package's tested implementation on
fresh random inputs (float64, so rounding never decides a verdict) and prints either a
pass or a hint that names what is wrong -- the wrong shape, a missing skip connection,
a count off by the biases -- without printing the answer. A stub (a function that
raises NotImplementedError, or an answer left as None or ...) reports "not yet", so a
notebook with its stubs left in still runs to the end.

    from adapterlab.exercises import check
    check("01.adapter_forward", adapter_forward)

`EXERCISES` lists every exercise with its one-line statement.
"""
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .layers import BottleneckAdapter, PHMLinear


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
    except NotImplementedError:
        raise Hint("the stub is still there: replace `raise NotImplementedError` with your code") from None
    except Exception as error:  # the student's bug, reported in one line
        raise Hint(f"your function raised {type(error).__name__}: {error}") from None


def _same(a, b):
    # float64 on inputs of order one: rounding differences are ~1e-15, a real mistake is order one
    return isinstance(a, torch.Tensor) and a.shape == b.shape and torch.allclose(a, b, rtol=1e-9, atol=1e-12)


def _shape(result, expected, what):
    if not isinstance(result, torch.Tensor):
        raise Hint(f"{what} should be a torch.Tensor, got {type(result).__name__}")
    if result.shape != expected.shape:
        raise Hint(f"{what} has shape {tuple(result.shape)}, expected {tuple(expected.shape)}")


# ------------------------------------------------------------------ 01: the bottleneck adapter

def _adapter_weights(d, m, gen):
    return (torch.randn(d, m, generator=gen, dtype=torch.float64), torch.randn(m, generator=gen, dtype=torch.float64),
            torch.randn(m, d, generator=gen, dtype=torch.float64), torch.randn(d, generator=gen, dtype=torch.float64))


def _reference_adapter(h, W_down, b_down, W_up, b_up):
    d, m = W_down.shape
    ref = BottleneckAdapter(d, m, activation="gelu").double()
    with torch.no_grad():  # nn.Linear stores the transpose of the papers' (in, out) matrix
        ref.down.weight.copy_(W_down.T), ref.down.bias.copy_(b_down)
        ref.up.weight.copy_(W_up.T), ref.up.bias.copy_(b_up)
        return ref(h)


def check_adapter_forward(adapter_forward):
    """adapter_forward(h, W_down, b_down, W_up, b_up) -> h + f(h W_down + b_down) W_up + b_up, f = GELU."""
    gen = torch.Generator().manual_seed(1)
    d, m = 12, 3
    h = torch.randn(2, 5, d, generator=gen, dtype=torch.float64)
    weights = _adapter_weights(d, m, gen)
    out = _call(adapter_forward, h, *weights)
    expected = _reference_adapter(h, *weights)
    _shape(out, expected, "the adapter's output")
    W_down, b_down, W_up, b_up = weights
    if _same(out, expected):
        return "matches adapterlab.BottleneckAdapter on random weights"
    if _same(out, expected - h):
        raise Hint("the skip connection is missing: the adapter adds its result back to its input")
    if _same(out, h + (h @ W_down + b_down) @ W_up + b_up):
        raise Hint("there is no nonlinearity between the two projections (use F.gelu)")
    if _same(out, h + F.relu(h @ W_down + b_down) @ W_up + b_up):
        raise Hint("the nonlinearity should be GELU (F.gelu), as in BERT's feed-forward")
    raise Hint("the output differs from h + f(h W_down + b_down) W_up + b_up; check each term")


def check_identity_init(init_adapter):
    """init_adapter(d, m) -> (W_down, b_down, W_up, b_up): exactly the identity, yet able to learn."""
    d, m = 16, 4
    torch.manual_seed(0)
    params = _call(init_adapter, d, m)
    if not (isinstance(params, (tuple, list)) and len(params) == 4):
        raise Hint("return four tensors: (W_down, b_down, W_up, b_up)")
    expected_shapes = [(d, m), (m,), (m, d), (d,)]
    for name, p, shape in zip(("W_down", "b_down", "W_up", "b_up"), params, expected_shapes):
        if not isinstance(p, torch.Tensor) or tuple(p.shape) != shape:
            raise Hint(f"{name} should be a tensor of shape {shape}")
    params = [p.detach().double().requires_grad_(True) for p in params]
    h = torch.randn(3, d, dtype=torch.float64)
    out = _reference_adapter(h, *[p.detach() for p in params])
    if not torch.equal(out, h):
        raise Hint("the adapter is not exactly the identity at init: what must be zero for the added term to vanish?")
    W_down, b_down, W_up, b_up = params
    loss = (h + F.gelu(h @ W_down + b_down) @ W_up + b_up).pow(2).sum()
    loss.backward()
    if W_up.grad.abs().max() == 0:
        raise Hint("the identity holds, but the up-projection gets no gradient: "
                   "with a zero down-projection the adapter cannot start learning")
    return "exactly the identity, and the up-projection receives a gradient"


def check_houlsby_count(count_houlsby):
    """count_houlsby(d, L, m) -> adapter parameters (weights + biases) of Houlsby adapters in an L-layer model."""
    for d, L, m in ((768, 12, 64), (1024, 24, 64), (384, 6, 8)):
        per = sum(p.numel() for p in BottleneckAdapter(d, m).parameters())  # the package's adapter
        expected = 2 * L * per
        got = _call(count_houlsby, d, L, m)
        if got == expected:
            continue
        if got == L * per:
            raise Hint("Houlsby puts two adapters in each layer (after attention and after the feed-forward)")
        if got == 2 * L * 2 * m * d:
            raise Hint("the projections' biases are missing")
        if got == expected + 2 * L * 2 * d:
            raise Hint("count only the adapters: the LayerNorms are trained too, but they are not adapter parameters")
        raise Hint(f"for d={d}, L={L}, m={m} your count is off by {got - expected:+,}")
    return "matches the parameters of adapterlab's adapters for BERT-base, BERT-large and MiniLM"


# ------------------------------------------------------------------ 02: PHM and Compacter

def check_kron(kron):
    """kron(A, B) -> the Kronecker product, written without torch.kron."""
    gen = torch.Generator().manual_seed(2)
    A = torch.randn(2, 3, generator=gen, dtype=torch.float64)
    B = torch.randn(4, 5, generator=gen, dtype=torch.float64)
    out = _call(kron, A, B)
    expected = torch.kron(A, B)
    _shape(out, expected, "kron(A, B) for A 2x3 and B 4x5")
    if _same(out, expected):
        return "matches torch.kron on non-square matrices"
    if _same(out, torch.kron(B, A)):
        raise Hint("the factors are swapped: block (i, j) of A ⊗ B is a_ij * B")
    raise Hint("block (i, j) of the result should be A[i, j] * B")


def _phm_reference(n, p, q, gen):
    x = torch.randn(3, n * p, generator=gen, dtype=torch.float64)
    A = torch.randn(n, n, n, generator=gen, dtype=torch.float64)
    B = torch.randn(n, p, q, generator=gen, dtype=torch.float64)
    layer = PHMLinear(n * p, n * q, n, bias=False).double()
    with torch.no_grad():
        layer.rule.copy_(A), layer.B.copy_(B)
        return x, A, B, layer.forward_materialized(x)


def check_phm_forward(phm_forward):
    """phm_forward(x, A, B) -> x @ sum_i kron(A_i, B_i), computed without building the (in, out) matrix."""
    gen = torch.Generator().manual_seed(3)
    x, A, B, expected = _phm_reference(4, 3, 5, gen)
    out = _call(phm_forward, x, A, B)
    _shape(out, expected, "the PHM output for n=4, in=12, out=20")
    if _same(out, expected):
        return "matches adapterlab.PHMLinear (W = Σ A_i ⊗ B_i)"
    swapped = x @ sum(torch.kron(B[i], A[i]) for i in range(4))
    if _same(out, swapped):
        raise Hint("you computed Σ B_i ⊗ A_i: the rule A comes first")
    raise Hint("reshape x into n blocks of in/n, multiply each by B_i, and mix the blocks with A_i")


def check_compacter_count(count_compacter):
    """count_compacter(d, m, n, adapters) -> trainable adapter parameters of Compacter (rank 1, one shared rule)."""
    for d, m, n, adapters in ((768, 24, 4, 48), (384, 64, 4, 12), (512, 32, 8, 16)):
        one = [PHMLinear(d, m, n, rank=1), PHMLinear(m, d, n, rank=1)]
        per_adapter = sum(p.numel() for layer in one for name, p in layer.named_parameters() if name != "rule")
        expected = adapters * per_adapter + n ** 3
        got = _call(count_compacter, d, m, n, adapters)
        if got == expected:
            continue
        if got - adapters * per_adapter in (adapters * n ** 3, 2 * adapters * n ** 3):  # a rule per adapter/layer
            raise Hint("Compacter shares one rule A across all layers: count its n³ weights once")
        if got == adapters * per_adapter:
            raise Hint("the shared rule A (n³ weights) is trained too")
        if got == expected - adapters * (d + m):
            raise Hint("the projections' biases are missing")
        raise Hint(f"for d={d}, m={m}, n={n}, {adapters} adapters your count is off by {got - expected:+,}")
    return "matches adapterlab's PHM layers (rank-1 factors, one shared rule)"


# ------------------------------------------------------------------ 03: what trains

def _tiny_bert():
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16, num_labels=3)
    torch.manual_seed(0)
    return BertForSequenceClassification(config)


def check_choose_trainable(choose_trainable):
    """choose_trainable(model): on a model with Houlsby adapters inserted, set requires_grad as the method does."""
    from .inject import adapt

    reference = adapt(_tiny_bert(), "houlsby", bottleneck=4)
    expected = {n for n, p in reference.named_parameters() if p.requires_grad}
    model = adapt(_tiny_bert(), "houlsby", bottleneck=4)
    model.requires_grad_(True)  # undo adapt's choice: the student makes it
    _call(choose_trainable, model)
    got = {n for n, p in model.named_parameters() if p.requires_grad}
    if got == expected:
        return "the same parameters train as with al.adapt(model, 'houlsby')"
    missing, extra = expected - got, got - expected
    if any("classifier" in n for n in missing):
        raise Hint("the classification head is new: it must train")
    if any("LayerNorm" in n for n in missing):
        raise Hint("Houlsby trains the LayerNorms as well as the adapters")
    if any(".adapter." in n for n in missing):
        raise Hint("some adapter parameters are frozen")
    if extra:
        raise Hint(f"{len(extra)} base parameters still train (e.g. {sorted(extra)[0]}); freeze them")
    raise Hint("the trainable set differs from the method's")


def check_train_step(train_step):
    """train_step(model, batch, optimizer) -> loss: one step that changes the trainable parameters only."""
    from .inject import adapt

    model = adapt(_tiny_bert(), "houlsby", bottleneck=4).train()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    frozen = {n for n, p in model.named_parameters() if not p.requires_grad}  # before the student can change it
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    gen = torch.Generator().manual_seed(4)
    batch = {"input_ids": torch.randint(0, 64, (4, 8), generator=gen), "labels": torch.tensor([0, 1, 2, 1])}
    loss = _call(train_step, model, batch, optimizer)
    if not isinstance(loss, (torch.Tensor, float)):
        raise Hint("return the batch's loss")
    after = dict(model.named_parameters())
    changed_frozen = sorted(n for n in frozen if not torch.equal(after[n], before[n]))
    if changed_frozen:
        raise Hint(f"a frozen parameter changed ({changed_frozen[0]}): only the trainable ones may move")
    if all(torch.equal(p, before[n]) for n, p in after.items() if n not in frozen):
        raise Hint("no trainable parameter moved: did you call backward() and optimizer.step()?")
    return "the frozen base is bit-identical after the step and the trainable parameters moved"


# ------------------------------------------------------------------ 04: layer removal

def check_block_evaluations(count_block_evaluations):
    """count_block_evaluations(L) -> (naive, cached): block forward passes per batch for every span plus no removal."""
    from .experiments import span_block_evaluations

    for L in (6, 12, 24):
        expected = span_block_evaluations(L)
        got = _call(count_block_evaluations, L)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise Hint("return two numbers: (naive, cached)")
        naive, cached = got
        spans = L * (L + 1) // 2
        if naive != expected["naive"]:
            if naive == L * spans:
                raise Hint("the naive loop also runs the model once with nothing removed (the reference score)")
            if naive in (L * L * L, L * (L * L + 1)):
                raise Hint("a span [i, j] has i <= j: there are L(L+1)/2 of them, not L²")
            raise Hint(f"for L={L} your naive count is off by {naive - expected['naive']:+,}")
        if cached != expected["cached"]:
            if cached == expected["cached"] - L:
                raise Hint("the cached version first computes the state entering every block once: L evaluations")
            raise Hint(f"for L={L} your cached count is off by {cached - expected['cached']:+,}: for a start i, "
                       "each end j costs the disabled block j plus the enabled blocks above it")
    return "matches experiments.span_block_evaluations for 6, 12 and 24 blocks"


class _OneBatch:
    """What experiments.span_logits iterates over: batches with "index", and the split's labels."""

    def __init__(self, inputs, labels):
        import datasets

        self.inputs, self.split = inputs, datasets.Dataset.from_dict({"label": labels.tolist()})

    def __iter__(self):
        yield {**self.inputs, "index": torch.arange(len(self.split))}


def _model_with_trained_adapters():
    """A tiny BERT with Houlsby adapters whose weights are far from the identity init, so removal matters."""
    from .inject import adapt

    model = adapt(_tiny_bert(), "houlsby", bottleneck=4).eval()
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".adapter." in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
    inputs = {"input_ids": torch.randint(0, 64, (6, 8), generator=gen), "attention_mask": torch.ones(6, 8, dtype=torch.long)}
    return model, inputs


def check_naive_spans(removal_logits):
    """removal_logits(model, inputs) -> {(i, j): logits with the adapters of blocks i..j switched off}."""
    from .experiments import span_logits

    model, inputs = _model_with_trained_adapters()
    expected, _, L = span_logits(model, _OneBatch(inputs, torch.zeros(6, dtype=torch.long)), cached=True)
    full = torch.as_tensor(expected.pop(None))
    got = _call(removal_logits, model, inputs)
    if not isinstance(got, dict):
        raise Hint("return a dict {(first_layer, last_layer): logits}")
    spans = set(expected)
    if set(got) != spans:
        raise Hint(f"expected the {len(spans)} spans (i, j) with 0 <= i <= j < {L}; got {len(got)} keys "
                   f"(e.g. missing {sorted(spans - set(got))[:2]}, extra {sorted(set(got) - spans)[:2]})")
    got = {span: torch.as_tensor(x).double() for span, x in got.items()}
    if all(torch.allclose(got[span], full.double(), atol=1e-6) for span in spans):
        raise Hint("every span gives the logits of the full model: switch the adapters off inside "
                   "`with inject.adapters_disabled(model, layers=...)`")
    # fp32 forward passes of order-one logits; cached and naive agree far inside 1e-5
    wrong = [span for span in spans if not torch.allclose(got[span], torch.as_tensor(expected[span]).double(),
                                                          atol=1e-5)]
    if not wrong:
        return "every span matches the cached-prefix evaluation (experiments.span_logits)"
    i, j = wrong[0]
    if j > i and torch.allclose(got[(i, j)], torch.as_tensor(expected[(i, j - 1)]).double(), atol=1e-5):
        raise Hint("the span [i, j] includes block j: range(i, j + 1)")
    raise Hint(f"span {wrong[0]} differs from the cached evaluation; is the model in eval mode (no dropout)?")


# ------------------------------------------------------------------ 05: init scale

def _relative_change_reference(adapter, h):
    with torch.no_grad():
        return ((adapter(h) - h).norm() / h.norm()).item()


def _adapter_at(std, d=64, m=16, seed=0):
    torch.manual_seed(seed)
    return BottleneckAdapter(d, m, init_std=std).double()


def check_relative_change(relative_change):
    """relative_change(adapter, h) -> ||adapter(h) - h|| / ||h||, one norm over every token."""
    gen = torch.Generator().manual_seed(6)
    h = torch.randn(4, 7, 64, generator=gen, dtype=torch.float64)
    for std in (1e-3, 1e-1, 1.0):
        adapter = _adapter_at(std)
        expected = _relative_change_reference(adapter, h)
        got = _call(relative_change, adapter, h)
        got = float(got.detach() if isinstance(got, torch.Tensor) else got)
        if abs(got - expected) <= 1e-9 * max(expected, 1e-30):  # float64: agreement to rounding
            continue
        with torch.no_grad():
            out = adapter(h)
            if abs(got - (out.norm() / h.norm()).item()) < 1e-9:
                raise Hint("measure the change the adapter makes, adapter(h) - h, not its output")
            if abs(got - (out - h).norm().item()) < 1e-9 * (out - h).norm().item():
                raise Hint("relative: divide by the size of the input, ||h||")
            if abs(got - ((out - h).norm(dim=-1) / h.norm(dim=-1)).mean().item()) < 1e-9:
                raise Hint("take one norm over all tokens (as the notebook's figure does), not a mean per token")
        raise Hint(f"at init std {std:g} your value is {got:.3g} times what it should be "
                   f"({got / expected:.3g} x)" if expected else "the value is off")
    return "matches ||adapter(h) - h|| / ||h|| at stds 1e-3, 1e-1 and 1"


def check_deviation_exponent(exponent):
    """exponent: p in  relative change ∝ std^p  for small init stds (predict it, then measure it)."""
    import numpy as np

    stds = np.logspace(-5, -3, 5)
    h = torch.randn(4, 7, 64, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    change = [_relative_change_reference(_adapter_at(s), h) for s in stds]
    slope = float(np.polyfit(np.log(stds), np.log(change), 1)[0])
    if not isinstance(exponent, (int, float)) or isinstance(exponent, bool):
        raise Hint("no answer yet: set `exponent` to a number")
    if abs(exponent - slope) < 0.25:
        return f"a log-log fit over stds 1e-5..1e-3 gives a slope of {slope:.2f}"
    if abs(exponent - 1) < 0.25:
        raise Hint("both projections are drawn with this std: the added term multiplies two small matrices")
    raise Hint("measure it: the slope of log(change) against log(std) for small stds")


def check_collapsed(count_collapsed):
    """count_collapsed(df) -> the number of runs that ended within one point of the majority class."""
    import pandas as pd

    from .findings import COLLAPSE

    base = 0.643
    df = pd.DataFrame({"init_std": [1e-3] * 4 + [1.0] * 4,
                       "value": [base, 0.82, base + 0.004, 0.81, base, base - 0.002, 0.70, base + 0.016],
                       "baseline": base, "converged": [True, True, False, False, False, False, False, True]})
    expected = int((df["value"] - df["baseline"] < COLLAPSE).sum())
    got = _call(count_collapsed, df.copy())
    if got == expected:
        return "the same count as adapterlab.findings (value - majority < 1 point)"
    if got == int((df["value"] == df["baseline"]).sum()):
        raise Hint("a collapsed run may end a little above or below the majority class: allow one point")
    if got == int((~df["converged"]).sum()):
        raise Hint("'not converged' is another verdict: collapse is about the final score")
    if got == int(((df["value"] - df["baseline"]).abs() < 0.1).sum()):
        raise Hint("one point is 0.01 in these fractions")
    raise Hint(f"your count is {got}; count the runs whose value is less than 0.01 above the baseline")


# ------------------------------------------------------------------ 06: parameters vs performance

def check_percent_trained(percent_trained):
    """percent_trained(model) -> 100 x trainable parameters / parameters of the base model (no head, no adapters)."""
    from .inject import adapt
    from .params import count_parameters

    for method in ("houlsby", "compacter", "bitfit", "layernorm"):
        model = adapt(_tiny_bert(), method)
        expected = count_parameters(model).percent
        got = _call(percent_trained, model)
        got = float(got)
        if abs(got - expected) <= 1e-9 * expected:
            continue
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        total = sum(p.numel() for p in model.parameters())
        if abs(got - expected / 100) <= 1e-9 * expected:
            raise Hint("a percentage: multiply the fraction by 100")
        if abs(got - 100 * trainable / total) <= 1e-9 * expected:
            raise Hint("divide by the base model's size: the adapters and the new classification head are not "
                       "part of it (see al.count_parameters)")
        raise Hint(f"for {method} your value is {got:.4f} %; count only parameters with requires_grad")
    return "matches al.count_parameters(model).percent for Houlsby, Compacter, BitFit and LayerNorm"


def _tradeoff_frame():
    import pandas as pd

    rows = [("full", 1000, [0.820, 0.830]), ("houlsby m=8", 50, [0.815, 0.805]),  # mean 0.810: 1.5 below
            ("compacter++", 5, [0.760, 0.840]),  # mean 0.800, one seed above full's mean
            ("layernorm", 2, [0.700, 0.700]), ("houlsby m=64", 200, [0.830, 0.832]),  # above full
            ("top-k k=1", 120, [0.812, 0.818])]  # mean 0.815: within 1 point
    return pd.DataFrame([dict(label=label, method=label.split()[0], trainable=n, seed=s, value=v)
                         for label, n, values in rows for s, v in enumerate(values)])


def check_smallest_within(smallest_within):
    """smallest_within(df, points) -> the label with the fewest trainable parameters whose seed mean is at
    least full fine-tuning's seed mean minus `points` (points x 0.01 in accuracy); full itself excluded."""
    from .findings import smallest_within as reference

    df = _tradeoff_frame()
    for points in (1.0, 2.0, 0.1):
        expected = reference(df, points)
        got = _call(smallest_within, df.copy(), points)
        if got == expected:
            continue
        if got == "full":
            raise Hint("full fine-tuning is the reference, not a candidate")
        if points == 1.0 and got == "compacter++":
            raise Hint("compare seed means, not the best seed")
        if points == 1.0 and got == "houlsby m=8":
            raise Hint("one point is 0.01 here: compare means as fractions")
        if points == 2.0 and got == "houlsby m=8":
            raise Hint("among the methods close enough, pick the one with the fewest trainable parameters")
        raise Hint(f"with points={points} you answered {got!r}; a method above full fine-tuning counts as within")
    far = df[df["label"].isin(["full", "layernorm"])]  # nothing within a point of full fine-tuning
    try:
        got = smallest_within(far.copy(), 1.0)
    except Exception as error:
        raise Hint(f"when no method is close enough, return None (your function raised {type(error).__name__})") from None
    if got is not None:
        raise Hint(f"when no method is close enough, return None (you answered {got!r})")
    return "the same choice as adapterlab.findings.smallest_within on a small table"


# ------------------------------------------------------------------ 07: low resource

def check_nested_subsets(nested_subsets):
    """nested_subsets(n, sizes, seed) -> {size: indices}: seeded random subsets, each inside the larger ones."""
    import numpy as np

    n, sizes = 500, (10, 50, 200)
    got = _call(nested_subsets, n, sizes, 0)
    if not isinstance(got, dict) or set(got) != set(sizes):
        raise Hint(f"return a dict with one entry per size {sizes}")
    sets = {}
    for size in sizes:
        idx = np.asarray(got[size]).ravel()
        if len(idx) != size:
            raise Hint(f"the subset for size {size} has {len(idx)} indices")
        if len(set(idx.tolist())) != size:
            raise Hint(f"the subset for size {size} repeats examples: draw without replacement")
        if idx.min() < 0 or idx.max() >= n:
            raise Hint(f"indices must lie in 0..{n - 1}")
        sets[size] = set(idx.tolist())
    if not all(sets[a] <= sets[b] for a, b in zip(sizes, sizes[1:])):
        raise Hint("a smaller subset must lie inside every larger one: take prefixes of one permutation")
    if sets[sizes[0]] == set(range(sizes[0])):
        raise Hint("the subsets are the first rows of the split, not a random draw")
    again, other = _call(nested_subsets, n, sizes, 0), _call(nested_subsets, n, sizes, 1)
    if any(set(np.asarray(again[s]).ravel().tolist()) != sets[s] for s in sizes):
        raise Hint("the same seed must give the same subsets")
    if set(np.asarray(other[sizes[-1]]).ravel().tolist()) == sets[sizes[-1]]:
        raise Hint("another seed should draw other subsets")
    return "seeded, without repeats, and nested (tasks.subsample takes prefixes of one permutation)"


def _low_resource_frame():
    import pandas as pd

    values = {(100, "compacter++"): [0.74, 0.76, 0.75], (100, "full"): [0.66, 0.70, 0.68],  # +7, clear
              (500, "compacter++"): [0.80, 0.78, 0.79], (500, "full"): [0.78, 0.74, 0.76],  # +3, se 1.6: higher
              (1000, "compacter++"): [0.81, 0.80, 0.79], (1000, "full"): [0.84, 0.77, 0.80],  # -0.3, within noise
              (2000, "compacter++"): [0.82, 0.83, 0.81], (2000, "full"): [0.80, 0.84, 0.79]}  # +1, within noise
    return pd.DataFrame([dict(train_size=size, method=m, seed=s, value=v)
                         for (size, m), vs in values.items() for s, v in enumerate(vs)])


def check_better_beyond_noise(sizes_better):
    """sizes_better(df, method) -> sorted sizes where `method`'s seed mean exceeds full fine-tuning's by more
    than 2 standard errors (findings.difference)."""
    from .findings import difference

    df = _low_resource_frame()
    expected = sorted(int(size) for size, g in df.groupby("train_size")
                      if difference(g[g["method"] == "compacter++"]["value"],
                                    g[g["method"] == "full"]["value"])[2] == "higher")
    got = _call(sizes_better, df.copy(), "compacter++")
    got = sorted(int(s) for s in got) if got is not None else got
    if got == expected:
        return f"sizes {expected}: the same verdicts as adapterlab.findings.difference"
    positive = sorted(int(size) for size, g in df.groupby("train_size")
                      if g[g["method"] == "compacter++"]["value"].mean() > g[g["method"] == "full"]["value"].mean())
    if got == positive:
        raise Hint("a higher mean is not enough: the difference must exceed twice its standard error")
    raise Hint(f"you answered {got}; SE = sqrt(var_a / n_a + var_b / n_b) with the sample variance (ddof=1)")


EXERCISES = {
    "01.adapter_forward": (check_adapter_forward, "write the adapter's forward pass"),
    "01.identity_init": (check_identity_init, "initialise an adapter that is exactly the identity and can still learn"),
    "01.houlsby_count": (check_houlsby_count, "count Houlsby adapter parameters by formula"),
    "02.kron": (check_kron, "write the Kronecker product by hand"),
    "02.phm_forward": (check_phm_forward, "the PHM forward pass without building W"),
    "02.compacter_count": (check_compacter_count, "count Compacter's parameters"),
    "03.choose_trainable": (check_choose_trainable, "choose which parameters train for Houlsby adapters"),
    "03.train_step": (check_train_step, "one training step that leaves the base unchanged"),
    "04.block_evaluations": (check_block_evaluations, "count the block evaluations of the naive and the cached loop"),
    "04.naive_spans": (check_naive_spans, "write the naive span-removal loop"),
    "05.relative_change": (check_relative_change, "measure how far an adapter moves its input at init"),
    "05.deviation_exponent": (check_deviation_exponent, "predict how that change grows with the init std"),
    "05.collapsed": (check_collapsed, "count the runs that collapsed to the majority class"),
    "06.percent_trained": (check_percent_trained, "the share of parameters a method trains"),
    "06.smallest_within": (check_smallest_within, "the smallest method within a point of full fine-tuning"),
    "07.nested_subsets": (check_nested_subsets, "nested, seeded training subsets"),
    "07.better_beyond_noise": (check_better_beyond_noise, "where an adapter beats full fine-tuning beyond noise"),
}


def check(name, answer, quiet=False):
    """Check an exercise; prints and returns a Result (truthy when it passes)."""
    if name not in EXERCISES:
        raise ValueError(f"unknown exercise {name!r}; the exercises are: {', '.join(EXERCISES)}")
    checker, _ = EXERCISES[name]
    try:
        if _stub(answer):
            raise Hint("no answer yet: fill in the cell above")
        result = Result(name, True, checker(answer))
    except Hint as hint:
        result = Result(name, False, str(hint))
    if not quiet:
        print(result)
    return result


# ------------------------------------------------------------------ the two versions of the course
#
# In the notebooks an exercise is a code cell tagged "exercise" whose metadata names it
# ({"exercise": "01.adapter_forward"}); it holds the stub. Solutions live outside the student
# notebooks, in notebooks/solutions/<notebook>.py, one section per exercise:
#     # %% exercise: 01.adapter_forward
#     def adapter_forward(...): ...
# `python -m adapterlab.exercises --out DIR` writes DIR/student/ (the notebooks as they are) and
# DIR/solutions/ (each stub replaced by its solution and tagged "solution", which the course site
# shows collapsed).

EXERCISE_TAG, SOLUTION_TAG = "exercise", "solution"
MARKER = "# %% exercise:"


def exercise_cells(nb):
    """[(exercise name, cell)] for the stub cells of a notebook (an nbformat node or a JSON dict)."""
    return [(cell["metadata"]["exercise"], cell) for cell in nb["cells"]
            if EXERCISE_TAG in cell.get("metadata", {}).get("tags", [])]


def read_solutions(path):
    """{exercise name: source} from a solutions file (sections start with MARKER)."""
    solutions, name = {}, None
    for line in open(path, encoding="utf-8").read().splitlines():
        if line.startswith(MARKER):
            name = line[len(MARKER):].strip()
            solutions[name] = []
        elif name is not None:
            solutions[name].append(line)
    return {n: "\n".join(lines).strip() + "\n" for n, lines in solutions.items()}


def with_solutions(nb, solutions):
    """A copy of the notebook with every stub replaced by its solution (tagged "solution")."""
    import copy

    nb = copy.deepcopy(nb)
    for name, cell in exercise_cells(nb):
        if name not in solutions:
            raise ValueError(f"no solution for exercise {name!r}; add a '{MARKER} {name}' section")
        cell["source"] = solutions[name]
        tags = [t for t in cell["metadata"]["tags"] if t != EXERCISE_TAG]
        cell["metadata"]["tags"] = tags + [SOLUTION_TAG]
    return nb


def build_course(out, notebooks_dir=None):
    """Write out/student/ and out/solutions/ (every numbered notebook); returns the two folders."""
    import json
    from pathlib import Path

    notebooks_dir = Path(notebooks_dir or Path(__file__).resolve().parents[1] / "notebooks")
    student, solved = Path(out) / "student", Path(out) / "solutions"
    for folder in (student, solved):
        folder.mkdir(parents=True, exist_ok=True)
    for path in sorted(notebooks_dir.glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        solutions_file = notebooks_dir / "solutions" / f"{path.stem}.py"
        solutions = read_solutions(solutions_file) if solutions_file.exists() else {}
        for folder, version in ((student, nb), (solved, with_solutions(nb, solutions))):
            text = json.dumps(version, indent=1, ensure_ascii=False) + "\n"
            target = folder / path.name
            if not target.exists() or target.read_text(encoding="utf-8") != text:  # unchanged: keep its mtime
                target.write_text(text, encoding="utf-8")
    return student, solved


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m adapterlab.exercises",
                                     description="write the student and the solution version of the notebooks")
    parser.add_argument("--out", default="build/course", help="folder for student/ and solutions/")
    args = parser.parse_args()
    for folder in build_course(args.out):
        print(f"wrote {folder}")
