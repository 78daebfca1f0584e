"""Tests for shoal.ops.evolution against slow float64 loops written from the ES and ARS papers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from shoal.ops import ars_direction, centered_ranks, es_gradient


def ref_centered_ranks(x):
    """Rank each return among all (ties: the mean of the ranks they span), scaled to
    [-0.5, 0.5]: rank / (N - 1) - 0.5 (Salimans et al. 2017, section 2.2)."""
    flat = np.asarray(x, np.float64).reshape(-1)
    n = len(flat)
    out = np.zeros(n)
    for i in range(n):
        below = sum(1 for y in flat if y < flat[i])
        equal = sum(1 for y in flat if y == flat[i])
        rank = below + (equal - 1) / 2  # mean of ranks below .. below + equal - 1
        out[i] = rank / (n - 1) - 0.5 if n > 1 else 0.0
    return out.reshape(np.shape(x))


def ref_es_gradient(noise, f_pos, f_neg, sigma):
    """Algorithm 2 of Salimans et al. 2017 with mirrored pairs:
    g = 1 / (2 n σ) Σ_i (F⁺_i - F⁻_i) ε_i."""
    noise = np.asarray(noise, np.float64)
    n, p = noise.shape
    g = np.zeros(p)
    for i in range(n):
        for j in range(p):
            g[j] += (float(f_pos[i]) - float(f_neg[i])) * noise[i, j]
    return g / (2 * n * sigma)


def ref_ars(noise, r_pos, r_neg, b):
    """Mania et al. 2018, Algorithm 2 (V1-t / V2-t), steps 6 and 7."""
    noise = np.asarray(noise, np.float64)
    r_pos, r_neg = np.asarray(r_pos, np.float64), np.asarray(r_neg, np.float64)
    n = len(r_pos)
    order = sorted(range(n), key=lambda k: -max(r_pos[k], r_neg[k]))[:b]
    kept = [r_pos[k] for k in order] + [r_neg[k] for k in order]
    mean = sum(kept) / len(kept)
    sigma_r = (sum((r - mean) ** 2 for r in kept) / len(kept)) ** 0.5
    step = np.zeros(noise.shape[1])
    for k in order:
        step += (r_pos[k] - r_neg[k]) * noise[k]
    return step / (b * (sigma_r + 1e-8)), sigma_r, order


@pytest.mark.parametrize("n", [1, 2, 5, 17])
@pytest.mark.parametrize("ties", [False, True])
def test_centered_ranks_match_reference(n, ties):
    g = torch.Generator().manual_seed(n)
    x = torch.randn(n, generator=g, dtype=torch.float64)
    if ties:
        x = torch.round(x * 2)  # few distinct values
    got = centered_ranks(x)
    np.testing.assert_allclose(got.numpy(), ref_centered_ranks(x.numpy()), atol=1e-12)


def test_centered_ranks_hand_case_and_properties():
    # Returns 10, 30, 20, 30: ranks 0, 2.5, 1, 2.5 over N - 1 = 3, minus 0.5.
    got = centered_ranks(torch.tensor([10.0, 30.0, 20.0, 30.0]))
    torch.testing.assert_close(got, torch.tensor([-0.5, 1 / 3, -1 / 6, 1 / 3]))
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))
    ranks = centered_ranks(x)
    assert ranks.shape == x.shape and abs(float(ranks.sum())) < 1e-5
    assert float(ranks.min()) == -0.5 and float(ranks.max()) == 0.5
    # Any increasing transformation of the returns gives the same ranks.
    torch.testing.assert_close(centered_ranks(torch.exp(3 * x) + 7), ranks)
    # Equal returns give no signal.
    assert torch.all(centered_ranks(torch.full((6,), 500.0)) == 0)
    assert centered_ranks(torch.tensor([3.0])).item() == 0.0


@pytest.mark.parametrize(("n", "p"), [(1, 1), (3, 5), (8, 13)])
def test_es_gradient_matches_reference(n, p):
    g = torch.Generator().manual_seed(n * p)
    noise = torch.randn(n, p, generator=g, dtype=torch.float64)
    f_pos, f_neg = torch.randn(n, generator=g), torch.randn(n, generator=g)
    got = es_gradient(noise, f_pos, f_neg, sigma=0.05)
    np.testing.assert_allclose(got.numpy(), ref_es_gradient(noise, f_pos, f_neg, 0.05), rtol=1e-6)


def test_es_gradient_recovers_a_linear_objectives_gradient():
    # F(θ) = w · θ: F⁺ - F⁻ = 2σ w·ε, so E[g] = E[(w·ε) ε] = w; many pairs come close.
    g = torch.Generator().manual_seed(0)
    w = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    theta, sigma = torch.tensor([0.3, 0.1, -0.2], dtype=torch.float64), 0.1
    eps = torch.randn(20_000, 3, generator=g, dtype=torch.float64)
    f_pos, f_neg = (theta + sigma * eps) @ w, (theta - sigma * eps) @ w
    torch.testing.assert_close(es_gradient(eps, f_pos, f_neg, sigma), w, atol=0.05, rtol=0)


def test_es_gradient_checks_shapes():
    with pytest.raises(ValueError, match="fitness_neg must have shape"):
        es_gradient(torch.zeros(3, 2), torch.zeros(3), torch.zeros(2), 0.1)
    with pytest.raises(ValueError, match="sigma must be > 0"):
        es_gradient(torch.zeros(3, 2), torch.zeros(3), torch.zeros(3), 0.0)


@pytest.mark.parametrize(("n", "b"), [(1, 1), (6, 2), (6, 6), (16, 5)])
def test_ars_direction_matches_reference(n, b):
    g = torch.Generator().manual_seed(n + b)
    noise = torch.randn(n, 7, generator=g, dtype=torch.float64)
    r_pos = torch.randn(n, generator=g, dtype=torch.float64) * 10
    r_neg = torch.randn(n, generator=g, dtype=torch.float64) * 10
    got = ars_direction(noise, r_pos, r_neg, b)
    step, sigma_r, order = ref_ars(noise, r_pos, r_neg, b)
    np.testing.assert_allclose(got.direction.numpy(), step, rtol=1e-9)
    assert float(got.reward_std) == pytest.approx(sigma_r)
    assert got.top.tolist() == order


def test_ars_keeps_the_best_directions_by_their_better_side():
    # max(r⁺, r⁻) = 1, 9, 5: b = 2 keeps directions 1 and 2; their returns are
    # (9, 0) and (1, 5), σ_R = std(9, 1, 0, 5) = sqrt(12.6875).
    noise = torch.eye(3, dtype=torch.float64)
    got = ars_direction(
        noise, torch.tensor([1.0, 9.0, 1.0]), torch.tensor([0.0, 0.0, 5.0]), top_b=2
    )
    assert got.top.tolist() == [1, 2]
    sigma_r = 12.6875**0.5
    expected = torch.tensor([0.0, 9.0, -4.0], dtype=torch.float64) / (2 * (sigma_r + 1e-8))
    torch.testing.assert_close(got.direction, expected)
    with pytest.raises(ValueError, match="top_b"):
        ars_direction(noise, torch.zeros(3), torch.zeros(3), top_b=4)
