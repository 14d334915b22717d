"""Every exercise checker passes a right answer, says "not yet" to the stub, and rejects a typical
wrong answer with the hint written for that mistake."""
import pytest
import torch
import torch.nn.functional as F

from adapterlab import exercises
from adapterlab.exercises import check


def stub(*args):
    raise NotImplementedError


# ---------------------------------------------------------------- right answers (as a teacher would write them)

def adapter_forward(h, W_down, b_down, W_up, b_up):
    return h + F.gelu(h @ W_down + b_down) @ W_up + b_up


def identity_init(d, m):
    return torch.randn(d, m) * 1e-2, torch.zeros(m), torch.zeros(m, d), torch.zeros(d)


def houlsby_count(d, L, m):
    return 2 * L * (2 * m * d + d + m)


def kron(A, B):
    (a, b), (p, q) = A.shape, B.shape
    return (A[:, None, :, None] * B[None, :, None, :]).reshape(a * p, b * q)


def phm_forward(x, A, B):
    n, p, q = B.shape
    blocks = x.reshape(*x.shape[:-1], n, p)  # input block a of size p
    per_factor = torch.einsum("...ap,ipq->...iaq", blocks, B)  # x_a B_i
    return torch.einsum("...iaq,iab->...bq", per_factor, A).reshape(*x.shape[:-1], n * q)


def compacter_count(d, m, n, adapters):
    down = n * (d // n + m // n) + m  # rank-1 factors s_i (d/n), t_i (m/n), bias
    up = n * (m // n + d // n) + d
    return adapters * (down + up) + n ** 3


def choose_trainable(model):
    for name, p in model.named_parameters():
        p.requires_grad_(".adapter." in name or "LayerNorm" in name or name.startswith("classifier"))


def train_step(model, batch, optimizer):
    loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


RIGHT = {
    "01.adapter_forward": adapter_forward, "01.identity_init": identity_init, "01.houlsby_count": houlsby_count,
    "02.kron": kron, "02.phm_forward": phm_forward, "02.compacter_count": compacter_count,
    "03.choose_trainable": choose_trainable, "03.train_step": train_step,
}

# ---------------------------------------------------------------- typical mistakes, with the hint each must get


def _freeze_all_but_adapters(model):
    for name, p in model.named_parameters():
        p.requires_grad_(".adapter." in name or name.startswith("classifier"))  # LayerNorms forgotten


def _step_everything(model, batch, optimizer):
    model.requires_grad_(True)
    full = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(**batch).loss
    loss.backward()
    full.step()
    return loss


WRONG = {
    "01.adapter_forward": (lambda h, Wd, bd, Wu, bu: F.gelu(h @ Wd + bd) @ Wu + bu, "skip connection"),
    "01.identity_init": (lambda d, m: (torch.zeros(d, m), torch.zeros(m), torch.zeros(m, d), torch.zeros(d)),
                         "no gradient"),
    "01.houlsby_count": (lambda d, L, m: L * (2 * m * d + d + m), "two adapters"),
    "02.kron": (lambda A, B: torch.kron(B, A), "swapped"),
    "02.phm_forward": (lambda x, A, B: x @ sum(torch.kron(B[i], A[i]) for i in range(len(A))), "rule A comes first"),
    "02.compacter_count": (lambda d, m, n, k: k * (n * (d // n + m // n) * 2 + d + m + n ** 3), "once"),
    "03.choose_trainable": (_freeze_all_but_adapters, "LayerNorm"),
    "03.train_step": (_step_everything, "frozen parameter changed"),
}


def test_every_exercise_has_a_right_and_a_wrong_answer_here():
    assert set(RIGHT) == set(WRONG) == set(exercises.EXERCISES)


@pytest.mark.parametrize("name", sorted(exercises.EXERCISES))
def test_right_answer_passes(name, capsys):
    result = check(name, RIGHT[name])
    assert result.passed, result.message
    assert "[PASS]" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(exercises.EXERCISES))
def test_stub_is_not_yet(name):
    for answer in (stub, None):
        result = check(name, answer, quiet=True)
        assert not result.passed
        assert "stub" in result.message or "no answer" in result.message


@pytest.mark.parametrize("name", sorted(exercises.EXERCISES))
def test_wrong_answer_gets_its_hint(name):
    answer, hint = WRONG[name]
    result = check(name, answer, quiet=True)
    assert not result.passed
    assert hint in result.message, result.message


def test_a_crash_is_reported_not_raised():
    result = check("02.kron", lambda A, B: A @ B, quiet=True)  # 2x3 @ 4x5: a shape error
    assert not result.passed and "raised RuntimeError" in result.message


def test_unknown_exercise_names_the_known_ones():
    with pytest.raises(ValueError, match="01.adapter_forward"):
        check("01.adaptor", adapter_forward)
