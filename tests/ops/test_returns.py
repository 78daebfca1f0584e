"""Tests for shoal.ops.returns against slow float64 loops written from the textbook equations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from shoal.ops import discounted_returns, lambda_returns, n_step_returns

SHAPES = [(1, 1), (2, 3), (7, 4), (20, 5), (33, 2)]
GAMMA = 0.9


def random_episodes(t: int, b: int, seed: int, dtype: torch.dtype = torch.float64):
    """Random rollout data with terminations and truncations (never both at one step)."""
    g = torch.Generator().manual_seed(seed)
    terminated = torch.rand(t, b, generator=g) < 0.15
    truncated = (torch.rand(t, b, generator=g) < 0.15) & ~terminated
    r_t = torch.randn(t, b, generator=g, dtype=dtype)
    v_t = torch.randn(t, b, generator=g, dtype=dtype)
    discount_t = GAMMA * (~terminated).to(dtype)
    return r_t, discount_t, v_t, terminated | truncated, terminated, truncated


# ---- references, straight from the equations (Sutton & Barto 2018), one (t, b) at a time ----


def table(fn, like):
    """Evaluate the scalar reference fn(t, b) for every entry of a [T, B] array."""
    horizon, batch = like.shape
    return np.array([[fn(t, b) for b in range(batch)] for t in range(horizon)], dtype=np.float64)


def ref_discounted(r, gamma, bootstrap):
    """G_t = Σ_{k=t}^{T-1} (Π_{j=t}^{k-1} γ_j) R_{k} + (Π_{j=t}^{T-1} γ_j) V_boot (eq. 3.8)."""
    r, gamma, bootstrap = (np.asarray(x, dtype=np.float64) for x in (r, gamma, bootstrap))

    def g(t, b):
        total, weight = 0.0, 1.0
        for k in range(t, r.shape[0]):
            total += weight * r[k, b]
            weight *= gamma[k, b]
        return total + weight * bootstrap[b]

    return table(g, r)


def ref_n_step_one(r, gamma, v, end, t, b, n):
    """G_{t:t+m} = Σ_{k<m} (Π_{j<k} γ_{t+j}) R_{t+k} + (Π_{j<m} γ_{t+j}) V(S_{t+m}) (eq. 7.1).

    m = n, shortened to the end of the sequence and to the first episode end at or after t.
    """
    m = min(n, r.shape[0] - t)
    for k in range(m):
        if end[t + k, b]:
            m = k + 1
            break
    total, weight = 0.0, 1.0
    for k in range(m):
        total += weight * r[t + k, b]
        weight *= gamma[t + k, b]
    return total + weight * v[t + m - 1, b]


def ref_n_step(r, gamma, v, end, n):
    r, gamma, v, end = (np.asarray(x, dtype=np.float64) for x in (r, gamma, v, end))
    return table(lambda t, b: ref_n_step_one(r, gamma, v, end, t, b, n), r)


def ref_lambda(r, gamma, v, lam, end):
    """Forward view (eq. 12.2 with a per-step λ): G^λ_t = Σ_n w_n G_{t:t+n}, with weights
    w_n = (Π_{j<n-1} λ_{t+j}) (1 - λ_{t+n-1}).

    λ_t = λ[t] (1 - end[t]), and λ_{T-1} = 0 so the weights sum to one within the sequence.
    """
    r, gamma, v, lam, end = (np.asarray(x, dtype=np.float64) for x in (r, gamma, v, lam, end))
    lam_t = lam * (1.0 - end)
    lam_t[-1] = 0.0
    no_end = np.zeros_like(end)

    def g(t, b):
        total, trace = 0.0, 1.0
        for n in range(1, r.shape[0] - t + 1):
            total += (
                trace * (1.0 - lam_t[t + n - 1, b]) * ref_n_step_one(r, gamma, v, no_end, t, b, n)
            )
            trace *= lam_t[t + n - 1, b]
        return total

    return table(g, r)


# ---- discounted_returns -----------------------------------------------------------------------


@pytest.mark.parametrize(("t", "b"), SHAPES)
@pytest.mark.parametrize("seed", [0, 1])
def test_discounted_returns_matches_reference(t, b, seed):
    r, d, v, _, _, _ = random_episodes(t, b, seed)
    got = discounted_returns(r, d, v[-1])
    np.testing.assert_allclose(got.numpy(), ref_discounted(r, d, v[-1]), atol=1e-6)


def test_discounted_returns_hand_case():
    # r = [1, 2, 3], γ = 0.5, bootstrap 10:
    #   G2 = 3 + 0.5*10 = 8, G1 = 2 + 0.5*8 = 6, G0 = 1 + 0.5*6 = 4.
    # Terminated at t=1 (γ_1 = 0): G2 = 8, G1 = 2 + 0 = 2, G0 = 1 + 0.5*2 = 2.
    r = torch.tensor([[1.0], [2.0], [3.0]])
    boot = torch.tensor([10.0])
    got = discounted_returns(r, torch.full((3, 1), 0.5), boot)
    torch.testing.assert_close(got, torch.tensor([[4.0], [6.0], [8.0]]))
    got = discounted_returns(r, torch.tensor([[0.5], [0.0], [0.5]]), boot)
    torch.testing.assert_close(got, torch.tensor([[2.0], [2.0], [8.0]]))


# ---- lambda_returns ---------------------------------------------------------------------------


@pytest.mark.parametrize(("t", "b"), SHAPES)
@pytest.mark.parametrize("lam", [0.0, 0.5, 0.95, 1.0])
def test_lambda_returns_matches_reference(t, b, lam):
    r, d, v, end, _, _ = random_episodes(t, b, seed=t * 10 + b)
    got = lambda_returns(r, d, v, lam, end)
    np.testing.assert_allclose(
        got.numpy(), ref_lambda(r, d, v, np.full((t, b), lam), end), atol=1e-6
    )


def test_lambda_returns_tensor_lambda_matches_reference():
    r, d, v, end, _, _ = random_episodes(9, 4, seed=3)
    lam = torch.rand(9, 4, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    for lam_in in (lam, lam[:, :1]):  # [T, B], and [T, 1] broadcast over the batch
        got = lambda_returns(r, d, v, lam_in, end)
        expected = ref_lambda(r, d, v, lam_in.expand(9, 4), end)
        np.testing.assert_allclose(got.numpy(), expected, atol=1e-6)


def test_lambda_returns_hand_case():
    # r = [1, 1], γ = 0.9, v_t = [2, 4], λ = 0.5:
    #   G1 = 1 + 0.9*4 = 4.6 (last step bootstraps from v_t[1]);
    #   G0 = 1 + 0.9*(0.5*2 + 0.5*4.6) = 1 + 0.9*3.3 = 3.97.
    got = lambda_returns(
        torch.tensor([[1.0], [1.0]]), torch.full((2, 1), 0.9), torch.tensor([[2.0], [4.0]]), 0.5
    )
    torch.testing.assert_close(got, torch.tensor([[3.97], [4.6]]))


@pytest.mark.parametrize(("t", "b"), SHAPES)
def test_lambda_one_is_monte_carlo(t, b):
    r, d, v, _, terminated, _ = random_episodes(t, b, seed=5)
    mc = discounted_returns(r, d, v[-1])
    torch.testing.assert_close(lambda_returns(r, d, v, 1.0), mc)
    torch.testing.assert_close(lambda_returns(r, d, v, 1.0, terminated), mc)
    # With ends, λ=1 is also the n-step return with n covering the whole sequence.
    _, _, _, end, _, _ = random_episodes(t, b, seed=6)
    torch.testing.assert_close(lambda_returns(r, d, v, 1.0, end), n_step_returns(r, d, v, t, end))


@pytest.mark.parametrize(("t", "b"), SHAPES)
def test_lambda_zero_and_one_step_are_td0(t, b):
    r, d, v, end, _, _ = random_episodes(t, b, seed=7)
    torch.testing.assert_close(lambda_returns(r, d, v, 0.0, end), r + d * v)
    torch.testing.assert_close(n_step_returns(r, d, v, 1, end), r + d * v)


# ---- n_step_returns ---------------------------------------------------------------------------


@pytest.mark.parametrize(("t", "b"), SHAPES)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 50])
def test_n_step_returns_matches_reference(t, b, n):
    r, d, v, end, _, _ = random_episodes(t, b, seed=t + b + n)
    got = n_step_returns(r, d, v, n, end)
    np.testing.assert_allclose(got.numpy(), ref_n_step(r, d, v, end, n), atol=1e-6)
    got = n_step_returns(r, d, v, n)
    np.testing.assert_allclose(got.numpy(), ref_n_step(r, d, v, np.zeros((t, b)), n), atol=1e-6)


def test_n_step_returns_hand_case():
    # r = [1, 2, 3], γ = 0.5, v_t = [10, 20, 30], n = 2:
    #   G0 = 1 + 0.5*2 + 0.25*20 = 7; G1 = 2 + 0.5*3 + 0.25*30 = 11; G2 = 3 + 0.5*30 = 18.
    # Truncated at t=0 (γ stays 0.5, end=1): G0 = 1 + 0.5*10 = 6, the rest unchanged.
    r = torch.tensor([[1.0], [2.0], [3.0]])
    d = torch.full((3, 1), 0.5)
    v = torch.tensor([[10.0], [20.0], [30.0]])
    torch.testing.assert_close(n_step_returns(r, d, v, 2), torch.tensor([[7.0], [11.0], [18.0]]))
    end = torch.tensor([[True], [False], [False]])
    torch.testing.assert_close(
        n_step_returns(r, d, v, 2, end), torch.tensor([[6.0], [11.0], [18.0]])
    )


# ---- properties shared by the return ops ------------------------------------------------------

RETURN_OPS = {
    "lambda": lambda r, d, v, end: lambda_returns(r, d, v, 0.8, end),
    "n_step": lambda r, d, v, end: n_step_returns(r, d, v, 4, end),
    "discounted": lambda r, d, v, end: discounted_returns(r, d, v[-1]),
}


@pytest.mark.parametrize("name", ["lambda", "n_step"])
def test_episode_end_cuts_the_sum(name):
    op = RETURN_OPS[name]
    t, k = 8, 3
    r, d, v, _, _, _ = random_episodes(t, 1, seed=9)
    end = torch.zeros(t, 1, dtype=torch.bool)
    end[k] = True  # truncation at k: discount stays γ, so only end_t can cut the sum
    before = op(r, d, v, end)
    r2, v2 = r.clone(), v.clone()
    r2[k + 1 :] += 5.0
    v2[k + 1 :] += 5.0
    after = op(r2, d, v2, end)
    torch.testing.assert_close(after[: k + 1], before[: k + 1])
    # Without the end marker the same change does reach back: the check above is not vacuous.
    assert not torch.allclose(op(r2, d, v2, None)[: k + 1], op(r, d, v, None)[: k + 1])


@pytest.mark.parametrize("name", ["lambda", "n_step"])
def test_truncation_bootstraps_termination_does_not(name):
    op = RETURN_OPS[name]
    t, k = 6, 2
    r, _, v, _, _, _ = random_episodes(t, 1, seed=10)
    end = torch.zeros(t, 1, dtype=torch.bool)
    end[k] = True
    truncated_d = torch.full((t, 1), GAMMA, dtype=torch.float64)
    terminated_d = truncated_d.clone()
    terminated_d[k] = 0.0
    v2 = v.clone()
    v2[k] += 1.0
    # Truncation: V(final obs) at k enters every return up to k with weight Π γ (times λ-trace).
    diff = op(r, truncated_d, v2, end) - op(r, truncated_d, v, end)
    assert (diff[: k + 1].abs() > 1e-3).all()
    torch.testing.assert_close(diff[k + 1 :], torch.zeros_like(diff[k + 1 :]))
    # Termination: the same value change has no effect anywhere.
    diff = op(r, terminated_d, v2, end) - op(r, terminated_d, v, end)
    torch.testing.assert_close(diff, torch.zeros_like(diff))


@pytest.mark.parametrize("name", sorted(RETURN_OPS))
def test_batched_equals_looped(name):
    op = RETURN_OPS[name]
    r, d, v, end, _, _ = random_episodes(11, 6, seed=11)
    batched = op(r, d, v, end)
    for b in range(6):
        col = slice(b, b + 1)
        torch.testing.assert_close(
            batched[:, col], op(r[:, col], d[:, col], v[:, col], end[:, col])
        )


@pytest.mark.parametrize("name", sorted(RETURN_OPS))
def test_float32_and_no_gradient_reaches_targets(name):
    op = RETURN_OPS[name]
    r, d, v, end, _, _ = random_episodes(12, 3, seed=12)
    got = op(r.float(), d.float(), v.float(), end.float())
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), op(r, d, v, end), atol=1e-5, rtol=1e-5)
    out = op(r.requires_grad_(True), d, v.requires_grad_(True), end)
    assert not out.requires_grad
    assert out.grad_fn is None


def test_gradients_flow_when_not_stopped():
    r, d, v, end, _, _ = random_episodes(4, 2, seed=14)
    r.requires_grad_(True)
    v.requires_grad_(True)
    for op in (
        lambda r, v: lambda_returns(r, d, v, 0.7, end, stop_target_gradients=False),
        lambda r, v: n_step_returns(r, d, v, 2, end, stop_target_gradients=False),
        lambda r, v: discounted_returns(r, d, v[-1], stop_target_gradients=False),
    ):
        assert torch.autograd.gradcheck(op, (r, v))


# ---- shape checks -----------------------------------------------------------------------------


def test_shape_mismatch_raises():
    r = torch.zeros(5, 3)
    with pytest.raises(ValueError, match=r"discount_t has shape \(5, 2\)"):
        lambda_returns(r, torch.zeros(5, 2), torch.zeros(5, 3), 0.9)
    with pytest.raises(ValueError, match="r_t must be time-major"):
        n_step_returns(torch.zeros(5), torch.zeros(5), torch.zeros(5), 2)
    with pytest.raises(ValueError, match="bootstrap_value"):
        discounted_returns(r, r, torch.zeros(5, 3))
    with pytest.raises(ValueError, match="end_t"):
        lambda_returns(r, r, r, 0.9, torch.zeros(3, 5))
    with pytest.raises(ValueError, match="lambda_"):
        lambda_returns(r, r, r, torch.zeros(4, 3))
    with pytest.raises(ValueError, match="lambda_"):
        lambda_returns(r, r, r, 1.5)
    with pytest.raises(ValueError, match="n must be"):
        n_step_returns(r, r, r, 0)
