"""Tests for shoal.ops.policy_losses against per-element loops written from the PPO paper."""

from __future__ import annotations

import math

import pytest
import torch

from shoal.ops import (
    approx_kl,
    clip_fraction,
    clipped_surrogate_loss,
    clipped_value_loss,
    huber_loss,
    value_loss,
)

EPS = 0.2
# Ratios on both sides of both clip thresholds (1 - ε = 0.8, 1 + ε = 1.2), times advantages of
# both signs: every case of the PPO objective is visited.
RATIOS = [0.3, 0.79, 0.81, 1.0, 1.19, 1.21, 2.5]
ADVANTAGES = [-2.0, -0.5, 0.5, 2.0]


def grid(dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    ratio = torch.tensor([[r] * len(ADVANTAGES) for r in RATIOS], dtype=dtype)
    adv = torch.tensor([ADVANTAGES] * len(RATIOS), dtype=dtype)
    return ratio.log(), adv


def ref_surrogate_loss(ratio: float, adv: float, eps: float) -> float:
    """-L^CLIP by cases, Schulman et al. 2017, Figure 1: A > 0 caps r at 1+ε, A < 0 floors it."""
    if adv >= 0:
        return -min(ratio, 1 + eps) * adv
    return -max(ratio, 1 - eps) * adv


def ref_clipping_active(ratio: float, adv: float, eps: float) -> bool:
    return (adv > 0 and ratio > 1 + eps) or (adv < 0 and ratio < 1 - eps)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_surrogate_matches_reference_on_grid(dtype):
    log_ratio, adv = grid(dtype)
    got = clipped_surrogate_loss(log_ratio, adv, EPS)
    assert got.shape == log_ratio.shape
    assert got.dtype == dtype
    expected = [
        [ref_surrogate_loss(math.exp(lr), a, EPS) for lr, a in zip(lrow, arow, strict=True)]
        for lrow, arow in zip(log_ratio.double().tolist(), adv.double().tolist(), strict=True)
    ]
    torch.testing.assert_close(got.double(), torch.tensor(expected, dtype=torch.float64))


def test_surrogate_matches_reference_random():
    g = torch.Generator().manual_seed(0)
    log_ratio = 0.4 * torch.randn(6, 5, 3, generator=g, dtype=torch.float64)
    adv = torch.randn(6, 5, 3, generator=g, dtype=torch.float64)
    got = clipped_surrogate_loss(log_ratio, adv, 0.1)
    expected = [
        ref_surrogate_loss(math.exp(lr), a, 0.1)
        for lr, a in zip(log_ratio.flatten().tolist(), adv.flatten().tolist(), strict=True)
    ]
    torch.testing.assert_close(got.flatten(), torch.tensor(expected, dtype=torch.float64))


def test_surrogate_hand_case():
    # ε = 0.2:  ρ=1.5, A=+1 -> -min(1.5, 1.2) = -1.2      ρ=0.5, A=-1 -> -min(-0.5, -0.8) = 0.8
    #           ρ=0.5, A=+1 -> -min(0.5, 0.8) = -0.5       ρ=1.5, A=-1 -> -min(-1.5, -1.2) = 1.5
    log_ratio = torch.tensor([1.5, 0.5, 0.5, 1.5]).log()
    adv = torch.tensor([1.0, -1.0, 1.0, -1.0])
    got = clipped_surrogate_loss(log_ratio, adv, 0.2)
    torch.testing.assert_close(got, torch.tensor([-1.2, 0.8, -0.5, 1.5]))


def test_surrogate_gradient_is_zero_where_clipped():
    log_ratio, adv = grid()
    log_ratio.requires_grad_(True)
    adv.requires_grad_(True)
    clipped_surrogate_loss(log_ratio, adv, EPS).sum().backward()
    assert adv.grad is None  # advantages are constants
    grad = log_ratio.grad
    assert grad is not None
    n_clipped = 0
    for i, ratio in enumerate(RATIOS):
        for j, a in enumerate(ADVANTAGES):
            if ref_clipping_active(ratio, a, EPS):
                n_clipped += 1
                assert grad[i, j].item() == 0.0, (ratio, a)
            else:  # d(-ρA)/d log ρ = -ρA
                assert grad[i, j].item() == pytest.approx(-ratio * a, rel=1e-9), (ratio, a)
    assert n_clipped == 8  # 2 ratios above 1.2 x 2 positive A + 2 below 0.8 x 2 negative A


def test_clip_fraction():
    # ε = 0.2: ρ = [0.5, 1.0, 1.1, 1.3] -> |ρ-1| = [0.5, 0, 0.1, 0.3] -> 2 of 4 outside.
    log_ratio = torch.tensor([0.5, 1.0, 1.1, 1.3]).log().requires_grad_(True)
    got = clip_fraction(log_ratio, 0.2)
    assert got.shape == ()
    assert not got.requires_grad
    assert got.item() == pytest.approx(0.5)
    log_ratio, _ = grid()
    expected = sum(abs(math.exp(x) - 1) > EPS for x in log_ratio.flatten().tolist())
    assert clip_fraction(log_ratio, EPS).item() == pytest.approx(expected / log_ratio.numel())


def test_approx_kl_hand_case():
    # log ρ = [0, log 2]: (ρ - 1) - log ρ = [0, 1 - log 2] -> mean = (1 - 0.693147) / 2 = 0.153426
    log_ratio = torch.tensor([0.0, math.log(2.0)], dtype=torch.float64, requires_grad=True)
    got = approx_kl(log_ratio)
    assert got.shape == ()
    assert not got.requires_grad
    assert got.item() == pytest.approx((1.0 - math.log(2.0)) / 2.0, rel=1e-12)


def test_approx_kl_estimates_true_kl():
    # Actions sampled from π_old; the k3 estimator is unbiased for KL(π_old || π).
    g = torch.Generator().manual_seed(0)
    p_old = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    p_new = torch.tensor([0.25, 0.25, 0.2, 0.3], dtype=torch.float64)
    actions = torch.multinomial(p_old, 200_000, replacement=True, generator=g)
    log_ratio = p_new.log()[actions] - p_old.log()[actions]
    true_kl = (p_old * (p_old / p_new).log()).sum().item()
    assert approx_kl(log_ratio).item() == pytest.approx(true_kl, rel=0.03)
    per_sample = [(math.exp(x) - 1) - x for x in log_ratio[:1000].tolist()]
    assert approx_kl(log_ratio[:1000]).item() == pytest.approx(sum(per_sample) / 1000, rel=1e-9)


def test_value_loss():
    # 0.5 (v - G)^2: v = [1, -1], G = [3, 0] -> [2, 0.5]; d/dv = v - G = [-2, -1].
    v = torch.tensor([1.0, -1.0], requires_grad=True)
    target = torch.tensor([3.0, 0.0], requires_grad=True)
    got = value_loss(v, target)
    torch.testing.assert_close(got, torch.tensor([2.0, 0.5]))
    got.sum().backward()
    torch.testing.assert_close(v.grad, torch.tensor([-2.0, -1.0]))
    assert target.grad is None


def ref_clipped_value_loss(v: float, v_old: float, g: float, eps: float) -> float:
    """PPO2 (baselines): 0.5 max((V - G)^2, (V_old + clip(V - V_old, -ε, ε) - G)^2)."""
    v_clipped = v_old + min(max(v - v_old, -eps), eps)
    return 0.5 * max((v - g) ** 2, (v_clipped - g) ** 2)


def test_clipped_value_loss_matches_reference():
    # v - v_old crosses ±ε, targets lie on both sides of v and of v_old.
    cases = [
        (v, 1.0, g) for v in [0.5, 0.79, 0.9, 1.0, 1.1, 1.21, 1.6] for g in [-1.0, 0.95, 1.05, 3.0]
    ]
    v = torch.tensor([c[0] for c in cases], dtype=torch.float64, requires_grad=True)
    v_old = torch.tensor([c[1] for c in cases], dtype=torch.float64, requires_grad=True)
    target = torch.tensor([c[2] for c in cases], dtype=torch.float64, requires_grad=True)
    got = clipped_value_loss(v, v_old, target, EPS)
    expected = torch.tensor([ref_clipped_value_loss(*c, EPS) for c in cases], dtype=torch.float64)
    torch.testing.assert_close(got, expected)
    got.sum().backward()
    assert v_old.grad is None and target.grad is None
    grad = v.grad
    assert grad is not None
    n_flat = 0
    for i, (vi, vo, g) in enumerate(cases):
        v_clipped = vo + min(max(vi - vo, -EPS), EPS)
        if abs(vi - vo) > EPS and (v_clipped - g) ** 2 > (vi - g) ** 2:
            n_flat += 1  # the clipped branch wins and is constant in v
            assert grad[i].item() == 0.0, (vi, g)
        else:
            assert grad[i].item() == pytest.approx(vi - g, rel=1e-9), (vi, g)
    assert n_flat > 0


def test_clipped_value_loss_hand_case():
    # ε = 0.2, v_old = 1, v = 1.5: clipped value = 1.2.
    #   G = 0: max(1.5^2, 1.2^2) = 2.25 -> 1.125;  G = 3: max(1.5^2, 1.8^2) = 3.24 -> 1.62.
    v = torch.tensor([1.5, 1.5])
    got = clipped_value_loss(v, torch.tensor([1.0, 1.0]), torch.tensor([0.0, 3.0]), 0.2)
    torch.testing.assert_close(got, torch.tensor([1.125, 1.62]))


@pytest.mark.parametrize("delta", [0.5, 1.0, 2.0])
def test_huber_matches_reference_and_torch(delta):
    x = torch.linspace(-4.0, 4.0, 81, dtype=torch.float64, requires_grad=True)
    got = huber_loss(x, delta)
    expected = [
        0.5 * a * a if abs(a) <= delta else delta * (abs(a) - 0.5 * delta) for a in x.tolist()
    ]
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64))
    zeros = torch.zeros_like(x)
    torch.testing.assert_close(
        got, torch.nn.functional.huber_loss(x, zeros, reduction="none", delta=delta)
    )
    got.sum().backward()
    torch.testing.assert_close(x.grad, x.detach().clamp(-delta, delta))


def test_huber_hand_case():
    # δ = 1: x = 0.5 -> 0.5*0.25 = 0.125;  x = -2 -> 1*(2 - 0.5) = 1.5.
    torch.testing.assert_close(huber_loss(torch.tensor([0.5, -2.0])), torch.tensor([0.125, 1.5]))


def test_shape_mismatch_raises():
    with pytest.raises(ValueError, match=r"advantages has shape \(3,\)"):
        clipped_surrogate_loss(torch.zeros(4), torch.zeros(3), 0.2)
    with pytest.raises(ValueError, match="target"):
        value_loss(torch.zeros(4, 2), torch.zeros(4))
    with pytest.raises(ValueError, match="v_old"):
        clipped_value_loss(torch.zeros(4), torch.zeros(4, 1), torch.zeros(4), 0.2)
    with pytest.raises(ValueError, match="epsilon"):
        clipped_surrogate_loss(torch.zeros(4), torch.zeros(4), -0.1)
    with pytest.raises(ValueError, match="delta"):
        huber_loss(torch.zeros(4), 0.0)
