"""The layers against their formulas: parameter counts, near-identity init, PHM == sum of Kronecker products."""
import math

import pytest
import torch

from adapterlab.nn.layers import BottleneckAdapter, LowRankLinear, PHMLinear, make_rule


def n_params(module):
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("d,m", [(768, 64), (1024, 64), (384, 8), (64, 1)])
def test_bottleneck_adapter_has_2md_plus_d_plus_m_parameters(d, m):
    assert n_params(BottleneckAdapter(d, m)) == 2 * m * d + d + m


def test_bottleneck_adapter_computes_its_formula():
    torch.manual_seed(0)
    a = BottleneckAdapter(16, 4, init_std=0.5).double()
    x = torch.randn(3, 5, 16, dtype=torch.float64)
    expected = x + torch.nn.functional.gelu(x @ a.down.weight.T + a.down.bias) @ a.up.weight.T + a.up.bias
    # float64: rounding (~1e-16 x 16 terms) is far below the 1e-7 default, whatever order the kernel adds in
    torch.testing.assert_close(a(x), expected)


def test_init_is_truncated_normal_with_zero_biases():
    torch.manual_seed(0)
    a = BottleneckAdapter(768, 256, init_std=1e-3)
    w = torch.cat([a.down.weight.flatten(), a.up.weight.flatten()])
    assert w.abs().max() <= 2e-3 + 1e-9  # truncated at 2 std
    assert 0.7e-3 < w.std() < 1e-3  # a normal truncated at 2 std has std ~0.88 of the untruncated one
    assert a.down.bias.abs().sum() == 0 and a.up.bias.abs().sum() == 0


@pytest.mark.parametrize("std", [1e-7, 1e-4])
def test_adapter_starts_near_identity(std):
    torch.manual_seed(0)
    x = torch.randn(4, 10, 64)
    for a in [BottleneckAdapter(64, 16, init_std=std),
              BottleneckAdapter(64, 16, init_std=std,
                                down=PHMLinear(64, 16, 4, rank=1, init="scaled-factors", init_std=std),
                                up=PHMLinear(16, 64, 4, rank=1, init="scaled-factors", init_std=std)),
              BottleneckAdapter(64, 16, init_std=std, down=LowRankLinear(64, 16, init_std=std),
                                up=LowRankLinear(16, 64, init_std=std))]:
        assert (a(x) - x).abs().max() < 100 * std


def glorot_bound(rows, cols):
    """The Compacter code's glorot_uniform: xavier_uniform_ with gain sqrt(2)."""
    return math.sqrt(2) * math.sqrt(6 / (rows + cols))


@pytest.mark.parametrize("rank", [1, None])
def test_phm_default_init_is_the_authors(rank):
    """Rule ~ N(0, rule_std); each factor matrix s_i, t_i (or B_i) Glorot-uniform on its own shape."""
    torch.manual_seed(0)
    layer = PHMLinear(768, 24, 4, rank=rank, rule_std=1e-2)
    # 64 normal draws: the sample std is within 30% of 1e-2 (3.4 of its standard errors of 8.8%)
    assert 0.7e-2 < layer.rule.std() < 1.3e-2
    factors = {"B": (192, 6)} if rank is None else {"s": (192, 1), "t": (1, 6)}
    for name, (rows, cols) in factors.items():
        f, a = getattr(layer, name), glorot_bound(rows, cols)
        assert f.abs().max() <= a
        # U(-a, a) has std a / sqrt(3); per factor matrix, so t (bound 1.31) is wider than s (bound 0.25)
        assert f.std().item() == pytest.approx(a / math.sqrt(3), rel=0.25)  # 24 draws for t: 9% standard error
    assert layer.bias.abs().sum() == 0


def test_phm_scaled_factors_init_gives_w_the_std_of_a_dense_adapter():
    torch.manual_seed(0)
    layer = PHMLinear(768, 24, 4, rank=1, init="scaled-factors", init_std=1e-2)
    assert 0.8 < layer.rule.std() < 1.0  # truncated N(0, 1): std 0.88
    # W sums n products of truncated normals (each factor shrinks the std by ~0.88): 0.5..1.0 of init_std
    assert 0.5e-2 < layer.matrix().std() < 1e-2


def test_shared_rule_init_follows_the_scheme():
    torch.manual_seed(0)
    assert 0.7e-4 < make_rule(4, std=1e-4).std() < 1.3e-4
    assert 0.8 < make_rule(4, "scaled-factors").std() < 1.0
    with pytest.raises(ValueError, match="unknown PHM init 'xavier'"):
        make_rule(4, "xavier")
    with pytest.raises(ValueError, match="unknown PHM init 'xavier'"):
        PHMLinear(8, 8, 2, init="xavier")


def test_disabled_adapter_is_exactly_identity():
    a = BottleneckAdapter(8, 2, init_std=1.0)
    a.enabled = False
    x = torch.randn(3, 8)
    assert torch.equal(a(x), x)


def test_unknown_activation_is_refused():
    with pytest.raises(ValueError, match="unknown activation 'sigmoidal'"):
        BottleneckAdapter(8, 2, activation="sigmoidal")


def explicit_kron_sum(layer):
    """W = sum_i kron(A_i, B_i), written the slow, obvious way."""
    B = layer.B if layer.rank is None else torch.stack([layer.s[i] @ layer.t[i] for i in range(layer.n)])
    return sum(torch.kron(layer.rule[i], B[i]) for i in range(layer.n))


@pytest.mark.parametrize("in_f,out_f,n,rank", [(12, 8, 2, None), (12, 8, 4, None), (384, 24, 4, 1),
                                               (24, 768, 4, 1), (768, 24, 12, 2), (64, 16, 4, 3)])
@pytest.mark.parametrize("shared", [False, True])
def test_phm_equals_explicit_sum_of_kronecker_products(in_f, out_f, n, rank, shared):
    torch.manual_seed(0)
    rule = make_rule(n) if shared else None
    layer = PHMLinear(in_f, out_f, n, rank=rank, rule=rule, init_std=0.1).double()
    W = explicit_kron_sum(layer)
    assert W.shape == (in_f, out_f)
    torch.testing.assert_close(layer.matrix(), W)
    x = torch.randn(5, 3, in_f, dtype=torch.float64)
    expected = x @ W + layer.bias
    torch.testing.assert_close(layer.forward_materialized(x), expected)
    torch.testing.assert_close(layer(x), expected)
    if rank is not None:
        torch.testing.assert_close(layer.forward_factored(x), expected)


def test_factored_path_is_chosen_when_it_is_cheaper():
    assert PHMLinear(768, 24, 4, rank=1).factored_is_cheaper()
    assert PHMLinear(24, 768, 4, rank=1).factored_is_cheaper()
    assert not PHMLinear(24, 768, 4).factored_is_cheaper()  # full B: nothing to factor
    assert not PHMLinear(64, 64, 8, rank=4).factored_is_cheaper()  # n r (64 + 8*64) > 64*64


def test_factored_and_materialized_gradients_agree():
    torch.manual_seed(0)
    layer = PHMLinear(48, 12, 4, rank=1, init_std=0.1).double()
    x = torch.randn(6, 48, dtype=torch.float64)
    grads = []
    for f in (layer.forward_factored, layer.forward_materialized):
        layer.zero_grad()
        f(x).pow(2).sum().backward()
        grads.append([p.grad.clone() for p in layer.parameters()])
    for g1, g2 in zip(*grads):
        torch.testing.assert_close(g1, g2)


@pytest.mark.parametrize("in_f,out_f,n,rank,own", [(768, 24, 4, None, True), (768, 24, 12, None, True),
                                                   (768, 24, 4, 1, False), (24, 768, 8, 2, False)])
def test_phm_parameter_count(in_f, out_f, n, rank, own):
    layer = PHMLinear(in_f, out_f, n, rank=rank, rule=None if own else make_rule(n))
    b = n * (in_f // n) * (out_f // n) if rank is None else n * rank * (in_f // n + out_f // n)
    # a shared rule is one parameter of the model, not of each layer: count it once outside
    own_rule = n ** 3 if own else 0
    mine = sum(p.numel() for name, p in layer.named_parameters() if own or name != "rule")
    assert mine == own_rule + b + out_f


def test_shared_rule_is_one_parameter_and_works_outside_a_model():
    rule = make_rule(4)
    a, b = PHMLinear(64, 16, 4, rank=1, rule=rule), PHMLinear(16, 64, 4, rank=1, rule=rule)
    assert a.rule is b.rule is rule
    y = b(a(torch.randn(2, 64)))  # no model, no global context
    y.sum().backward()
    assert rule.grad is not None and rule.grad.abs().sum() > 0  # both layers feed the one rule


@pytest.mark.parametrize("in_f,out_f,n", [(10, 8, 4), (12, 10, 3), (768, 24, 5)])
def test_phm_sizes_not_divisible_by_n_are_refused(in_f, out_f, n):
    with pytest.raises(ValueError, match=rf"PHMLinear\({in_f} -> {out_f}\).*divisible by n={n}"):
        PHMLinear(in_f, out_f, n)


def test_phm_rule_of_wrong_shape_is_refused():
    with pytest.raises(ValueError, match=r"shape \(4, 4, 4\)"):
        PHMLinear(8, 8, 4, rule=make_rule(2))


def test_phm_exposes_linear_like_attributes():
    layer = PHMLinear(768, 24, 4, rank=1)
    assert (layer.in_features, layer.out_features, layer.n) == (768, 24, 4)
    assert layer(torch.randn(2, 3, 768)).shape == (2, 3, 24)


def test_low_rank_linear_is_a_rank_r_product():
    torch.manual_seed(0)
    layer = LowRankLinear(32, 8, rank=1).double()  # float64: see test_bottleneck_adapter_computes_its_formula
    assert n_params(layer) == 32 + 8 + 8
    assert torch.linalg.matrix_rank(layer.matrix().detach()) == 1
    x = torch.randn(4, 32, dtype=torch.float64)
    torch.testing.assert_close(layer(x), x @ layer.matrix() + layer.bias)
