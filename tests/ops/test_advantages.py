"""Tests for shoal.ops.advantages against slow float64 loops written from the GAE paper."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from shoal.ops import generalized_advantage_estimation, lambda_returns, normalize_advantages

SHAPES = [(1, 1), (2, 3), (7, 4), (20, 5), (33, 2)]
GAMMA = 0.9


def random_episodes(t: int, b: int, seed: int, dtype: torch.dtype = torch.float64):
    """Rollout data with terminations and truncations and consistent values.

    Inside an episode `v_tm1[t+1] == v_t[t]` (both are V(s_{t+1})); after an end, `v_tm1[t+1]` is
    the value of a fresh reset state and `v_t[t]` the value of the final observation.
    """
    g = torch.Generator().manual_seed(seed)
    terminated = torch.rand(t, b, generator=g) < 0.15
    truncated = (torch.rand(t, b, generator=g) < 0.15) & ~terminated
    end = terminated | truncated
    r_t = torch.randn(t, b, generator=g, dtype=dtype)
    v_t = torch.randn(t, b, generator=g, dtype=dtype)
    reset_values = torch.randn(t, b, generator=g, dtype=dtype)
    v_tm1 = torch.empty(t, b, dtype=dtype)
    v_tm1[0] = reset_values[0]
    v_tm1[1:] = torch.where(end[:-1], reset_values[1:], v_t[:-1])
    discount_t = GAMMA * (~terminated).to(dtype)
    return r_t, discount_t, v_tm1, v_t, end


def ref_gae(r, gamma, v_tm1, v_t, lam, end):
    """Schulman et al. 2016, eq. 16, truncated at the first episode end (inclusive):

    Â_t = Σ_{l=0}^{h-1} (Π_{j=0}^{l-1} γ_{t+j} λ) δ_{t+l},  δ_t = r_t + γ_t V(s_{t+1}) - V(s_t).
    """
    r, gamma, v_tm1, v_t, end = (
        np.asarray(x, dtype=np.float64) for x in (r, gamma, v_tm1, v_t, end)
    )
    horizon, batch = r.shape
    out = np.zeros((horizon, batch))
    for b in range(batch):
        for t in range(horizon):
            total, weight = 0.0, 1.0
            for l in range(t, horizon):  # noqa: E741 (the paper's symbol)
                delta = r[l, b] + gamma[l, b] * v_t[l, b] - v_tm1[l, b]
                total += weight * delta
                if end[l, b]:
                    break
                weight *= gamma[l, b] * lam
            out[t, b] = total
    return out


@pytest.mark.parametrize(("t", "b"), SHAPES)
@pytest.mark.parametrize("lam", [0.0, 0.5, 0.95, 1.0])
def test_gae_matches_reference(t, b, lam):
    r, d, v_tm1, v_t, end = random_episodes(t, b, seed=t * 7 + b)
    got = generalized_advantage_estimation(r, d, v_tm1, v_t, lam, end)
    np.testing.assert_allclose(got.numpy(), ref_gae(r, d, v_tm1, v_t, lam, end), atol=1e-6)


def test_gae_hand_case():
    # r = [1, 0], γ = 0.9, V(s_t) = [1, 2], V(s_{t+1}) = [2, 3], λ = 0.5:
    #   δ0 = 1 + 0.9*2 - 1 = 1.8, δ1 = 0 + 0.9*3 - 2 = 0.7;
    #   A1 = 0.7, A0 = 1.8 + 0.9*0.5*0.7 = 2.115.
    # Truncated at t=0: A0 = δ0 = 1.8 (the trace stops, δ0 still bootstraps from V(s_1)).
    r = torch.tensor([[1.0], [0.0]])
    d = torch.full((2, 1), 0.9)
    v_tm1 = torch.tensor([[1.0], [2.0]])
    v_t = torch.tensor([[2.0], [3.0]])
    got = generalized_advantage_estimation(r, d, v_tm1, v_t, 0.5)
    torch.testing.assert_close(got, torch.tensor([[2.115], [0.7]]))
    end = torch.tensor([[1.0], [0.0]])
    got = generalized_advantage_estimation(r, d, v_tm1, v_t, 0.5, end)
    torch.testing.assert_close(got, torch.tensor([[1.8], [0.7]]))


@pytest.mark.parametrize(("t", "b"), SHAPES)
@pytest.mark.parametrize("lam", [0.0, 0.7, 1.0])
def test_gae_plus_values_is_lambda_return(t, b, lam):
    r, d, v_tm1, v_t, end = random_episodes(t, b, seed=t + 100 * b)
    adv = generalized_advantage_estimation(r, d, v_tm1, v_t, lam, end)
    torch.testing.assert_close(adv + v_tm1, lambda_returns(r, d, v_t, lam, end))


def test_gae_lambda_zero_is_td_error():
    r, d, v_tm1, v_t, end = random_episodes(9, 4, seed=1)
    got = generalized_advantage_estimation(r, d, v_tm1, v_t, 0.0, end)
    torch.testing.assert_close(got, r + d * v_t - v_tm1)


def test_gae_tensor_lambda_matches_float():
    r, d, v_tm1, v_t, end = random_episodes(9, 4, seed=2)
    expected = generalized_advantage_estimation(r, d, v_tm1, v_t, 0.8, end)
    got = generalized_advantage_estimation(r, d, v_tm1, v_t, torch.tensor(0.8), end)
    torch.testing.assert_close(got, expected)


def test_gae_episode_end_cuts_the_trace():
    t, k = 8, 3
    r, d, v_tm1, v_t, _ = random_episodes(t, 1, seed=3)
    d = torch.full((t, 1), GAMMA, dtype=torch.float64)  # a truncation: only end_t can cut
    end = torch.zeros(t, 1)
    end[k] = 1.0
    before = generalized_advantage_estimation(r, d, v_tm1, v_t, 0.9, end)
    r2, v_tm1_2 = r.clone(), v_tm1.clone()
    r2[k + 1 :] += 5.0
    v_tm1_2[k + 1 :] -= 3.0
    after = generalized_advantage_estimation(r2, d, v_tm1_2, v_t, 0.9, end)
    torch.testing.assert_close(after[: k + 1], before[: k + 1])
    without_end = generalized_advantage_estimation(r2, d, v_tm1_2, v_t, 0.9)
    assert not torch.allclose(without_end[: k + 1], before[: k + 1])


def test_gae_truncation_bootstraps_termination_does_not():
    t, k = 6, 2
    r, _, v_tm1, v_t, _ = random_episodes(t, 1, seed=4)
    end = torch.zeros(t, 1, dtype=torch.bool)
    end[k] = True
    truncated_d = torch.full((t, 1), GAMMA, dtype=torch.float64)
    terminated_d = truncated_d.clone()
    terminated_d[k] = 0.0
    v_t2 = v_t.clone()
    v_t2[k] += 1.0
    diff = generalized_advantage_estimation(r, truncated_d, v_tm1, v_t2, 0.9, end)
    diff = diff - generalized_advantage_estimation(r, truncated_d, v_tm1, v_t, 0.9, end)
    # The final-observation value enters A_k with weight γ, and A_{t<k} through the trace.
    torch.testing.assert_close(diff[k], torch.tensor([GAMMA], dtype=torch.float64))
    assert (diff[:k].abs() > 1e-3).all()
    torch.testing.assert_close(diff[k + 1 :], torch.zeros_like(diff[k + 1 :]))
    diff = generalized_advantage_estimation(r, terminated_d, v_tm1, v_t2, 0.9, end)
    diff = diff - generalized_advantage_estimation(r, terminated_d, v_tm1, v_t, 0.9, end)
    torch.testing.assert_close(diff, torch.zeros_like(diff))


def test_gae_batched_equals_looped():
    r, d, v_tm1, v_t, end = random_episodes(11, 6, seed=5)
    batched = generalized_advantage_estimation(r, d, v_tm1, v_t, 0.95, end)
    for b in range(6):
        c = slice(b, b + 1)
        looped = generalized_advantage_estimation(
            r[:, c], d[:, c], v_tm1[:, c], v_t[:, c], 0.95, end[:, c]
        )
        torch.testing.assert_close(batched[:, c], looped)


def test_gae_float32_matches_float64():
    r, d, v_tm1, v_t, end = random_episodes(12, 3, seed=6)
    got = generalized_advantage_estimation(
        r.float(), d.float(), v_tm1.float(), v_t.float(), 0.9, end
    )
    assert got.dtype == torch.float32
    expected = generalized_advantage_estimation(r, d, v_tm1, v_t, 0.9, end)
    torch.testing.assert_close(got.double(), expected, atol=1e-5, rtol=1e-5)


def test_gae_no_gradient_reaches_inputs():
    r, d, v_tm1, v_t, end = random_episodes(5, 2, seed=7)
    for x in (r, v_tm1, v_t):
        x.requires_grad_(True)
    lam = torch.tensor(0.9, dtype=torch.float64, requires_grad=True)
    adv = generalized_advantage_estimation(r, d, v_tm1, v_t, lam, end)
    assert not adv.requires_grad
    assert adv.grad_fn is None


def test_gae_shape_mismatch_raises():
    x = torch.zeros(5, 3)
    with pytest.raises(ValueError, match=r"v_tm1 has shape \(5, 4\)"):
        generalized_advantage_estimation(x, x, torch.zeros(5, 4), x, 0.95)
    with pytest.raises(ValueError, match="end_t"):
        generalized_advantage_estimation(x, x, x, x, 0.95, torch.zeros(5))


# ---- normalize_advantages ---------------------------------------------------------------------


def test_normalize_advantages_hand_case():
    # [1, 2, 3]: mean 2, unbiased std sqrt(((-1)^2 + 0 + 1^2) / 2) = 1 -> [-1, 0, 1].
    got = normalize_advantages(torch.tensor([1.0, 2.0, 3.0]), eps=0.0)
    torch.testing.assert_close(got, torch.tensor([-1.0, 0.0, 1.0]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_normalize_advantages_matches_reference(dtype):
    adv = 3.0 + 2.0 * torch.randn(16, 4, generator=torch.Generator().manual_seed(0), dtype=dtype)
    x = adv.double().flatten().tolist()
    mean = sum(x) / len(x)
    std = (sum((a - mean) ** 2 for a in x) / (len(x) - 1)) ** 0.5
    expected = torch.tensor([(a - mean) / (std + 1e-8) for a in x], dtype=torch.float64)
    got = normalize_advantages(adv)
    assert got.shape == adv.shape
    assert got.dtype == dtype
    torch.testing.assert_close(got.double().flatten(), expected, atol=1e-5, rtol=1e-5)


def test_normalize_advantages_constant_input_is_finite():
    got = normalize_advantages(torch.full((8,), 4.0))
    torch.testing.assert_close(got, torch.zeros(8))


def test_normalize_advantages_rejects_single_element():
    with pytest.raises(ValueError, match="at least 2 elements"):
        normalize_advantages(torch.tensor([1.0]))
