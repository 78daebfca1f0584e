"""Tests for shoal.ops.double_q against float64 loops written from the papers' targets: TD3
(Fujimoto et al. 2018, sections 4.2 and 5.3) and SAC (Haarnoja et al. 2018, arXiv:1812.05905)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from shoal.ops import clipped_double_q_target, smoothed_target_action, soft_clipped_double_q_target

GAMMA = 0.99


def transitions(n: int, seed: int):
    """A batch where q1 < q2 for some items and q1 > q2 for others, and some terminate."""
    g = torch.Generator().manual_seed(seed)
    r = torch.randn(n, generator=g, dtype=torch.float64)
    q1 = 3 * torch.randn(n, generator=g, dtype=torch.float64)
    q2 = 3 * torch.randn(n, generator=g, dtype=torch.float64)
    log_pi = torch.randn(n, generator=g, dtype=torch.float64)
    terminated = torch.rand(n, generator=g) < 0.2
    steps = torch.randint(1, 4, (n,), generator=g)  # m-step transitions, m in 1..3
    discount = GAMMA**steps * (~terminated)
    return r, discount.to(torch.float64), q1, q2, log_pi


def reference_soft(r, discount, q1, q2, log_pi, alpha):
    """y_b = r_b + discount_b (min(q1_b, q2_b) - α log π_b), one transition at a time."""
    out = []
    for b in range(len(r)):
        smaller = q1[b] if q1[b] < q2[b] else q2[b]
        out.append(float(r[b]) + float(discount[b]) * (float(smaller) - alpha * float(log_pi[b])))
    return np.array(out)


@pytest.mark.parametrize("alpha", [0.0, 0.05, 1.0])
def test_soft_target_matches_the_reference(alpha):
    r, discount, q1, q2, log_pi = transitions(200, 0)
    assert (q1 < q2).any() and (q1 > q2).any() and (discount == 0).any()
    got = soft_clipped_double_q_target(r, discount, q1, q2, log_pi, alpha)
    expected = reference_soft(r.numpy(), discount.numpy(), q1.numpy(), q2.numpy(), log_pi, alpha)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)
    as_tensor = soft_clipped_double_q_target(r, discount, q1, q2, log_pi, torch.tensor(alpha))
    torch.testing.assert_close(as_tensor, got)


def test_deterministic_target_is_the_soft_one_without_entropy():
    r, discount, q1, q2, log_pi = transitions(100, 1)
    got = clipped_double_q_target(r, discount, q1, q2)
    expected = reference_soft(r.numpy(), discount.numpy(), q1.numpy(), q2.numpy(), log_pi, 0.0)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_hand_derived_cases():
    # y = 1 + 0.99 (min(3, 5) - 0.2 * -0.5) = 1 + 0.99 * 3.1 = 4.069; terminated: y = r = 2.
    def t(*xs):
        return torch.tensor(xs, dtype=torch.float64)

    got = soft_clipped_double_q_target(
        t(1.0, 2.0), t(0.99, 0.0), t(3.0, 9.0), t(5.0, 1.0), t(-0.5, 7.0), 0.2
    )
    torch.testing.assert_close(got, t(4.069, 2.0))
    # TD3: y = 1 + 0.99 min(3, 5) = 3.97.
    assert clipped_double_q_target(t(1.0), t(0.99), t(5.0), t(3.0)).item() == pytest.approx(3.97)


def test_no_gradient_reaches_the_target():
    r, discount, q1, q2, log_pi = (x.clone().requires_grad_() for x in transitions(8, 2))
    alpha = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    y = soft_clipped_double_q_target(r, discount, q1, q2, log_pi, alpha)
    assert not y.requires_grad
    assert not clipped_double_q_target(r, discount, q1, q2).requires_grad


def test_target_checks():
    x = torch.zeros(4)
    with pytest.raises(ValueError, match="q2_t has shape"):
        soft_clipped_double_q_target(x, x, x, torch.zeros(5), x, 0.1)
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        soft_clipped_double_q_target(x, x, x, x, x, -0.1)
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        soft_clipped_double_q_target(x, x, x, x, x, torch.tensor(-0.1))
    with pytest.raises(ValueError, match="alpha must be a scalar"):
        soft_clipped_double_q_target(x, x, x, x, x, torch.ones(2))


# ---- target policy smoothing ------------------------------------------------------------------


def reference_smoothing(a, noise, c, low, high):
    """ã = clip(a + clip(ε, -c, c), low, high), one entry at a time."""
    out = np.empty_like(a)
    for index in np.ndindex(a.shape):
        eps = min(max(noise[index], -c), c)
        out[index] = min(max(a[index] + eps, low), high)
    return out


def test_smoothing_matches_the_reference_across_both_clips():
    g = torch.Generator().manual_seed(3)
    a = torch.empty(500, 3, dtype=torch.float64).uniform_(-1, 1, generator=g)
    noise = 0.6 * torch.randn(500, 3, generator=g, dtype=torch.float64)
    c = 0.5
    # Inputs cross every threshold: noise past ±c, and sums past both bounds.
    assert (noise > c).any() and (noise < -c).any()
    assert (a + noise.clamp(-c, c) > 1).any() and (a + noise.clamp(-c, c) < -1).any()
    got = smoothed_target_action(a, noise, c)
    np.testing.assert_array_equal(
        got.numpy(), reference_smoothing(a.numpy(), noise.numpy(), c, -1, 1)
    )
    wide = smoothed_target_action(a, noise, c, low=-2.0, high=2.0)
    np.testing.assert_array_equal(
        wide.numpy(), reference_smoothing(a.numpy(), noise.numpy(), c, -2, 2)
    )


def test_smoothing_hand_cases_and_checks():
    a = torch.tensor([0.9, -0.2, 0.1])
    noise = torch.tensor([0.7, -0.3, -0.8])
    # 0.9 + 0.5 -> clipped to 1; -0.2 - 0.3 = -0.5 untouched; 0.1 - 0.5 = -0.4.
    torch.testing.assert_close(
        smoothed_target_action(a, noise, 0.5), torch.tensor([1.0, -0.5, -0.4])
    )
    assert torch.equal(smoothed_target_action(a, noise, 0.0), a)  # c = 0: no smoothing
    with pytest.raises(ValueError, match="noise has shape"):
        smoothed_target_action(a, torch.zeros(2), 0.5)
    with pytest.raises(ValueError, match="noise_clip"):
        smoothed_target_action(a, noise, -0.1)
    with pytest.raises(ValueError, match="low must be < high"):
        smoothed_target_action(a, noise, 0.5, low=1.0, high=1.0)
