"""Tests for shoal.ops.actor_critic against a slow float64 loop written from the A3C paper."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from shoal.ops import generalized_advantage_estimation, n_step_advantage

GAMMA = 0.9


def random_unroll(t: int, b: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    terminated = torch.rand(t, b, generator=g) < 0.15
    truncated = (torch.rand(t, b, generator=g) < 0.15) & ~terminated
    r_t = torch.randn(t, b, generator=g, dtype=torch.float64)
    v_tm1 = torch.randn(t, b, generator=g, dtype=torch.float64)
    v_t = torch.randn(t, b, generator=g, dtype=torch.float64)
    discount_t = GAMMA * (~terminated).to(torch.float64)
    return r_t, discount_t, v_tm1, v_t, terminated | truncated


def ref_n_step(r, discount, v_tm1, v_t, end):
    """Mnih et al. 2016, Algorithm S3: for i from the unroll's last step back, R <- r_i + γ R,
    starting from R = 0 at a terminal state and V(s_{t+1}) otherwise (here: at the unroll's end
    and at every episode end, where the successor's value is given)."""
    r, discount, v_tm1, v_t, end = (
        np.asarray(x, np.float64) for x in (r, discount, v_tm1, v_t, end)
    )
    horizon, batch = r.shape
    returns = np.zeros((horizon, batch))
    for b in range(batch):
        for t in range(horizon):
            total, weight, k = 0.0, 1.0, t
            while True:
                total += weight * r[k, b]
                weight *= discount[k, b]
                if end[k, b] or k == horizon - 1:
                    total += weight * v_t[k, b]
                    break
                k += 1
            returns[t, b] = total
    return returns - v_tm1, returns


@pytest.mark.parametrize(("t", "b"), [(1, 1), (5, 3), (20, 4)])
def test_n_step_advantage_matches_reference(t, b):
    r, d, v_tm1, v_t, end = random_unroll(t, b, seed=t + b)
    got = n_step_advantage(r, d, v_tm1, v_t, end)
    advantages, returns = ref_n_step(r, d, v_tm1, v_t, end)
    np.testing.assert_allclose(got.returns.numpy(), returns, atol=1e-12)
    np.testing.assert_allclose(got.advantages.numpy(), advantages, atol=1e-12)


def test_n_step_advantage_hand_case():
    # r = [1, 2, 3], γ = 0.5, no ends, V(s_3) = 8: R_2 = 3 + 4 = 7, R_1 = 2 + 3.5 = 5.5,
    # R_0 = 1 + 2.75 = 3.75. A termination at t = 1 cuts R_1 to 2 and R_0 to 1 + 1 = 2.
    r = torch.tensor([[1.0], [2.0], [3.0]])
    d = torch.full((3, 1), 0.5)
    v_t = torch.tensor([[0.0], [0.0], [8.0]])
    got = n_step_advantage(r, d, torch.ones(3, 1), v_t)
    torch.testing.assert_close(got.returns, torch.tensor([[3.75], [5.5], [7.0]]))
    torch.testing.assert_close(got.advantages, torch.tensor([[2.75], [4.5], [6.0]]))
    d[1] = 0.0
    got = n_step_advantage(r, d, torch.ones(3, 1), v_t, torch.tensor([[0], [1], [0]]))
    torch.testing.assert_close(got.returns, torch.tensor([[2.0], [2.0], [7.0]]))


def test_n_step_advantage_is_gae_with_lambda_one_and_carries_no_gradient():
    r, d, v_tm1, v_t, end = random_unroll(12, 3, seed=5)
    # GAE telescopes only with consistent values: inside an episode v_tm1[t + 1] is v_t[t].
    v_tm1 = torch.cat([v_tm1[:1], torch.where(end[:-1], v_tm1[1:], v_t[:-1])])
    v_tm1.requires_grad_(True)
    got = n_step_advantage(r, d, v_tm1, v_t, end)
    gae = generalized_advantage_estimation(r, d, v_tm1.detach(), v_t, 1.0, end)
    torch.testing.assert_close(got.advantages, gae)
    assert not got.advantages.requires_grad and not got.returns.requires_grad


def test_n_step_advantage_checks_shapes():
    with pytest.raises(ValueError, match="v_t has shape"):
        n_step_advantage(torch.zeros(3, 2), torch.zeros(3, 2), torch.zeros(3, 2), torch.zeros(3))
