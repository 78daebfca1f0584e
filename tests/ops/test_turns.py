"""Tests for shoal.ops.turns against a float64 loop that gathers each row's own turns first."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from shoal.ops import generalized_advantage_estimation, turn_advantages

GAMMA = 0.9


def turn_data(t: int, b: int, seed: int, p_act: float):
    g = torch.Generator().manual_seed(seed)
    terminated = torch.rand(t, b, generator=g) < 0.12
    truncated = (torch.rand(t, b, generator=g) < 0.08) & ~terminated
    acting = torch.rand(t + 1, b, generator=g) < p_act
    r_t = torch.randn(t, b, generator=g, dtype=torch.float64)
    v_t = torch.randn(t, b, generator=g, dtype=torch.float64)
    v_tm1 = torch.randn(t, b, generator=g, dtype=torch.float64)
    discount_t = GAMMA * (~terminated).double()
    return r_t, discount_t, v_tm1, v_t, terminated | truncated, acting


def ref_turns(r, discount, v_tm1, v_t, lam, end, acting):
    """The row's own decision process, built move by move, then GAE (Schulman et al. 2016,
    eq. 16) on it: move k at step t_k has reward R_k (every reward from t_k to the step before
    the next move, or to the episode's end), next value V(s_{t_k+1}) of its next move, or the
    bootstrap at the episode's end (0 if terminated, v_t of the truncation); a move whose next
    move lies past the unroll is unknown and cuts the chain."""
    r, discount, v_tm1, v_t = (np.asarray(x, np.float64) for x in (r, discount, v_tm1, v_t))
    end, acting = np.asarray(end, bool), np.asarray(acting, bool)
    horizon, batch = r.shape
    adv = np.zeros((horizon, batch))
    valid = np.zeros((horizon, batch), bool)
    for b in range(batch):
        moves = []  # (t, reward, gamma, next_value, next_is_move, known)
        for t in range(horizon):
            if not acting[t, b]:
                continue
            reward, u = r[t, b], t
            if end[t, b]:
                moves.append((t, reward, discount[t, b], v_t[t, b], False, True))
                continue
            u = t + 1
            while u < horizon and not acting[u, b] and not end[u, b]:
                reward += r[u, b]
                u += 1
            if u == horizon:  # ran off the unroll
                known = bool(acting[horizon, b])
                moves.append((t, reward, discount[t, b], v_t[horizon - 1, b], False, known))
            elif acting[u, b]:
                moves.append((t, reward, discount[t, b], v_tm1[u, b], True, True))
            else:  # the episode ended at u, on a step the row did not act
                reward += r[u, b]
                boot = v_t[u, b] if discount[u, b] > 0 else 0.0
                moves.append((t, reward, discount[t, b], boot, False, True))
        following = 0.0
        for t, reward, gamma, next_value, next_is_move, known in reversed(moves):
            if not known:
                following = 0.0
                continue
            delta = reward + gamma * next_value - v_tm1[t, b]
            a = delta + (gamma * lam * following if next_is_move else 0.0)
            adv[t, b], valid[t, b] = a, True
            following = a
    return adv, valid


@pytest.mark.parametrize(("t", "b"), [(1, 1), (2, 3), (9, 4), (30, 6)])
@pytest.mark.parametrize("lam", [0.0, 0.7, 1.0])
@pytest.mark.parametrize("p_act", [0.3, 0.5, 0.8])
def test_turn_advantages_match_reference(t, b, lam, p_act):
    for seed in range(3):
        r, discount, v_tm1, v_t, end, acting = turn_data(t, b, seed, p_act)
        out = turn_advantages(r, discount, v_tm1, v_t, lam, end, acting)
        adv, valid = ref_turns(r, discount, v_tm1, v_t, lam, end, acting)
        np.testing.assert_array_equal(out.valid.numpy(), valid)
        np.testing.assert_allclose(out.advantages.numpy(), np.where(valid, adv, 0.0), atol=1e-12)


def test_every_step_acting_is_gae():
    """Where the row acts at every step, the move sequence is the row: plain GAE (with
    consistent values, `v_t[t] == v_tm1[t + 1]` inside an episode, as a network gives)."""
    r, discount, v_tm1, v_t, end, _ = turn_data(25, 5, 7, 1.0)
    v_t[:-1] = torch.where(end[:-1], v_t[:-1], v_tm1[1:])
    acting = torch.ones(26, 5, dtype=torch.bool)
    out = turn_advantages(r, discount, v_tm1, v_t, 0.95, end, acting)
    expected = generalized_advantage_estimation(r, discount, v_tm1, v_t, 0.95, end)
    assert out.valid.all()
    torch.testing.assert_close(out.advantages, expected)


def test_loss_on_opponents_move_reaches_the_last_move():
    """A two-player game: the row moves at 0 and 2, the opponent wins at 3 (reward -1 reaches
    the row there). Move 2's advantage is -1 - V(s_2); move 0's chains to it through V(s_2)."""
    r = torch.tensor([[0.0], [0.0], [0.0], [-1.0]], dtype=torch.float64)
    terminated = torch.tensor([[False], [False], [False], [True]])
    discount = GAMMA * (~terminated).double()
    v_tm1 = torch.tensor([[0.1], [5.0], [0.3], [5.0]], dtype=torch.float64)  # 5.0: not acting
    v_t = torch.tensor([[5.0], [0.3], [5.0], [7.0]], dtype=torch.float64)
    acting = torch.tensor([[True], [False], [True], [False], [True]])
    out = turn_advantages(r, discount, v_tm1, v_t, 0.5, terminated, acting)
    a2 = -1.0 - 0.3
    a0 = 0.0 + GAMMA * 0.3 - 0.1 + GAMMA * 0.5 * a2
    torch.testing.assert_close(
        out.advantages[:, 0], torch.tensor([a0, 0.0, a2, 0.0], dtype=torch.float64)
    )
    assert out.valid[:, 0].tolist() == [True, False, True, False]


def test_shapes_are_checked():
    r = torch.zeros(4, 2)
    with pytest.raises(ValueError, match="acting_t must be"):
        turn_advantages(r, r, r, r, 0.9, r.bool(), torch.ones(4, 2, dtype=torch.bool))
