"""The Fastfood transform: a random D x d projection applied in O(L log L) time and O(L) memory.

Intrinsic-SAID (intrinsic.py) moves every weight tensor of the model along P_i theta, with P_i a
random D_i x d matrix and D_i the tensor's size. Stored densely, P_i would hold D_i * d numbers
(for BERT's word embeddings at d = 1,400: 16 billion). Fastfood (Le, Sarlos & Smola 2013) stands for
such a Gaussian-like matrix with a product of cheap factors, as Li et al. 2018 and Aghajanyan et
al. 2020 use it:

    P x = (1 / (norm * sqrt(D / L))) * [H G Pi H B pad(x)][:D]

    pad  zero-pad x from d to L = 2^ceil(log2(max(D, d))) entries
    B    diagonal of random signs +-1
    H    the L x L Walsh-Hadamard matrix (entries +-1, unnormalised)
    Pi   a random permutation
    G    diagonal of standard normals
    norm sqrt(L * sum(G^2)), so that every row of H G Pi H B has unit norm on average

The normalisation follows the authors' code (rabeehk/compacter, seq2seq/projections/intrinsic.py,
after Aghajanyan's): divide by norm * sqrt(D / L). One difference: that code sizes L by D alone and
pads x with a negative amount when d > L, which silently drops theta's entries beyond L for tensors
smaller than d (LayerNorm weights, biases); we size L by max(D, d), so that every tensor sees all of
theta. Pure torch, no CUDA extension: H is applied as a product of small Hadamard matrices, one per
group of 4 bits of the index (H_L = H_16 (x) H_16 (x) ..., one batched matmul each).
"""
import math

import torch

HADAMARD_BITS = 4  # apply H_L as Kronecker factors of H_16: log2(L)/4 matmuls instead of log2(L) butterflies


def hadamard_matrix(size, dtype=torch.float32, device=None):
    """The size x size Walsh-Hadamard matrix (Sylvester's construction), entries +-1; size a power of 2."""
    h = torch.ones(1, 1, dtype=dtype, device=device)
    while h.shape[0] < size:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return h


def hadamard_transform(x):
    """H x along the last axis (length L, a power of two), unnormalised: H has entries +-1, H H = L I.

    H_L[i, j] = (-1)^popcount(i & j) factorises over groups of bits of i and j: H_L = H_a (x) H_b
    (x) ..., so we view x as (..., a, b, ...) and multiply each axis by its small Hadamard matrix.
    """
    size = x.shape[-1]
    bits = size.bit_length() - 1
    if size != 1 << bits:
        raise ValueError(f"the Hadamard transform needs a length that is a power of two, got {size}")
    lead = x.shape[:-1]
    y, done = x.reshape(-1, size), 0
    while done < bits:
        k = min(HADAMARD_BITS, bits - done)
        outer, inner = 1 << done, size >> (done + k)  # index bits above and below this group
        h = hadamard_matrix(1 << k, dtype=x.dtype, device=x.device)
        if inner == 1:  # the lowest bits: one (N, 16) @ (16, 16) matmul (H is symmetric) beats N tiny ones
            y = (y.reshape(-1, 1 << k) @ h).reshape(-1, size)
        else:
            y = (h @ y.reshape(-1, outer, 1 << k, inner)).reshape(-1, size)
        done += k
    return y.reshape(*lead, size)


def fastfood_size(out_features, in_features):
    """L: the power of two the transform works in (at least D and d)."""
    return 1 << max(out_features - 1, in_features - 1, 1).bit_length()


def fastfood_factors(out_features, in_features, generator=None, device=None):
    """The random factors of one D x d projection: (signs B, permutation Pi, gaussian G, scale).

    scale = 1 / (norm * sqrt(D / L)) is folded into one number, computed in float64.
    """
    size = fastfood_size(out_features, in_features)
    signs = torch.randint(0, 2, (size,), generator=generator).float() * 2 - 1
    perm = torch.randperm(size, generator=generator)
    gauss = torch.randn(size, generator=generator)
    norm = math.sqrt(size * float((gauss.double() ** 2).sum()))
    scale = 1.0 / (norm * math.sqrt(out_features / size))
    return signs.to(device), perm.to(device), gauss.to(device), scale


def fastfood(x, out_features, signs, perm, gauss, scale):
    """P x for a vector x of d entries: D numbers, without ever building the D x d matrix."""
    v = torch.zeros(signs.shape[0], dtype=x.dtype, device=x.device)
    v = torch.cat([x, v[x.shape[0]:]]) * signs.to(x.dtype)  # pad(x), then B
    v = hadamard_transform(v)[perm] * gauss.to(x.dtype)  # H, Pi, G
    return hadamard_transform(v)[:out_features] * scale  # H, keep D rows, normalise


def fastfood_matrix(out_features, in_features, signs, perm, gauss, scale, dtype=torch.float64):
    """The explicit D x d matrix that fastfood() applies, factor by factor (for tests and teaching)."""
    size = signs.shape[0]
    h = hadamard_matrix(size, dtype=dtype)
    permutation = torch.zeros(size, size, dtype=dtype)
    permutation[torch.arange(size), perm] = 1  # (Pi v)_i = v_perm[i]
    full = h @ torch.diag(gauss.to(dtype)) @ permutation @ h @ torch.diag(signs.to(dtype))
    return full[:out_features, :in_features] * scale
