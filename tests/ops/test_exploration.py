"""Tests for shoal.ops.exploration against a float64 loop written from the Ornstein-Uhlenbeck
step of DDPG (Lillicrap et al. 2016, section 3):
`x_t = x_{t-1} + θ (μ - x_{t-1}) dt + σ √dt ε_t`."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from shoal.ops import ornstein_uhlenbeck_step


def reference(x0, eps, theta, sigma, dt, mu):
    """The process over `eps [T, B, D]` from `x0 [B, D]`, one entry and one step at a time."""
    steps, rows, dims = eps.shape
    out = np.zeros((steps, rows, dims))
    for b in range(rows):
        for d in range(dims):
            x = float(x0[b, d])
            for t in range(steps):
                x = x + theta * (mu - x) * dt + sigma * math.sqrt(dt) * float(eps[t, b, d])
                out[t, b, d] = x
    return out


@pytest.mark.parametrize(
    ("theta", "sigma", "dt", "mu"),
    [(0.15, 0.2, 1.0, 0.0), (0.15, 0.1, 1e-2, 0.0), (0.6, 0.5, 0.3, 0.25), (0.0, 1.0, 1.0, 0.0)],
)
def test_matches_the_reference_over_many_steps(theta, sigma, dt, mu):
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(3, 2, generator=g, dtype=torch.float64)
    eps = torch.randn(50, 3, 2, generator=g, dtype=torch.float64)
    x, got = x0, []
    for t in range(len(eps)):
        x = ornstein_uhlenbeck_step(x, eps[t], theta, sigma, dt, mu)
        got.append(x)
    expected = reference(x0.numpy(), eps.numpy(), theta, sigma, dt, mu)
    np.testing.assert_allclose(torch.stack(got).numpy(), expected, rtol=1e-12, atol=1e-12)


def test_hand_derived_step():
    # 0.5 + 0.15 (0 - 0.5) 0.01 + 0.2 · 0.1 · 1.0 = 0.5 - 0.00075 + 0.02 = 0.51925
    got = ornstein_uhlenbeck_step(
        torch.tensor([0.5], dtype=torch.float64),
        torch.tensor([1.0], dtype=torch.float64),
        theta=0.15,
        sigma=0.2,
        dt=0.01,
    )
    np.testing.assert_allclose(got.numpy(), [0.51925], rtol=1e-14)


def test_properties():
    g = torch.Generator().manual_seed(1)
    eps = torch.randn(2000, 4000, generator=g, dtype=torch.float64)
    # θ = 0, dt = 1: a random walk, the running sum of σ ε.
    x = torch.zeros(4000, dtype=torch.float64)
    for t in range(20):
        x = ornstein_uhlenbeck_step(x, eps[t], 0.0, 0.3)
    torch.testing.assert_close(x, 0.3 * eps[:20].sum(0))
    # Without noise the process decays to μ geometrically: x_t - μ = (1 - θ dt)^t (x_0 - μ).
    x = torch.full((3,), 2.0, dtype=torch.float64)
    for _ in range(10):
        x = ornstein_uhlenbeck_step(x, torch.zeros(3, dtype=torch.float64), 0.5, 0.0, 0.2, 1.0)
    torch.testing.assert_close(x, torch.full((3,), 1.0 + 0.9**10, dtype=torch.float64))
    # From 0 its variance tends to the AR(1) stationary σ² dt / (1 - (1 - θ dt)²) ≈ σ² / (2θ).
    theta, sigma = 0.15, 0.2
    x = torch.zeros(4000, dtype=torch.float64)
    for t in range(200):
        x = ornstein_uhlenbeck_step(x, eps[t], theta, sigma)
    stationary = sigma**2 / (1 - (1 - theta) ** 2)
    assert abs(float(x.var()) / stationary - 1) < 0.06
    # Batched (float32) equals per row.
    x0 = torch.randn(5, 3, generator=g)
    e = torch.randn(5, 3, generator=g)
    rows = [ornstein_uhlenbeck_step(x0[i], e[i], 0.15, 0.2, 0.01) for i in range(5)]
    torch.testing.assert_close(ornstein_uhlenbeck_step(x0, e, 0.15, 0.2, 0.01), torch.stack(rows))


def test_bad_inputs_name_the_argument():
    x = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="epsilon_t"):
        ornstein_uhlenbeck_step(x, torch.zeros(3, 2), 0.15, 0.2)
    with pytest.raises(ValueError, match="theta"):
        ornstein_uhlenbeck_step(x, x, -0.1, 0.2)
    with pytest.raises(ValueError, match="sigma"):
        ornstein_uhlenbeck_step(x, x, 0.15, float("nan"))
    with pytest.raises(ValueError, match="dt"):
        ornstein_uhlenbeck_step(x, x, 0.15, 0.2, dt=0.0)
    with pytest.raises(ValueError, match="x_tm1"):
        ornstein_uhlenbeck_step(torch.zeros(2, dtype=torch.int64), torch.zeros(2), 0.15, 0.2)
