# Solutions to the exercises of 02_phm_and_compacter.ipynb, one section per exercise.

# %% exercise: 02.kron
def kron(A, B):
    # block (i, j) is A[i, j] * B: broadcast to (a, p, b, q) and merge (a, p) into rows, (b, q) into columns
    (a, b), (p, q) = A.shape, B.shape
    return (A[:, None, :, None] * B[None, :, None, :]).reshape(a * p, b * q)

# %% exercise: 02.phm_forward
def phm_forward(x, A, B):
    # x split into n blocks of in/n; each block times every B_i, then the rule mixes the blocks
    n, p, q = B.shape
    blocks = x.reshape(*x.shape[:-1], n, p)
    per_factor = torch.einsum("...ap,ipq->...iaq", blocks, B)
    return torch.einsum("...iaq,iab->...bq", per_factor, A).reshape(*x.shape[:-1], n * q)

# %% exercise: 02.compacter_count
def count_compacter(d, m, n, adapters):
    # per adapter: two rank-1 PHM layers (s_i of d/n or m/n, t_i of m/n or d/n, for each of n) + biases;
    # one rule of n^3 for the whole model
    down = n * (d // n + m // n) + m
    up = n * (m // n + d // n) + d
    return adapters * (down + up) + n ** 3

# %% exercise: 02.prompt_inputs
def prepend_prompt(embeds, mask, P):
    # the same n prompt vectors in front of every sequence; the model must attend to them: n ones in front
    b, n = embeds.shape[0], P.shape[0]
    prompts = P.unsqueeze(0).expand(b, -1, -1)  # (b, n, d)
    ones = torch.ones(b, n, dtype=mask.dtype)
    return torch.cat([prompts, embeds], dim=1), torch.cat([ones, mask], dim=1)

# %% exercise: 02.hadamard_transform
def hadamard_transform(v):
    # butterflies: at distance h = 1, 2, 4, ... each pair (a, b) becomes (a + b, a - b); log2(L) rounds
    L = v.shape[-1]
    y, h = v.clone(), 1
    while h < L:
        y = y.reshape(*v.shape[:-1], L // (2 * h), 2, h)
        a, b = y[..., 0, :], y[..., 1, :]
        y = torch.stack([a + b, a - b], dim=-2)
        h *= 2
    return y.reshape(v.shape)

# %% exercise: 02.lora_merge
def merge_lora(W, A, B, alpha):
    # the update beside W is (alpha / r) B A, r the rank (A's rows); folded in, it costs nothing at serving time
    r = A.shape[0]
    return W + alpha / r * B @ A
