"""Tests for shoal.ops.max_entropy: SAC's policy and temperature losses (Haarnoja et al. 2018,
arXiv:1812.05905, sections 4.2 and 5), against float64 loops of their definitions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from shoal.ops import soft_policy_loss, temperature_loss


def test_soft_policy_loss_matches_its_definition_and_gradients():
    g = torch.Generator().manual_seed(0)
    log_pi = torch.randn(50, generator=g, dtype=torch.float64, requires_grad=True)
    q = torch.randn(50, generator=g, dtype=torch.float64, requires_grad=True)
    alpha = torch.tensor(0.2, dtype=torch.float64, requires_grad=True)
    loss = soft_policy_loss(log_pi, q, alpha)
    expected = [0.2 * lp - qv for lp, qv in zip(log_pi.tolist(), q.tolist(), strict=True)]
    np.testing.assert_allclose(loss.detach().numpy(), expected, rtol=1e-12)
    loss.sum().backward()
    # d/d log π = α, d/dQ = -1; α is a constant of the policy loss.
    torch.testing.assert_close(log_pi.grad, torch.full_like(log_pi, 0.2))
    torch.testing.assert_close(q.grad, -torch.ones_like(q))
    assert alpha.grad is None
    # Hand case: α = 0.5, log π = -1, Q = 3: -0.5 - 3 = -3.5.
    assert soft_policy_loss(torch.tensor([-1.0]), torch.tensor([3.0]), 0.5).item() == -3.5


def test_temperature_loss_matches_its_definition():
    log_pi = torch.tensor([-2.0, 0.5, 1.0], dtype=torch.float64, requires_grad=True)
    log_alpha = torch.tensor(np.log(0.3), dtype=torch.float64, requires_grad=True)
    loss = temperature_loss(log_alpha, log_pi, target_entropy=-1.0)
    expected = [-np.log(0.3) * (lp - 1.0) for lp in (-2.0, 0.5, 1.0)]
    np.testing.assert_allclose(loss.detach().numpy(), expected, rtol=1e-12)
    loss.mean().backward()
    # d/d log α of the mean = -mean(log π + H̄) = -(-0.5/3 - 1) = 7/6; none reaches log π.
    assert log_alpha.grad.item() == pytest.approx(7 / 6)
    assert log_pi.grad is None


@pytest.mark.parametrize(("log_pi_value", "alpha_grows"), [(2.0, True), (-4.0, False)])
def test_temperature_moves_towards_the_entropy_target(log_pi_value, alpha_grows):
    # Target entropy H̄ = -1. log π = 2 (entropy -2 < H̄): α must grow; log π = -4: shrink.
    log_alpha = torch.zeros((), requires_grad=True)
    temperature_loss(log_alpha, torch.full((8,), log_pi_value), -1.0).mean().backward()
    stepped = log_alpha.detach() - 0.1 * log_alpha.grad
    assert (stepped > 0).item() is alpha_grows


def test_checks():
    with pytest.raises(ValueError, match="q_pi has shape"):
        soft_policy_loss(torch.zeros(3), torch.zeros(4), 0.1)
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        soft_policy_loss(torch.zeros(3), torch.zeros(3), -1.0)
    with pytest.raises(ValueError, match="log_alpha must be a scalar"):
        temperature_loss(torch.zeros(2), torch.zeros(3), -1.0)
