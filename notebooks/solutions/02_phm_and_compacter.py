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
