"""The adapter layers themselves: bottleneck adapter, low-rank linear, PHM linear.

Everything the two papers add to a frozen transformer is built from these three
modules. The Kronecker-product maths lives here and nowhere else.

Conventions (the papers'): a PHM layer computes y = x W + b with W of shape
(in_features, out_features) -- the transpose of nn.Linear's stored weight.
"""
import math

import torch
import torch.nn as nn


def trunc_normal_(tensor, std):
    """Zero-mean normal truncated at 2 std: no rare huge weight can break the near-identity start."""
    return nn.init.trunc_normal_(tensor, mean=0.0, std=std, a=-2 * std, b=2 * std)


def glorot_uniform_(tensor):
    """Glorot (Xavier) uniform with gain sqrt(2): U(-a, a), a = sqrt(2) sqrt(6 / (rows + cols)).

    The Compacter code's initialiser for the PHM factors (seq2seq/hypercomplex/inits.py).
    """
    return nn.init.xavier_uniform_(tensor, gain=math.sqrt(2))


PHM_INITS = ("compacter", "scaled-factors")


class LowRankLinear(nn.Module):
    """A linear map whose weight is a rank-r product u v^T (Adapter-LowRank uses r = 1).

    Parameters: r * (in + out) + out, instead of in * out + out.
    """

    def __init__(self, in_features, out_features, rank=1, bias=True, init_std=1e-2):
        super().__init__()
        self.in_features, self.out_features, self.rank = in_features, out_features, rank
        self.u = nn.Parameter(torch.empty(in_features, rank))
        self.v = nn.Parameter(torch.empty(rank, out_features))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
        self.reset_parameters(init_std)

    def reset_parameters(self, init_std):
        # entries of u v have std = sqrt(r) * std_u * std_v; pick the factors so that this is init_std
        factor_std = math.sqrt(init_std / math.sqrt(self.rank))
        trunc_normal_(self.u, factor_std)
        trunc_normal_(self.v, factor_std)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def matrix(self):
        """The (in, out) weight matrix, for inspection and tests."""
        return self.u @ self.v

    def forward(self, x):
        y = (x @ self.u) @ self.v  # never builds the (in, out) matrix
        return y if self.bias is None else y + self.bias


class PHMLinear(nn.Module):
    """Parameterized hypercomplex multiplication layer: W = sum_i A_i (x) B_i.

    A ("the rule") holds n matrices of n x n; B holds n matrices of (in/n) x (out/n),
    each either full or the rank-r product s_i t_i (the "LPHM" layer of Compacter).
    Pass `rule` to use a rule shared with other layers (Compacter shares one rule
    across the whole model); otherwise the layer owns its rule.

    Parameters: n^3 (own rule) + n (in/n)(out/n) (full B) or n r (in/n + out/n) (rank r) + out (bias).
    """

    def __init__(self, in_features, out_features, n, rank=None, rule=None, bias=True, init="compacter",
                 init_std=1e-2, rule_std=1e-2):
        super().__init__()
        if in_features % n or out_features % n:
            raise ValueError(
                f"PHMLinear({in_features} -> {out_features}) needs both sizes divisible by n={n}; "
                f"choose n among the common divisors of {in_features} and {out_features}"
            )
        if init not in PHM_INITS:
            raise ValueError(f"unknown PHM init {init!r}; choose one of {PHM_INITS}")
        if rule is not None and tuple(rule.shape) != (n, n, n):
            raise ValueError(f"a PHM rule for n={n} must have shape ({n}, {n}, {n}), got {tuple(rule.shape)}")
        self.in_features, self.out_features, self.n, self.rank = in_features, out_features, n, rank
        self.owns_rule = rule is None
        self.rule = nn.Parameter(torch.empty(n, n, n)) if rule is None else rule
        p, q = in_features // n, out_features // n
        if rank is None:
            self.B = nn.Parameter(torch.empty(n, p, q))
        else:
            self.s = nn.Parameter(torch.empty(n, p, rank))
            self.t = nn.Parameter(torch.empty(n, rank, q))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
        self.reset_parameters(init, init_std, rule_std)

    def reset_parameters(self, init="compacter", init_std=1e-2, rule_std=1e-2):
        """Two schemes (PHM_INITS); a shared rule is initialised by whoever made it (make_rule).

        "compacter" (the authors' code, seq2seq/hypercomplex/layers.py): an own rule ~ N(0, rule_std),
            and every factor matrix s_i, t_i (or B_i) Glorot-uniform on its own shape. The rule is
            small, so W starts tiny (near-exact identity) and training grows the rule first.
        "scaled-factors": the rule is O(1) and the factors carry the small scale, so that the
            entries of W have std about init_std, as a dense adapter's would: W sums n products
            A*B, so std(W) = sqrt(n) std(A) std(B). init_std means nothing under "compacter".
        """
        if self.owns_rule:
            init_rule_(self.rule, init, rule_std)
        factors = [self.B] if self.rank is None else [self.s, self.t]
        if init == "compacter":
            for factor in factors:
                for i in range(self.n):
                    glorot_uniform_(factor[i])
        else:
            b_std = init_std / math.sqrt(self.n)
            factor_std = b_std if self.rank is None else math.sqrt(b_std / math.sqrt(self.rank))
            for factor in factors:
                trunc_normal_(factor, factor_std)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def factors(self):
        """B as an (n, in/n, out/n) tensor (multiplying out s_i t_i when low-rank)."""
        return self.B if self.rank is None else self.s @ self.t

    def matrix(self):
        """W = sum_i kron(A_i, B_i), shape (in, out). Row (a, p) and column (b, q) hold sum_i A_i[a,b] B_i[p,q]."""
        B = self.factors()
        return torch.einsum("iab,ipq->apbq", self.rule, B).reshape(self.in_features, self.out_features)

    def forward_materialized(self, x):
        """Build the full matrix, then one matmul: cost n*in*out per call + in*out per token."""
        y = x @ self.matrix()
        return y if self.bias is None else y + self.bias

    def forward_factored(self, x):
        """Low-rank path that never builds the (in, out) matrix.

        Merge the rule into the factor on the *small* side and keep the factor on the
        big side separate, so both matmuls stay thin:
          in >= out:  u = x_(a,p) s_i  -> (a, i, k);  y = u @ [A_i (x) t_i]   (rows (a,i,k), cols (b,q))
          in <  out:  z = x @ [A_i (x) s_i]  -> (b, i, k);  y_b = z_b @ t    (rows (i,k))
        """
        n, r, lead = self.n, self.rank, x.shape[:-1]
        p, q = self.in_features // n, self.out_features // n
        if self.in_features >= self.out_features:
            s_all = self.s.permute(1, 0, 2).reshape(p, n * r)  # (p, (i,k))
            u = x.reshape(*lead, n, p) @ s_all  # (..., a, (i,k))
            rule_t = torch.einsum("iab,ikq->aikbq", self.rule, self.t).reshape(n * n * r, self.out_features)
            y = u.reshape(*lead, n * n * r) @ rule_t
        else:
            rule_s = torch.einsum("iab,ipk->apbik", self.rule, self.s).reshape(self.in_features, n * n * r)
            z = (x @ rule_s).reshape(*lead, n, n * r)  # (..., b, (i,k))
            y = (z @ self.t.reshape(n * r, q)).reshape(*lead, self.out_features)
        return y if self.bias is None else y + self.bias

    def factored_is_cheaper(self):
        """Multiply-adds per token: factored vs one matmul with the full matrix."""
        if self.rank is None:
            return False
        small, big = sorted((self.in_features, self.out_features))
        return self.n * self.rank * (big + self.n * small) < self.in_features * self.out_features

    def forward(self, x):
        return self.forward_factored(x) if self.factored_is_cheaper() else self.forward_materialized(x)

    def extra_repr(self):
        rule = "own rule" if self.owns_rule else "shared rule"
        rank = "full B" if self.rank is None else f"rank={self.rank}"
        return f"in_features={self.in_features}, out_features={self.out_features}, n={self.n}, {rank}, {rule}"


def init_rule_(rule, init="compacter", std=1e-2):
    """The PHM rule A. "compacter": N(0, std), untruncated, as the authors' code draws it;
    "scaled-factors": order-one "slow" weights, truncated normal with std 1."""
    with torch.no_grad():
        return rule.normal_(0.0, std) if init == "compacter" else trunc_normal_(rule, 1.0)


def make_rule(n, init="compacter", std=1e-2, device=None, dtype=None):
    """A fresh rule parameter of shape (n, n, n), to share among PHMLinear layers.

    std: the authors' code default is 1e-2; their Compacter GLUE configs use 1e-4 (phm_init_range).
    """
    if init not in PHM_INITS:
        raise ValueError(f"unknown PHM init {init!r}; choose one of {PHM_INITS}")
    rule = nn.Parameter(torch.empty(n, n, n, device=device, dtype=dtype))
    init_rule_(rule, init, std)
    return rule


ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU, "swish": nn.SiLU, "silu": nn.SiLU, "tanh": nn.Tanh}


class BottleneckAdapter(nn.Module):
    """Houlsby's adapter: y = x + up(act(down(x))), with a d -> m -> d bottleneck.

    Near-identity at initialisation: the projections start from a truncated normal
    with a small std (biases zero), so the adapted network starts out as the
    pretrained one. `down` and `up` can be any linear-like modules (dense, low-rank,
    PHM); by default they are nn.Linear. Parameters (dense): 2md + d + m.

    `enabled=False` turns the adapter into the identity (used for the layer-removal study).
    """

    def __init__(self, d, m, activation="gelu", init_std=1e-2, down=None, up=None):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose one of {sorted(ACTIVATIONS)}")
        self.d, self.m = d, m
        self.down = nn.Linear(d, m) if down is None else down
        self.act = ACTIVATIONS[activation]()
        self.up = nn.Linear(m, d) if up is None else up
        self.enabled = True
        for proj in (self.down, self.up):
            if isinstance(proj, nn.Linear):
                trunc_normal_(proj.weight, init_std)
                nn.init.zeros_(proj.bias)

    def forward(self, x):
        if not self.enabled:
            return x
        return x + self.up(self.act(self.down(x)))

    def extra_repr(self):
        return f"d={self.d}, m={self.m}" + ("" if self.enabled else ", disabled")
