"""REINFORCE's whole-episode returns over a fixed-length sequence with resets: which steps have
one (`complete_return_mask`), and `lambda_returns` with λ = 1 giving them, against slow float64
loops in the notation of Williams (1992) and Sutton & Barto (2018, Sec. 13.3)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from shoal.ops import complete_return_mask, lambda_returns

SHAPES = [(1, 1), (2, 3), (7, 4), (20, 5), (33, 2)]
GAMMA = 0.9


def episodes(t: int, b: int, seed: int, p_end: float = 0.15):
    """Random rewards, terminations and truncations (never both at one step), float64."""
    g = torch.Generator().manual_seed(seed)
    terminated = torch.rand(t, b, generator=g) < p_end
    truncated = (torch.rand(t, b, generator=g) < p_end) & ~terminated
    r_t = torch.randn(t, b, generator=g, dtype=torch.float64)
    v_t = torch.randn(t, b, generator=g, dtype=torch.float64)
    return r_t, v_t, terminated, truncated


def ref_complete(end: np.ndarray) -> np.ndarray:
    """True at (t, b) if some step k >= t of column b ends an episode."""
    horizon, batch = end.shape
    out = np.zeros((horizon, batch), bool)
    for b in range(batch):
        for t in range(horizon):
            out[t, b] = any(end[k, b] for k in range(t, horizon))
    return out


def ref_reward_to_go(r, terminated, truncated, v, gamma):
    """G_t = Σ_{k=t}^{K} γ^{k-t} r_k (+ γ^{K-t+1} v_K where K truncates), K the first end at or
    after t; where no end follows t, K = T - 1 and the sum bootstraps from v_{T-1}. A loop over
    every (t, b), with its own γ powers (no recursion)."""
    r, v = np.asarray(r, np.float64), np.asarray(v, np.float64)
    horizon, batch = r.shape
    out = np.zeros((horizon, batch))
    for b in range(batch):
        for t in range(horizon):
            total = 0.0
            for k in range(t, horizon):
                total += gamma ** (k - t) * r[k, b]
                if terminated[k, b]:
                    break
                if truncated[k, b] or k == horizon - 1:
                    total += gamma ** (k - t + 1) * v[k, b]
                    break
            out[t, b] = total
    return out


@pytest.mark.parametrize(("t", "b"), SHAPES)
@pytest.mark.parametrize("p_end", [0.0, 0.05, 0.3, 1.0])
def test_complete_return_mask_matches_reference(t, b, p_end):
    _, _, terminated, truncated = episodes(t, b, seed=t * 7 + b, p_end=p_end)
    end = terminated | truncated
    got = complete_return_mask(end)
    assert got.dtype == torch.bool and got.shape == (t, b)
    np.testing.assert_array_equal(got.numpy(), ref_complete(end.numpy()))
    # A float end_t gives the same.
    np.testing.assert_array_equal(complete_return_mask(end.double()).numpy(), got.numpy())


def test_complete_return_mask_hand_case():
    # Column 0 ends at t = 1 and t = 3: complete up to 3, the tail t = 4 is cut.
    # Column 1 never ends: nothing is complete. Column 2 ends at the last step: all complete.
    end = torch.tensor([[0, 0, 0], [1, 0, 0], [0, 0, 0], [1, 0, 0], [0, 0, 1]], dtype=torch.bool)
    expected = torch.tensor(
        [[1, 0, 1], [1, 0, 1], [1, 0, 1], [1, 0, 1], [0, 0, 1]], dtype=torch.bool
    )
    torch.testing.assert_close(complete_return_mask(end), expected)


@pytest.mark.parametrize(("t", "b"), SHAPES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lambda_one_is_reinforce_reward_to_go_with_resets(t, b, seed):
    r, v, terminated, truncated = episodes(t, b, seed)
    discount = GAMMA * (~terminated).double()
    end = terminated | truncated
    # With a baseline: truncations and cut tails bootstrap from v.
    got = lambda_returns(r, discount, v, 1.0, end)
    expected = ref_reward_to_go(r, terminated, truncated, v, GAMMA)
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-9)
    # Without one (v = 0): on the steps the mask keeps, the plain discounted sum of the
    # episode's rewards from t on, which the cut tails never enter.
    got = lambda_returns(r, discount, torch.zeros_like(v), 1.0, end)
    expected = ref_reward_to_go(r, terminated, truncated, np.zeros_like(v), GAMMA)
    keep = complete_return_mask(end)
    np.testing.assert_allclose(got[keep].numpy(), expected[keep.numpy()], atol=1e-9)
    r2 = r.clone()
    r2[~keep] += 100.0  # rewards of cut tails reach no complete step's return
    np.testing.assert_allclose(
        lambda_returns(r2, discount, torch.zeros_like(v), 1.0, end)[keep].numpy(),
        got[keep].numpy(),
        atol=1e-9,
    )


def test_reward_to_go_hand_case():
    # Rewards 1 each, γ = 0.5, one column: terminated at t = 1, then two steps the sequence cuts.
    # G_0 = 1 + 0.5 = 1.5, G_1 = 1; t = 2, 3 have no whole return (bootstrapped: v = 4 at t = 3,
    # G_3 = 1 + 0.5 * 4 = 3, G_2 = 1 + 0.5 * 3 = 2.5).
    r = torch.ones(4, 1, dtype=torch.float64)
    terminated = torch.tensor([[False], [True], [False], [False]])
    discount = 0.5 * (~terminated).double()
    v = torch.full((4, 1), 4.0, dtype=torch.float64)
    got = lambda_returns(r, discount, v, 1.0, terminated)
    torch.testing.assert_close(got, torch.tensor([[1.5], [1.0], [2.5], [3.0]], dtype=torch.float64))
    mask = complete_return_mask(terminated)
    torch.testing.assert_close(mask, torch.tensor([[True], [True], [False], [False]]))


def test_complete_return_mask_rejects_bad_shapes():
    with pytest.raises(ValueError, match=r"end_t must be time-major"):
        complete_return_mask(torch.zeros(5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"end_t must be time-major"):
        complete_return_mask(torch.zeros(0, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"end_t must be a torch.Tensor"):
        complete_return_mask(np.zeros((3, 2), bool))  # type: ignore[arg-type]
