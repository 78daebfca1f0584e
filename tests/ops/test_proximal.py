"""Tests for shoal.ops.proximal (APPO's target-clipped ratio and adaptive KL weight) against
per-element references written from IMPACT (Luo et al. 2020) and RLlib's KL rule."""

from __future__ import annotations

import math

import pytest
import torch

from shoal.ops import adaptive_kl_coefficient, clipped_surrogate_loss, target_clipped_log_ratio

# Probabilities chosen so that μ/π_target falls below, at and above the cap of 2, on both
# sides of 1, and where π_target is tiny (the weight would overflow outside log space).
PI = [0.5, 0.3, 0.9, 0.2, 0.6, 0.4]
MU = [0.5, 0.6, 0.3, 0.8, 0.59, 0.7]
TARGET = [0.5, 0.3, 0.6, 1e-30, 0.3, 0.35]


def ref_log_ratio(pi: float, mu: float, target: float, cap: float) -> float:
    """IMPACT's ratio as RLlib computes it: (π/μ) · clip(μ/π_target, 0, cap), in float64."""
    weight = min(mu / target, cap)
    return math.log(pi / mu * weight)


def _tensors(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    def t(values: list[float]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.float64).log().to(dtype).view(2, 3)

    return t(PI), t(MU), t(TARGET)


@pytest.mark.parametrize("cap", [2.0, 1.5, 1e6])
def test_target_clipped_log_ratio_matches_the_reference(cap):
    log_pi, log_mu, log_target = _tensors(torch.float64)
    got = target_clipped_log_ratio(log_pi, log_mu, log_target, max_weight=cap)
    expected = [ref_log_ratio(p, m, t, cap) for p, m, t in zip(PI, MU, TARGET, strict=True)]
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64).view(2, 3))
    # The cases crossed: under the cap the ratio is π/π_target, over it (μ/π_target >= cap) it
    # keeps the behaviour ratio times the cap.
    weights = [m / t for m, t in zip(MU, TARGET, strict=True)]
    assert any(w < cap for w in weights) and any(w > cap for w in weights)


def test_float32_stays_finite_where_the_target_probability_vanishes():
    log_pi, log_mu, log_target = _tensors(torch.float32)
    log_target[1, 0] = -1e4  # π_target ≈ 0: μ/π_target overflows unless clipped in log space
    got = target_clipped_log_ratio(log_pi, log_mu, log_target)
    assert torch.isfinite(got).all()
    assert got[1, 0] == pytest.approx(math.log(PI[3] / MU[3] * 2.0), rel=1e-5)


def test_without_a_cap_the_ratio_is_pi_over_the_target():
    log_pi, log_mu, log_target = _tensors(torch.float64)
    got = target_clipped_log_ratio(log_pi, log_mu, log_target, max_weight=math.inf)
    torch.testing.assert_close(got, log_pi - log_target)


def test_gradient_reaches_only_the_learners_log_probability():
    log_pi, log_mu, log_target = (x.clone().requires_grad_(True) for x in _tensors(torch.float64))
    adv = torch.tensor([[1.0, -1.0, 0.5], [2.0, -0.3, 0.7]], dtype=torch.float64)
    loss = clipped_surrogate_loss(target_clipped_log_ratio(log_pi, log_mu, log_target), adv, 0.2)
    loss.sum().backward()
    assert log_pi.grad is not None and log_pi.grad.abs().sum() > 0
    assert log_mu.grad is None and log_target.grad is None


def test_shape_mismatch_and_bad_cap_are_refused():
    log_pi, log_mu, log_target = _tensors(torch.float64)
    with pytest.raises(ValueError, match="log_target_a"):
        target_clipped_log_ratio(log_pi, log_mu, log_target[:1])
    with pytest.raises(ValueError, match="max_weight"):
        target_clipped_log_ratio(log_pi, log_mu, log_target, max_weight=0.0)


def ref_kl_coefficient(beta: float, kl: float, target: float) -> float:
    """RLlib's APPO rule: x1.5 above 2 d_targ, x0.5 below d_targ / 2."""
    if kl > 2 * target:
        return beta * 1.5
    if kl < target / 2:
        return beta * 0.5
    return beta


@pytest.mark.parametrize("kl", [0.0, 0.004, 0.005, 0.0051, 0.01, 0.02, 0.0201, 1.0])
def test_adaptive_kl_coefficient_matches_the_rule_at_and_around_both_thresholds(kl):
    assert adaptive_kl_coefficient(0.8, kl, 0.01) == pytest.approx(
        ref_kl_coefficient(0.8, kl, 0.01)
    )


def test_adaptive_kl_coefficient_converges_towards_a_weight_that_holds_the_target():
    # A toy response KL = 0.1 / β: the weight rises until the KL falls inside [d/2, 2d].
    beta = 0.2
    for _ in range(50):
        beta = adaptive_kl_coefficient(beta, 0.1 / beta, 0.01)
    assert 0.005 <= 0.1 / beta <= 0.02


def test_adaptive_kl_coefficient_refuses_bad_inputs():
    with pytest.raises(ValueError, match="target"):
        adaptive_kl_coefficient(1.0, 0.1, 0.0)
    with pytest.raises(ValueError, match="kl"):
        adaptive_kl_coefficient(1.0, -0.1, 0.01)
    with pytest.raises(ValueError, match="factor_up"):
        adaptive_kl_coefficient(1.0, 0.1, 0.01, factor_up=0.9)
