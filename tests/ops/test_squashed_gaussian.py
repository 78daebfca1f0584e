"""Tests for shoal.ops.squashed_gaussian against a float64 reference written from SAC's appendix C
(Haarnoja et al. 2018, arXiv:1812.05905): log π(a|s) = log μ(u|s) - Σ_i log(1 - tanh²(u_i))."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.distributions import Normal, TransformedDistribution
from torch.distributions.transforms import TanhTransform

from shoal.ops import (
    squashed_gaussian_log_prob,
    squashed_gaussian_sample,
    tanh_log_det_jacobian,
)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def reference_log_prob(mean, log_std, u) -> np.ndarray:
    """One element at a time, in float64: the Gaussian density of u, then the change of
    variables a = tanh(u) with its Jacobian 1 - tanh²(u) per dimension."""
    mean, log_std, u = (np.asarray(x, np.float64) for x in (mean, log_std, u))
    log_std = np.broadcast_to(log_std, mean.shape)
    flat_mean, flat_std = mean.reshape(-1, mean.shape[-1]), log_std.reshape(-1, mean.shape[-1])
    flat_u = u.reshape(-1, mean.shape[-1])
    out = []
    for m_row, s_row, u_row in zip(flat_mean, flat_std, flat_u, strict=True):
        total = 0.0
        for m, s, x in zip(m_row, s_row, u_row, strict=True):
            sigma = math.exp(s)
            total += (
                -((x - m) ** 2) / (2 * sigma**2) - math.log(sigma) - 0.5 * math.log(2 * math.pi)
            )
            total -= math.log(1.0 - math.tanh(x) ** 2)
        out.append(total)
    return np.array(out).reshape(mean.shape[:-1])


@pytest.mark.parametrize("batch", [(), (7,), (3, 5)])
@pytest.mark.parametrize("state_dependent_std", [True, False])
def test_log_prob_matches_the_papers_equation(batch, state_dependent_std):
    d = 3
    mean = torch.randn(*batch, d, generator=gen(0), dtype=torch.float64)
    std_shape = (*batch, d) if state_dependent_std else (d,)
    log_std = torch.empty(std_shape, dtype=torch.float64).uniform_(-2, 1, generator=gen(1))
    # Pre-squash values out to ±6, where 1 - tanh²(u) is already 2.5e-5.
    u = torch.empty(*batch, d, dtype=torch.float64).uniform_(-6, 6, generator=gen(2))
    got = squashed_gaussian_log_prob(mean, log_std, u)
    assert got.shape == batch and got.dtype == torch.float64
    expected = reference_log_prob(mean.numpy(), log_std.numpy(), u.numpy())
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-10)


def test_hand_derived_cases():
    # u = 0, μ = 0, σ = 1: log N(0) = -0.5 log 2π = -0.9189385; tanh'(0) = 1 adds nothing.
    zero = torch.zeros(1, dtype=torch.float64)
    got = squashed_gaussian_log_prob(zero, zero, zero)
    assert got.item() == pytest.approx(-0.9189385332046727, rel=1e-12)
    # u = atanh(0.5) = 0.5493061: log N(u) = -0.9189385 - 0.5 u² = -0.9189385 - 0.1508686
    # = -1.0698071; 1 - tanh²(u) = 0.75, so log π = -1.0698071 - log 0.75 = -0.7821250.
    u = torch.tensor([math.atanh(0.5)], dtype=torch.float64)
    assert tanh_log_det_jacobian(u).item() == pytest.approx(math.log(0.75), rel=1e-12)
    got = squashed_gaussian_log_prob(zero, zero, u)
    assert got.item() == pytest.approx(-0.7821250, abs=1e-7)


def test_matches_torch_transformed_distribution():
    mean = torch.randn(64, 2, generator=gen(3), dtype=torch.float64)
    log_std = torch.empty(64, 2, dtype=torch.float64).uniform_(-1.5, 0.5, generator=gen(4))
    u = mean + log_std.exp() * torch.randn(64, 2, generator=gen(5), dtype=torch.float64)
    reference = TransformedDistribution(Normal(mean, log_std.exp()), [TanhTransform()])
    # In float64 and for |u| of a few units, inverting tanh at the action is still accurate.
    expected = reference.log_prob(torch.tanh(u)).sum(-1)
    torch.testing.assert_close(squashed_gaussian_log_prob(mean, log_std, u), expected)


def test_density_integrates_to_one_over_the_action_interval():
    # D = 1: ∫_{-1}^{1} π(a) da = 1, on a grid in a, evaluated at u = atanh(a). (With σ <= 1
    # the density vanishes at ±1; wider ones pile mass at the bounds that a grid misses.)
    a = torch.linspace(-1, 1, 400_001, dtype=torch.float64)[1:-1]
    u = torch.atanh(a)
    for mu, log_sigma in ((0.0, 0.0), (1.5, -1.0), (-0.7, -0.3)):
        mean = torch.full((len(a), 1), mu, dtype=torch.float64)
        log_std = torch.full((1,), log_sigma, dtype=torch.float64)
        density = squashed_gaussian_log_prob(mean, log_std, u[:, None]).exp()
        assert torch.trapezoid(density, a).item() == pytest.approx(1.0, abs=1e-4)


def test_finite_values_and_gradients_where_the_naive_formula_fails():
    u = torch.tensor([[-100.0], [-25.0], [-9.5], [9.5], [25.0], [100.0]], requires_grad=True)
    # The direct formula breaks down in float32: 1 - tanh²(u) rounds to 0.
    naive = torch.log(1 - torch.tanh(u.detach()) ** 2).squeeze(-1)
    assert torch.isinf(naive).all()
    mean = torch.zeros(6, 1, requires_grad=True)
    log_std = torch.zeros(1, requires_grad=True)
    got = squashed_gaussian_log_prob(mean, log_std, u)
    assert torch.isfinite(got).all()
    # Far out, log(1 - tanh²(u)) = log 4 - 2|u| - 2 log(1 + e^{-2|u|}) -> log 4 - 2|u|.
    x = u.detach().squeeze(-1).double()
    expected = -0.5 * x**2 - 0.5 * math.log(2 * math.pi) - (math.log(4.0) - 2 * x.abs())
    torch.testing.assert_close(got.double(), expected, rtol=1e-6, atol=1e-3)
    got.sum().backward()
    for grad in (u.grad, mean.grad, log_std.grad):
        assert grad is not None and torch.isfinite(grad).all()
    # d/du of -log(1 - tanh²u) is 2 tanh(u) -> ±2; of log N(u; 0, 1) it is -u.
    torch.testing.assert_close(u.grad.squeeze(-1), -x.float() + 2 * torch.sign(x.float()))


def test_sample_is_squashed_reproducible_and_reparameterised():
    mean = torch.randn(500, 3, generator=gen(6), requires_grad=True)
    log_std = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    first = squashed_gaussian_sample(mean, log_std, gen(7))
    again = squashed_gaussian_sample(mean, log_std, gen(7))
    other = squashed_gaussian_sample(mean, log_std, gen(8))
    assert torch.equal(first.action, again.action) and not torch.equal(first.action, other.action)
    assert first.action.shape == (500, 3) and first.log_prob.shape == (500,)
    assert (first.action.abs() <= 1).all()
    torch.testing.assert_close(first.action, torch.tanh(first.pre_tanh))
    torch.testing.assert_close(
        first.log_prob, squashed_gaussian_log_prob(mean, log_std, first.pre_tanh)
    )
    (first.action.sum() + first.log_prob.sum()).backward()
    assert mean.grad is not None and mean.grad.abs().sum() > 0
    assert log_std.grad is not None and log_std.grad.abs().sum() > 0


def test_shape_checks():
    with pytest.raises(ValueError, match="pre_tanh must have shape"):
        tanh_log_det_jacobian(torch.tensor(0.5))
    with pytest.raises(ValueError, match="floating"):
        tanh_log_det_jacobian(torch.zeros(3, dtype=torch.int64))
    with pytest.raises(ValueError, match="pre_tanh has shape"):
        squashed_gaussian_log_prob(torch.zeros(4, 2), torch.zeros(2), torch.zeros(4, 3))
    with pytest.raises(ValueError, match="log_std"):
        squashed_gaussian_sample(torch.zeros(4, 2), torch.zeros(3))
