"""The checks of the method notebooks' exercises (01 the bottleneck adapter, 02 PHM, Compacter and three
baselines by hand, 03 what trains): each compares an answer with the package's tested implementation on
fresh random inputs in float64 and returns what it showed, or raises a Hint (checking.py)."""
import copy

import scipy.linalg
import torch
import torch.nn.functional as F

from ..nn.layers import BottleneckAdapter, PHMLinear
from .checking import (KRON, Hint, _call, _count, _describe, _first_slip, _LargestTensor, _number, _randn,
                       _refused, _same, _shape, _tiny_bert)

# ------------------------------------------------------------------ 01: the bottleneck adapter

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
    h = _randn(gen, 2, 5, d)
    W_down, b_down, W_up, b_up = weights = _randn(gen, d, m), _randn(gen, m), _randn(gen, m, d), _randn(gen, d)
    out = _call(adapter_forward, h, *weights)
    expected = _reference_adapter(h, *weights)
    _shape(out, expected, "the adapter's output")
    if _same(out, expected):
        return "matches adapterlab.BottleneckAdapter on random weights"
    down = h @ W_down + b_down
    _first_slip(lambda slip: _same(out, slip), [
        (expected - h, "the skip connection is missing: the adapter adds its result back to its input"),
        (h + down @ W_up + b_up, "there is no nonlinearity between the two projections (use F.gelu)"),
        (h + F.relu(down) @ W_up + b_up, "the nonlinearity should be GELU (F.gelu), as in BERT's feed-forward"),
        (h + F.gelu(down, approximate="tanh") @ W_up + b_up, "that is the tanh approximation of GELU; BERT and "
         "adapterlab use the exact one, F.gelu(x) (= x Φ(x), with the normal CDF)"),
        (h + F.gelu(down) @ W_up, "the up-projection's bias b_up is missing"),
        (h + F.gelu(h @ W_down) @ W_up + b_up,
         "the down-projection's bias b_down is missing (it goes inside the nonlinearity)"),
        (h + F.gelu(down @ W_up + b_up),
         "the nonlinearity goes between the projections: f(h W_down + b_down), then W_up and b_up"),
    ], "the output differs from h + f(h W_down + b_down) W_up + b_up; check each term")


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
    (h + F.gelu(h @ W_down + b_down) @ W_up + b_up).pow(2).sum().backward()
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
        if got != expected:
            _first_slip(lambda slip: got == slip, [
                (L * per, "Houlsby puts two adapters in each layer (after attention and after the feed-forward)"),
                (2 * L * 2 * m * d, "the projections' biases are missing"),
                (expected + 2 * L * 2 * d,
                 "count only the adapters: the LayerNorms are trained too, but they are not adapter parameters"),
            ], f"for d={d}, L={L}, m={m} your count is off by {got - expected:+,}")
    return "matches the parameters of adapterlab's adapters for BERT-base, BERT-large and MiniLM"


# ------------------------------------------------------------------ 02: PHM and Compacter

def check_kron(kron):
    """kron(A, B) -> the Kronecker product, written without torch.kron."""
    gen = torch.Generator().manual_seed(2)
    A, B = _randn(gen, 2, 3), _randn(gen, 4, 5)
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


def check_phm_forward(phm_forward):
    """phm_forward(x, A, B) -> x @ sum_i kron(A_i, B_i), computed without building the (in, out) matrix.

    "Without building W" is checked by size: every tensor the answer computes is watched (_LargestTensor),
    and one with as many entries as W (in x out) fails, whether it came from torch.kron, an einsum or a
    broadcast. The sizes make that test sharp: with 2 rows of x, n=4, in=48, out=40, the blockwise answer's
    largest tensor is B itself (n·in/n·out/n = 480 entries) or x's blocks times the B_i (2·n·n·out/n = 320),
    while W has 1,920."""
    n, p, q = 4, 12, 10
    gen = torch.Generator().manual_seed(3)
    x, A, B = _randn(gen, 2, n * p), _randn(gen, n, n, n), _randn(gen, n, p, q)
    layer = PHMLinear(n * p, n * q, n, bias=False).double()
    with torch.no_grad():
        layer.rule.copy_(A), layer.B.copy_(B)
        expected = layer.forward_materialized(x)
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
        if got != expected:
            once = "Compacter shares one rule A across all layers: count its n³ weights once"
            _first_slip(lambda slip: got == slip, [
                (adapters * per_adapter + adapters * n ** 3, once),  # a rule per adapter
                (adapters * per_adapter + 2 * adapters * n ** 3, once),  # a rule per layer
                (adapters * per_adapter, "the shared rule A (n³ weights) is trained too"),
                (expected - adapters * (d + m), "the projections' biases are missing"),
            ], f"for d={d}, m={m}, n={n}, {adapters} adapters your count is off by {got - expected:+,}")
    return "matches adapterlab's PHM layers (rank-1 factors, one shared rule)"


# ------------------------------------------------------------------ 02, section 6: three baselines by hand

def check_prompt_inputs(prepend_prompt):
    """prepend_prompt(embeds, mask, P) -> (embeds (b, L, d) with the n prompt vectors P (n, d) in front,
    mask (b, L) with n ones in front): what the frozen model reads under prompt tuning."""
    gen = torch.Generator().manual_seed(6)
    for b, L, d, n in ((2, 5, 8, 3), (3, 7, 4, 1), (1, 4, 6, 5)):
        embeds = _randn(gen, b, L, d)
        mask = (torch.rand(b, L, generator=gen) > 0.3).long()
        mask[:, 0] = 1  # padded sequences: the input's own mask has zeros that must survive
        P = _randn(gen, n, d)
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
        v = _randn(gen, *shape)
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
        if not _same(out, expected):
            _first_slip(lambda slip: _same(out, slip), [
                (expected / L ** 0.5 if L > 1 else None,
                 "this H is unnormalised (entries +-1, H H = L I): do not divide by sqrt(L)"),
                (v, "H v mixes every entry of v: combine pairs (a + b, a - b) at distance 1, 2, 4, ..."),
            ], f"for v of shape {tuple(shape)} your result differs from H v (H: Sylvester's Walsh-Hadamard "
               "matrix, entries +-1)")
    return "matches H v for lengths 1 to 64, and no tensor as large as H was made"


def check_lora_merge(merge_lora):
    """merge_lora(W, A, B, alpha) -> W + (alpha / r) B A: LoRA's update folded into the weight (W: out x in,
    A: r x in, B: out x r), so that serving costs what the base model costs."""
    gen = torch.Generator().manual_seed(8)
    for out_f, in_f, r, alpha in ((6, 4, 2, 16.0), (5, 7, 3, 8.0), (3, 3, 1, 1.0)):
        W, A, B = _randn(gen, out_f, in_f), _randn(gen, r, in_f), _randn(gen, out_f, r)
        expected = W + alpha / r * B @ A
        got = _call(merge_lora, W.clone(), A.clone(), B.clone(), alpha)
        _shape(got, expected, f"the merged weight for out={out_f}, in={in_f}, r={r}")
        if not _same(got, expected):
            _first_slip(lambda slip: _same(got, slip), [
                (W + B @ A if alpha != r else None, "scale the update: LoRA adds (alpha / r) B A, not B A"),
                (W + alpha * B @ A if r > 1 else None, "divide by the rank r too: the scale is alpha / r"),
                (W, "the update B A is missing: add (alpha / r) B A to W"),
            ], f"for out={out_f}, in={in_f}, r={r}, alpha={alpha:g} your matrix differs from W + (alpha / r) B A")
    return "matches W + (alpha / r) B A for three shapes and scales (what adapterlab.methods.lora.merge computes)"


# ------------------------------------------------------------------ 03: what trains

def check_choose_trainable(choose_trainable):
    """choose_trainable(model): on a model with Houlsby adapters inserted, set requires_grad as the method does."""
    expected = {n for n, p in _tiny_bert("houlsby", bottleneck=4).named_parameters() if p.requires_grad}
    model = _tiny_bert("houlsby", bottleneck=4)
    model.requires_grad_(True)  # undo adapt's choice: the student makes it
    _call(choose_trainable, model)
    got = {n for n, p in model.named_parameters() if p.requires_grad}
    if got == expected:
        return "the same parameters train as with al.adapt(model, 'houlsby')"
    missing, extra = expected - got, got - expected
    _first_slip(lambda part: any(part in n for n in missing), [
        ("classifier", "the classification head is new: it must train"),
        ("LayerNorm", "Houlsby trains the LayerNorms as well as the adapters"),
        (".adapter.", "some adapter parameters are frozen")])
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
    model = _tiny_bert("houlsby", dropout=0.0, bottleneck=4).train()
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
