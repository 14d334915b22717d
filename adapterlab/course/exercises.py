"""Checkers for the course exercises: `check(name, answer)` in a notebook cell.

A checker compares the student's answer with the package's tested implementation on
fresh random inputs (float64, so rounding never decides a verdict) and prints either a
pass or a hint that names what is wrong -- the wrong shape, a missing skip connection,
a count off by the biases -- without printing the answer. A stub (a function that
raises NotImplementedError, or an answer left as None or ...) reports "not yet", so a
notebook with its stubs left in still runs to the end.

A check must not be foolable by a class: every rule is checked on several inputs (a
constant that happens to fit one table fails on the next), an exercise that forbids a
shortcut makes the shortcut fail inside the check (02.kron runs with torch.kron switched
off; 02.phm_forward watches the size of every tensor the answer computes), a training step
is compared with torch.optim's step on a copy of the model, and nothing the student returns
-- a string, a per-token tensor, an int for a list -- reaches the user as a traceback: a
wrong type gets a hint naming the type expected.

    from adapterlab.course.exercises import check
    check("01.adapter_forward", adapter_forward)

`EXERCISES` lists every exercise with its one-line statement.
"""
import copy
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import torch
import torch.nn.functional as F
from torch.utils._pytree import tree_leaves
from torch.utils._python_dispatch import TorchDispatchMode

from ..nn.layers import BottleneckAdapter, PHMLinear


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
    if _same(out, h + F.gelu(h @ W_down + b_down, approximate="tanh") @ W_up + b_up):
        raise Hint("that is the tanh approximation of GELU; BERT and adapterlab use the exact one, "
                   "F.gelu(x) (= x Φ(x), with the normal CDF)")
    if _same(out, h + F.gelu(h @ W_down + b_down) @ W_up):
        raise Hint("the up-projection's bias b_up is missing")
    if _same(out, h + F.gelu(h @ W_down) @ W_up + b_up):
        raise Hint("the down-projection's bias b_down is missing (it goes inside the nonlinearity)")
    if _same(out, h + F.gelu((h @ W_down + b_down) @ W_up + b_up)):
        raise Hint("the nonlinearity goes between the projections: f(h W_down + b_down), then W_up and b_up")
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
        got = _count(_call(count_houlsby, d, L, m), "the count")
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
    expected = torch.kron(A, B)
    with _refused(KRON, "the exercise is to write it without torch.kron (or np.kron): build each block "
                        "A[i, j] * B yourself (a loop, or broadcasting), then put the blocks in place"):
        out = _call(kron, A, B)
    _shape(out, expected, "kron(A, B) for A 2x3 and B 4x5")
    if _same(out, expected):
        return "matches torch.kron on non-square matrices"
    if _same(out, torch.kron(B, A)):
        raise Hint("the factors are swapped: block (i, j) of A ⊗ B is a_ij * B")
    raise Hint("block (i, j) of the result should be A[i, j] * B")


def _phm_reference(n, p, q, gen):
    x = torch.randn(2, n * p, generator=gen, dtype=torch.float64)
    A = torch.randn(n, n, n, generator=gen, dtype=torch.float64)
    B = torch.randn(n, p, q, generator=gen, dtype=torch.float64)
    layer = PHMLinear(n * p, n * q, n, bias=False).double()
    with torch.no_grad():
        layer.rule.copy_(A), layer.B.copy_(B)
        return x, A, B, layer.forward_materialized(x)


def check_phm_forward(phm_forward):
    """phm_forward(x, A, B) -> x @ sum_i kron(A_i, B_i), computed without building the (in, out) matrix.

    "Without building W" is checked by size: every tensor the answer computes is watched (_LargestTensor),
    and one with as many entries as W (in x out) fails, whether it came from torch.kron, an einsum or a
    broadcast. The sizes make that test sharp: with 2 rows of x, n=4, in=48, out=40, the blockwise answer's
    largest tensor is B itself (n·in/n·out/n = 480 entries) or x's blocks times the B_i (2·n·n·out/n = 320),
    while W has 1,920."""
    n, p, q = 4, 12, 10
    gen = torch.Generator().manual_seed(3)
    x, A, B, expected = _phm_reference(n, p, q, gen)
    watch = _LargestTensor()
    with _refused(KRON, "that builds W (a Kronecker product of A_i and B_i is a W-sized matrix): reshape x "
                        "into n blocks of in/n, multiply each by B_i, and mix the blocks with A_i"), watch:
        out = _call(phm_forward, x, A, B)
    _shape(out, expected, f"the PHM output for n={n}, in={n * p}, out={n * q}")
    if watch.largest >= n * p * n * q:
        raise Hint(f"a tensor inside your function has {watch.largest:,} entries, at least as many as W "
                   f"({n * p} x {n * q} = {n * p * n * q:,}): that is building W (or something as large). Reshape "
                   "x into n blocks of in/n, multiply each by B_i, and mix the blocks with A_i")
    if _same(out, expected):
        return "matches adapterlab.PHMLinear (W = Σ A_i ⊗ B_i), and no tensor as large as W was made"
    swapped = x @ sum(torch.kron(B[i], A[i]) for i in range(n))
    if _same(out, swapped):
        raise Hint("you computed Σ B_i ⊗ A_i: the rule A comes first")
    raise Hint("reshape x into n blocks of in/n, multiply each by B_i, and mix the blocks with A_i")


def check_compacter_count(count_compacter):
    """count_compacter(d, m, n, adapters) -> trainable adapter parameters of Compacter (rank 1, one shared rule)."""
    for d, m, n, adapters in ((768, 24, 4, 48), (384, 64, 4, 12), (512, 32, 8, 16)):
        one = [PHMLinear(d, m, n, rank=1), PHMLinear(m, d, n, rank=1)]
        per_adapter = sum(p.numel() for layer in one for name, p in layer.named_parameters() if name != "rule")
        expected = adapters * per_adapter + n ** 3
        got = _count(_call(count_compacter, d, m, n, adapters), "the count")
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


# ------------------------------------------------------------------ 02, section 6: three baselines by hand

def check_prompt_inputs(prepend_prompt):
    """prepend_prompt(embeds, mask, P) -> (embeds (b, L, d) with the n prompt vectors P (n, d) in front,
    mask (b, L) with n ones in front): what the frozen model reads under prompt tuning."""
    gen = torch.Generator().manual_seed(6)
    for b, L, d, n in ((2, 5, 8, 3), (3, 7, 4, 1), (1, 4, 6, 5)):
        embeds = torch.randn(b, L, d, generator=gen, dtype=torch.float64)
        mask = (torch.rand(b, L, generator=gen) > 0.3).long()
        mask[:, 0] = 1  # padded sequences: the input's own mask has zeros that must survive
        P = torch.randn(n, d, generator=gen, dtype=torch.float64)
        out = _call(prepend_prompt, embeds.clone(), mask.clone(), P.clone())
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise Hint(f"return two things, (embeddings, attention mask); got {_describe(out)}")
        x, m = out
        prompts = P.expand(b, -1, -1)
        want_x, want_m = torch.cat([prompts, embeds], 1), torch.cat([torch.ones(b, n, dtype=mask.dtype), mask], 1)
        _shape(x, want_x, f"the embeddings for a batch of {b}, length {L}, width {d} and {n} prompt vectors")
        if _same(x, torch.cat([embeds, prompts], 1)):
            raise Hint("the prompt goes in front of the input, not after it")
        if not _same(x, want_x):
            raise Hint("every sequence of the batch should start with the same n prompt vectors P, then its own "
                       "embeddings")
        _shape(m, want_m, "the attention mask (it grows by n too)")
        if not m[:, :n].bool().all():
            raise Hint("the prompt positions must be attended: the mask needs n ones in front, not zeros")
        if not torch.equal(m.long(), want_m):
            raise Hint("after the n ones, the mask should be the input's own mask, its padding zeros kept")
    return "matches what adapterlab.methods.prompt_tuning feeds the frozen model, padding included"


HADAMARD = [(scipy.linalg, "hadamard")]  # the library's Walsh-Hadamard matrix


def check_hadamard_transform(hadamard_transform):
    """hadamard_transform(v) -> H v along the last axis (length L, a power of two; H with entries +-1,
    unnormalised), without building the L x L matrix H: the O(L log L) step that makes Fastfood cheap.

    Checked by size, as 02.phm_forward: with L = 64 and 3 vectors, the butterfly's largest tensor is the 3 x 64
    input, H has 4,096 entries; every tensor an operation reads or computes is watched."""
    from ..nn.fastfood import hadamard_matrix

    gen = torch.Generator().manual_seed(7)
    for shape in ((1,), (2,), (8,), (3, 64)):
        v = torch.randn(*shape, generator=gen, dtype=torch.float64)
        L = shape[-1]
        H = hadamard_matrix(L, dtype=torch.float64)
        expected = v @ H  # H is symmetric: (H v) for each row v
        watch = _LargestTensor()
        with _refused(HADAMARD, "the exercise is to write the transform, not to build H with scipy"), watch:
            out = _call(hadamard_transform, v.clone())
        _shape(out, expected, f"H v for v of shape {tuple(shape)}")
        if L >= 64 and watch.largest >= L * L:
            raise Hint(f"a tensor inside your function has {watch.largest:,} entries, as many as H ({L} x {L}): "
                       "that is building H. Combine pairs (a + b, a - b) at distance 1, 2, 4, ... instead")
        if _same(out, expected):
            continue
        if L > 1 and _same(out, expected / L ** 0.5):
            raise Hint("this H is unnormalised (entries +-1, H H = L I): do not divide by sqrt(L)")
        if _same(out, v):
            raise Hint("H v mixes every entry of v: combine pairs (a + b, a - b) at distance 1, 2, 4, ...")
        raise Hint(f"for v of shape {tuple(shape)} your result differs from H v (H: Sylvester's Walsh-Hadamard "
                   "matrix, entries +-1)")
    return "matches H v for lengths 1 to 64, and no tensor as large as H was made"


def check_lora_merge(merge_lora):
    """merge_lora(W, A, B, alpha) -> W + (alpha / r) B A: LoRA's update folded into the weight (W: out x in,
    A: r x in, B: out x r), so that serving costs what the base model costs."""
    gen = torch.Generator().manual_seed(8)
    for out_f, in_f, r, alpha in ((6, 4, 2, 16.0), (5, 7, 3, 8.0), (3, 3, 1, 1.0)):
        W = torch.randn(out_f, in_f, generator=gen, dtype=torch.float64)
        A = torch.randn(r, in_f, generator=gen, dtype=torch.float64)
        B = torch.randn(out_f, r, generator=gen, dtype=torch.float64)
        expected = W + alpha / r * B @ A
        got = _call(merge_lora, W.clone(), A.clone(), B.clone(), alpha)
        _shape(got, expected, f"the merged weight for out={out_f}, in={in_f}, r={r}")
        if _same(got, expected):
            continue
        if _same(got, W + B @ A) and alpha != r:
            raise Hint("scale the update: LoRA adds (alpha / r) B A, not B A")
        if _same(got, W + alpha * B @ A) and r > 1:
            raise Hint("divide by the rank r too: the scale is alpha / r")
        if _same(got, W):
            raise Hint("the update B A is missing: add (alpha / r) B A to W")
        raise Hint(f"for out={out_f}, in={in_f}, r={r}, alpha={alpha:g} your matrix differs from W + (alpha / r) B A")
    return "matches W + (alpha / r) B A for three shapes and scales (what adapterlab.methods.lora.merge computes)"


# ------------------------------------------------------------------ 03: what trains

def _tiny_bert(dropout=0.1):
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16, num_labels=3,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    torch.manual_seed(0)
    return BertForSequenceClassification(config)


def check_choose_trainable(choose_trainable):
    """choose_trainable(model): on a model with Houlsby adapters inserted, set requires_grad as the method does."""
    from ..methods.inject import adapt

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


def _optimizer(model, lr=0.1):
    return torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=lr)


def _reference_steps(model, batches, zero_grad=True):
    """The losses of one honest training step per batch on a copy of `model` (SGD), and the copy after them;
    zero_grad=False: the classic bug of never clearing the gradients, which then add up over steps."""
    model = copy.deepcopy(model)
    optimizer, losses = _optimizer(model), []
    for batch in batches:
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        if zero_grad:
            optimizer.zero_grad()
        losses.append(loss.item())
    return losses, model


def _trainable_match(model, reference):
    # the same float32 operations in the same order: equal up to rounding; 1e-6 leaves room for a loss
    # computed another way (F.cross_entropy on the logits), while a wrong step moves weights by ~lr x grad
    ref = dict(reference.named_parameters())
    return all(torch.allclose(p, ref[n], rtol=1e-5, atol=1e-6) for n, p in model.named_parameters() if p.requires_grad)


def check_train_step(train_step):
    """train_step(model, batch, optimizer) -> loss: one optimizer step on the batch's loss, which changes the
    trainable parameters only. Checked over two steps against the same steps taken by torch.optim on a
    copy of the model (dropout off, so both see the same function): the parameters must land where one
    real step puts them, not merely move."""
    from ..methods.inject import adapt

    model = adapt(_tiny_bert(dropout=0.0), "houlsby", bottleneck=4).train()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    frozen = {n for n, p in model.named_parameters() if not p.requires_grad}  # before the student can change it
    gen = torch.Generator().manual_seed(4)
    batches = [{"input_ids": torch.randint(0, 64, (4, 8), generator=gen), "labels": torch.tensor(labels)}
               for labels in ([0, 1, 2, 1], [2, 2, 0, 1])]
    start = copy.deepcopy(model)  # the model before the student's steps
    honest_losses, _ = _reference_steps(start, batches)
    optimizer = _optimizer(model)
    for step, batch in enumerate(batches, 1):
        loss = _number(_call(train_step, model, batch, optimizer), "the returned loss")
        after = dict(model.named_parameters())
        changed_frozen = sorted(n for n in frozen if not torch.equal(after[n], before[n]))
        if changed_frozen:
            raise Hint(f"a frozen parameter changed ({changed_frozen[0]}): only the trainable ones may move")
        _, honest = _reference_steps(start, batches[:step])
        if not _trainable_match(model, honest):
            if all(torch.equal(p, before[n]) for n, p in after.items()):
                raise Hint("no trainable parameter moved: did you call loss.backward() and optimizer.step()?")
            _, piled_up = _reference_steps(start, batches[:step], zero_grad=False)
            if step > 1 and _trainable_match(model, piled_up):
                raise Hint("the first step is right, the second is not: the gradients of step 1 were still "
                           "there. Call optimizer.zero_grad() in every step (before backward or after step)")
            raise Hint(f"after step {step} the trainable parameters are not where one optimizer step on the "
                       "batch's loss puts them: compute loss = model(**batch).loss, then loss.backward() and "
                       "optimizer.step() with the optimizer passed in")
        if abs(loss - honest_losses[step - 1]) > 1e-5 * max(1.0, abs(honest_losses[step - 1])):
            raise Hint(f"the step is right, but the returned value ({loss:.4g}) is not the batch's loss before "
                       "the step: return model(**batch).loss")
    return ("two steps land exactly where torch.optim's steps on a copy of the model do; "
            "the frozen base is bit-identical")


# ------------------------------------------------------------------ 04: layer removal

def check_block_evaluations(count_block_evaluations):
    """count_block_evaluations(L) -> (naive, cached): block forward passes per batch for every span plus no removal."""
    from ..training.removal import span_block_evaluations

    for L in (6, 12, 24):
        expected = span_block_evaluations(L)
        got = _call(count_block_evaluations, L)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise Hint("return two numbers: (naive, cached)")
        naive, cached = _count(got[0], "naive"), _count(got[1], "cached")
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
    return "matches removal.span_block_evaluations for 6, 12 and 24 blocks"


class _OneBatch:
    """What removal.span_logits iterates over: batches with "index", and the split's labels."""

    def __init__(self, inputs, labels):
        import datasets

        self.inputs, self.split = inputs, datasets.Dataset.from_dict({"label": labels.tolist()})

    def __iter__(self):
        yield {**self.inputs, "index": torch.arange(len(self.split))}


def _model_with_trained_adapters():
    """A tiny BERT with Houlsby adapters whose weights are far from the identity init, so removal matters."""
    from ..methods.inject import adapt

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
    from ..training.removal import span_logits

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
        return "every span matches the cached-prefix evaluation (removal.span_logits)"
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
        elements = got.numel() if isinstance(got, torch.Tensor) else np.size(got) if isinstance(got, np.ndarray) else 1
        if elements != 1:
            raise Hint(f"return one number for the whole input (a float), not {_describe(got)}: take one norm "
                       "over every token, ||adapter(h) - h|| / ||h||")
        got = _number(got, "the relative change")
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
    if callable(exponent):
        raise Hint("no answer yet: set `exponent` to a number (a value, not a function)")
    exponent = _number(exponent, "`exponent`")
    if abs(exponent - slope) < 0.25:
        return f"a log-log fit over stds 1e-5..1e-3 gives a slope of {slope:.2f}"
    if abs(exponent - 1) < 0.25:
        raise Hint("both projections are drawn with this std: the added term multiplies two small matrices")
    raise Hint("measure it: the slope of log(change) against log(std) for small stds")


def _collapse_tables():
    """Three small sweeps of tasks whose majority class differs (0.643 as airline's, a balanced 0.5, an
    imbalanced 0.84): one rule gives the right count on all three, a constant or a fixed threshold cannot.
    No value lies near the rule's edge (stats.COLLAPSE above the baseline), so < and <= agree."""
    import pandas as pd

    tables = []
    # the balanced table first: on it every slip named in check_collapsed gives a count of its own
    for base, above, converged in (
            (0.5, [0.0, 0.003, 0.12, 0.21, -0.005, 0.08, -0.06, 0.025, -0.04], [0, 1, 1, 1, 1, 1, 0, 1, 0]),
            (0.643, [0.0, 0.177, 0.012, 0.167, 0.0, -0.002, 0.057, 0.046], [1, 1, 0, 1, 1, 1, 1, 0]),
            (0.84, [0.0, 0.016, 0.05, 0.06, -0.002, 0.04], [0, 1, 1, 1, 1, 0])):
        tables.append(pd.DataFrame({"init_std": [10.0 ** -(i % 4) for i in range(len(above))],
                                    "seed": range(len(above)), "value": [round(base + a, 4) for a in above],
                                    "baseline": base, "converged": [bool(c) for c in converged]}))
    return tables


def check_collapsed(count_collapsed):
    """count_collapsed(df) -> the number of runs that ended less than stats.COLLAPSE (3 points) above the
    majority class."""
    from ..experiments.stats import COLLAPSE

    tables = _collapse_tables()
    answers = [_count(_call(count_collapsed, df.copy()), "the count") for df in tables]
    expected = [int((df["value"] - df["baseline"] < COLLAPSE).sum()) for df in tables]
    points = f"{COLLAPSE * 100:g} points ({COLLAPSE:g})"
    if answers == expected:
        return (f"the same counts as adapterlab.report.findings (value - majority < {points}) on three sweeps "
                "whose majority classes differ")
    if len(set(answers)) == 1:
        raise Hint(f"you answer {answers[0]} for three different tables: count the rows of `df` whose value "
                   f"ends less than {points} above its baseline")
    for df, got, right in zip(tables, answers, expected):
        if got == right:
            continue
        above = df["value"] - df["baseline"]
        if got == int((df["value"] == df["baseline"]).sum()):
            raise Hint(f"a collapsed run may end a little above or below the majority class: allow {points}")
        if got == int((~df["converged"]).sum()):
            raise Hint("'not converged' is another verdict: collapse is about the final score")
        if got == int((above.abs() < 0.1).sum()) or got == int((above < 0.1).sum()):
            raise Hint(f"{COLLAPSE * 100:g} points is {COLLAPSE:g} in these fractions")
        if got == int((above < 0.01).sum()):
            raise Hint(f"the rule is {points} above the majority class (stats.COLLAPSE), not one point")
        if got == int((above.abs() < COLLAPSE).sum()):
            raise Hint("a run that ends below the majority class has collapsed too: no absolute value")
        raise Hint(f"on a table whose majority class is {df['baseline'].iloc[0]:g} your count is {got}: compare "
                   "each run's value with the `baseline` column of its own row (the majority class differs "
                   "between tasks), not with a fixed number")
    raise Hint("the count differs from the rule's")  # not reached: some table differed


# ------------------------------------------------------------------ 06: parameters vs performance

def check_percent_trained(percent_trained):
    """percent_trained(model) -> 100 x trainable parameters / parameters of the base model (no head, no adapters)."""
    from ..methods.inject import adapt
    from ..methods.params import count_parameters

    for method in ("houlsby", "compacter", "bitfit", "layernorm"):
        model = adapt(_tiny_bert(), method)
        expected = count_parameters(model).percent
        got = _number(_call(percent_trained, model), "the percentage")
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
    from ..report.findings import smallest_within as reference

    df = _tradeoff_frame()
    answers = {}
    for points in (1.0, 2.0, 0.1):
        got = answers[points] = _call(smallest_within, df.copy(), points)
        if got is not None and not isinstance(got, str):
            raise Hint(f"return the label of the method (a string such as 'houlsby m=8'), or None; got {_describe(got)}")
    for points, got in answers.items():
        expected = reference(df, points)
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
        if len(set(answers.values())) == 1:
            raise Hint(f"you answer {got!r} for every `points`: a larger allowance admits more methods, so the "
                       "choice depends on it")
        raise Hint(f"with points={points} you answered {got!r}; a method above full fine-tuning counts as within")
    far = df[df["label"].isin(["full", "layernorm"])]  # nothing within a point of full fine-tuning
    try:
        got = smallest_within(far.copy(), 1.0)
    except Exception as error:
        raise Hint(f"when no method is close enough, return None (your function raised {type(error).__name__})") from None
    if got is not None:
        raise Hint(f"when no method is close enough, return None (you answered {got!r})")
    return "the same choice as adapterlab.report.findings.smallest_within on a small table"


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
    """Three seeds of full fine-tuning and two methods at four sizes, the rows shuffled. The per-seed
    differences are chosen so that the paired 95% interval (the rule) and the usual slips disagree:
    Welch's unpaired SE, 2 SE instead of t_{0.975, 2} = 4.30 SE, a higher mean alone, pairing by row order."""
    import pandas as pd

    full = {100: [0.66, 0.72, 0.69], 500: [0.74, 0.79, 0.76], 1000: [0.78, 0.81, 0.76], 2000: [0.80, 0.84, 0.79]}
    gains = {"compacter++": {100: [0.020, 0.025, 0.018],  # every seed gains a little: paired higher, Welch not
                             500: [0.04, 0.01, 0.10],  # ragged gains: neither
                             1000: [0.03, 0.01, 0.05],  # 2.6 paired SE: above 2 SE, below 4.30 SE
                             2000: [0.05, -0.01, 0.02]},  # a higher mean inside the noise
             "houlsby": {100: [0.07, 0.08, 0.06], 500: [-0.02, -0.03, -0.025], 1000: [0.012, 0.015, 0.011],
                         2000: [0.01, 0.0, -0.01]}}
    rows = [dict(train_size=n, method="full", seed=s, value=v) for n, vs in full.items() for s, v in enumerate(vs)]
    rows += [dict(train_size=n, method=method, seed=s, value=round(full[n][s] + gain, 4))
             for method, per_size in gains.items() for n, gs in per_size.items() for s, gain in enumerate(gs)]
    return pd.DataFrame(rows).sample(frac=1, random_state=0).reset_index(drop=True)


def _sizes_where(df, method, rule, by_seed=True):
    """Sorted sizes where rule(method's values, full's values) holds, the two aligned by seed (or by row order)."""
    sizes = []
    for size, g in df.groupby("train_size"):
        a, b = (g[g["method"] == m] for m in (method, "full"))
        if by_seed:
            a, b = a.sort_values("seed"), b.sort_values("seed")
        if rule(a["value"].to_numpy(), b["value"].to_numpy()):
            sizes.append(int(size))
    return sizes


def check_better_beyond_noise(sizes_better):
    """sizes_better(df, method) -> sorted sizes where `method` beats full fine-tuning beyond the noise: the 95%
    confidence interval of the difference paired by seed (stats.paired: mean of the per-seed differences
    ± t_{0.975, n-1} · sd / √n) lies above zero."""
    from ..experiments import stats

    df = _low_resource_frame()
    paired = lambda a, b: stats.paired(a, b).ci(0.95)[0] > 0
    for method in ("compacter++", "houlsby"):
        expected = _sizes_where(df, method, paired)
        got = _call(sizes_better, df.copy(), method)
        if got is None:
            raise Hint("your function returned None: return a list of training-set sizes ([] when there are none)")
        if isinstance(got, (str, bytes, dict)) or not hasattr(got, "__iter__"):
            raise Hint(f"return a list of training-set sizes (e.g. [100, 500], or [] for none), got {_describe(got)}")
        got = sorted(_count(size, "each size") for size in got)
        if got == expected:
            continue
        slips = [  # (what the slip gives, its hint)
            (_sizes_where(df, method, lambda a, b: a.mean() > b.mean()),
             "a higher mean is not enough: the difference must be beyond the noise of the seeds"),
            (_sizes_where(df, method, paired, by_seed=False),
             "pair the runs by their `seed` column: the rows are not in seed order"),
            (_sizes_where(df, method, lambda a, b: a.mean() - b.mean() > 2 * np.sqrt(
                a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))),
             "runs of the same seed share their training subset and data order: pair them and use the spread "
             "of the per-seed differences (stats.paired), not the two groups' separate variances"),
            (_sizes_where(df, method, lambda a, b: stats.paired(a, b).estimate > 2 * stats.paired(a, b).se),
             "with 3 seeds the 95% interval is the mean difference ± t_{0.975, 2} x SE = 4.30 SE, not 2 SE "
             "(scipy.stats.t.ppf(0.975, n - 1), or stats.paired(a, b).ci(0.95))")]
        for slipped, hint in slips:
            if got == slipped:
                raise Hint(hint)
        raise Hint(f"for method {method!r} your sizes differ from the rule's: per size, take each seed's "
                   "difference (method - full), then mean ± t_{0.975, n-1} x sd / √n, and keep the size when "
                   "the whole interval is above zero")
    return "the same sizes as adapterlab.experiments.stats.paired (95% interval by seed) for two methods on a shuffled table"


def _stream_matrix(T, gen):
    """A random T x T accuracy matrix as a stream produces it: NaN below the diagonal (a task is not
    scored before it arrives), scores in [0.3, 0.95] elsewhere, rows that move over time."""
    m = np.full((T, T), np.nan)
    for i in range(T):
        m[i, i:] = gen.uniform(0.3, 0.95, T - i)
    return m


def _vector(value, n, what):
    """`value` as a float array of n entries, or a hint naming what was expected."""
    try:
        array = np.asarray(value.detach().cpu() if isinstance(value, torch.Tensor) else value, dtype=float)
    except (TypeError, ValueError):
        raise Hint(f"{what} should be a list or array of numbers, got {_describe(value)}") from None
    if array.shape != (n,):
        raise Hint(f"{what} should hold {n} numbers (one per task that had time to forget), got shape "
                   f"{array.shape}")
    return array


def check_stream_forgetting(forgetting):
    """forgetting(matrix) -> the T-1 drops diag - last column (positive = forgotten), tasks 1..T-1."""
    from ..report.stream import forgetting_from_matrix

    gen = np.random.default_rng(8)
    for T in (2, 4, 5, 7):
        m = _stream_matrix(T, gen)
        expected = forgetting_from_matrix(m)[:-1]
        got = _call(forgetting, m.copy())
        if not isinstance(got, (list, tuple, np.ndarray, torch.Tensor)):
            raise Hint(f"return the T - 1 drops as a list or array, got {_describe(got)}")
        if len(got) == T:
            raise Hint("the last task has had no time to forget: return only the first T - 1 tasks' drops")
        got = _vector(got, T - 1, "the answer")
        if np.allclose(got, expected, atol=1e-12):
            continue
        if np.allclose(got, 0):
            raise Hint("all zeros is what a learner with perfect memory shows, not this matrix: take the "
                       "diagonal minus the last column")
        if np.allclose(got, -expected, atol=1e-12):
            raise Hint("the sign: forgetting is the score right after its own training minus the final score "
                       "(positive = forgotten)")
        if np.allclose(got, np.nanmax(m, axis=1)[:-1] - m[:-1, -1], atol=1e-12):
            raise Hint("start from the score right after the task's own training (the diagonal), not its best score")
        if np.allclose(got, (m[:, 0] - m[:, -1])[:-1], equal_nan=True):
            raise Hint("a task is first scored when it arrives (the diagonal); column 0 holds only the first task")
        raise Hint(f"for a {T} x {T} matrix your drops differ from the diagonal minus the last column")
    return "the diagonal minus the last column, for every task but the last, on matrices of 2 to 7 tasks"


def check_storage_ratio(storage_ratio):
    """storage_ratio(model_bytes, adapter_bytes, n) -> n * model / (model + n * adapter)."""
    gen = np.random.default_rng(9)
    for _ in range(6):
        model = float(gen.integers(10**7, 10**9))
        adapter = float(model * gen.uniform(0.005, 0.08))
        n = int(gen.integers(2, 40))
        expected = n * model / (model + n * adapter)
        got = _number(_call(storage_ratio, model, adapter, n), "the ratio")
        if abs(got - expected) <= 1e-9 * expected:
            continue
        if abs(got - model / adapter) <= 1e-9 * (model / adapter):
            raise Hint("count the base model too: the adapters need one base plus their own files")
        if abs(got - 1 / expected) <= 1e-9 / expected:
            raise Hint("the other way round: the copies' bytes divided by the base's plus the adapters'")
        if abs(got - n) <= 1e-9 * n:
            raise Hint("the adapters are not free: add n adapter files to the one base")
        raise Hint(f"for a model of {model:.0f} bytes, adapters of {adapter:.0f} and {n} tasks your ratio is {got:.4g}")
    return "n copies against one base plus n adapters, for six random sizes and task counts"


EXERCISES = {
    "01.adapter_forward": (check_adapter_forward, "write the adapter's forward pass"),
    "01.identity_init": (check_identity_init, "initialise an adapter that is exactly the identity and can still learn"),
    "01.houlsby_count": (check_houlsby_count, "count Houlsby adapter parameters by formula"),
    "02.kron": (check_kron, "write the Kronecker product by hand"),
    "02.phm_forward": (check_phm_forward, "the PHM forward pass without building W"),
    "02.compacter_count": (check_compacter_count, "count Compacter's parameters"),
    "02.prompt_inputs": (check_prompt_inputs, "what the frozen model reads under prompt tuning"),
    "02.hadamard_transform": (check_hadamard_transform, "the fast Walsh-Hadamard transform, without building H"),
    "02.lora_merge": (check_lora_merge, "fold LoRA's update into the weight"),
    "03.choose_trainable": (check_choose_trainable, "choose which parameters train for Houlsby adapters"),
    "03.train_step": (check_train_step, "one optimizer step that leaves the base unchanged"),
    "04.block_evaluations": (check_block_evaluations, "count the block evaluations of the naive and the cached loop"),
    "04.naive_spans": (check_naive_spans, "write the naive span-removal loop"),
    "05.relative_change": (check_relative_change, "measure how far an adapter moves its input at init"),
    "05.deviation_exponent": (check_deviation_exponent, "predict how that change grows with the init std"),
    "05.collapsed": (check_collapsed, "count the runs that collapsed to the majority class"),
    "06.percent_trained": (check_percent_trained, "the share of parameters a method trains"),
    "06.smallest_within": (check_smallest_within, "the smallest method within a point of full fine-tuning"),
    "07.nested_subsets": (check_nested_subsets, "nested, seeded training subsets"),
    "07.better_beyond_noise": (check_better_beyond_noise, "where an adapter beats full fine-tuning beyond the "
                               "noise of the seeds (paired by seed)"),
    "08.forgetting": (check_stream_forgetting, "forgetting per task from a stream's accuracy matrix"),
    "08.storage_ratio": (check_storage_ratio, "how many times the bytes n fine-tuned copies take against one base "
                         "plus n adapters"),
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
    except Exception as error:  # an answer of a shape no hint foresaw: still a hint, never a traceback
        result = Result(name, False, f"the check could not use your answer ({type(error).__name__}: {error}); "
                                     f"compare what it returns with the exercise: {EXERCISES[name][1]}")
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
# `python -m adapterlab.course.exercises --out DIR` writes DIR/student/ (the notebooks as they are) and
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

    notebooks_dir = Path(notebooks_dir or Path(__file__).resolve().parents[2] / "notebooks")
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

    parser = argparse.ArgumentParser(prog="python -m adapterlab.course.exercises",
                                     description="write the student and the solution version of the notebooks")
    parser.add_argument("--out", default="build/course", help="folder for student/ and solutions/")
    args = parser.parse_args()
    for folder in build_course(args.out):
        print(f"wrote {folder}")
