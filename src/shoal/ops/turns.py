"""Advantages of a player who acts only on some steps of its row (turn-based games, league play).

In a turn-based game seen as rows (`shoal.envs.turn_based`), a player's row has a step for every
move of the game, but the player acts only on its own turns; on the others (its opponent's
moves) the row holds no observation of its own, yet rewards may reach it there (the loser's -1
arrives on the winner's move). The player's decision process is the sequence of its own turns:
from its move at t, the next state is its observation at its next turn t', and the reward of
the move is every reward the row received from t up to t'.

`turn_advantages` computes GAE (Schulman et al. 2016, arXiv:1506.02438, eq. 16) on that
sequence, without gathering it: steps where the row does not act pass rewards, episode ends and
the next turn's value and advantage back to the player's previous turn, and take no discount of
their own (the discount is one per turn of the player).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from shoal.ops._checks import check_same_shape, check_time_batch, end_mask, lambda_per_step

__all__ = ["TurnAdvantages", "turn_advantages"]


class TurnAdvantages(NamedTuple):
    advantages: Tensor  # [T, B]: GAE of each acting step, 0 elsewhere
    valid: Tensor  # [T, B] bool: acting steps whose next turn (or episode end) lies in the unroll


def turn_advantages(
    r_t: Tensor,
    discount_t: Tensor,
    v_tm1: Tensor,
    v_t: Tensor,
    lambda_: float | Tensor,
    end_t: Tensor,
    acting_t: Tensor,
) -> TurnAdvantages:
    """GAE over the steps where a row acts (`acting_t`), the others passed through.

    For an acting step t with the row's next acting step t' in the same episode,
    `δ_t = r_t + Σ_{t<u<t'} r_u + γ V(s_t') - V(s_t)` and `A_t = δ_t + γ λ A_t'`. If the episode
    ends at t, `δ_t = r_t + discount_t v_t[t] - V(s_t)` (as GAE). If it ends at a step u between
    t and the next turn, the rewards up to u count and the bootstrap is `v_t[u]` where u was a
    truncation (`discount_t[u] > 0`), 0 where it terminated; `A_t = δ_t`. If the unroll ends
    before the next turn (and the episode goes on), the move's target is unknown: it is not
    `valid` and the chain of the steps before it stops there, as GAE's does at an unroll's end
    (their λ-return bootstraps from `V(s_t)`). Where every step acts this is GAE.

    `γ` here is `discount_t[t]` of the acting step (it did not end the episode, so it is the
    discount factor).

    Args:
        r_t: rewards reaching the row `[T, B]`, on acting steps or not.
        discount_t: `gamma * (1 - terminated)` `[T, B]`.
        v_tm1: `V(s_t)` `[T, B]` (read at acting steps only).
        v_t: `V(s_{t+1})` `[T, B]`, the final observation's value at a truncation; `v_t[T-1]`
            is the bootstrap of the unroll's last observation.
        lambda_: GAE's λ, a float in [0, 1] or a tensor broadcastable to `[T, B]`.
        end_t: episode ends `[T, B]` (terminated or truncated).
        acting_t: `[T + 1, B]` bool: the row acts at step t; row T says whether it acts on the
            unroll's last observation (whose value is `v_t[T-1]`).

    Returns:
        `TurnAdvantages(advantages, valid)`, detached.
    """
    length, width = check_time_batch("r_t", r_t)
    check_same_shape("r_t", r_t, [("discount_t", discount_t), ("v_tm1", v_tm1), ("v_t", v_t)])
    if tuple(acting_t.shape) != (length + 1, width):
        raise ValueError(
            f"acting_t must be [T + 1, B] = [{length + 1}, {width}], got {list(acting_t.shape)}"
        )
    with torch.no_grad():
        lam = lambda_per_step(lambda_, "r_t", r_t)
        ended = end_mask(end_t, "r_t", r_t) > 0
        acting = acting_t.bool()
        zero = torch.zeros_like(r_t[0])
        # What the steps after u hold for the row's previous turn: rewards on the way, the
        # value to bootstrap from (undiscounted), the advantage to continue with, and whether
        # the next turn lies in the unroll.
        gap_reward = zero.clone()
        boot = v_t[-1].clone()
        cont = zero.clone()
        known = acting[length].clone()
        advantages = torch.zeros_like(r_t)
        valid = torch.zeros_like(acting[:length])
        for t in reversed(range(length)):
            act, end = acting[t], ended[t]
            # An acting step: its own GAE step, from the carried next turn unless it ended here.
            delta_end = r_t[t] + discount_t[t] * v_t[t] - v_tm1[t]
            delta_on = r_t[t] + gap_reward + discount_t[t] * boot - v_tm1[t]
            adv_on = delta_on + discount_t[t] * lam[t] * cont
            adv = torch.where(end, delta_end, torch.where(known, adv_on, zero))
            ok = end | known
            advantages[t] = torch.where(act, adv, zero)
            valid[t] = act & ok
            # The carry seen from step t - 1.
            gap_boot = torch.where(discount_t[t] > 0, v_t[t], zero)
            new_gap_reward = torch.where(end, r_t[t], r_t[t] + gap_reward)
            new_boot = torch.where(end, gap_boot, boot)
            new_cont = torch.where(end, zero, cont)
            new_known = known | end
            gap_reward = torch.where(act, zero, new_gap_reward)
            boot = torch.where(act, v_tm1[t], new_boot)
            cont = torch.where(act, torch.where(ok, adv, zero), new_cont)
            known = torch.where(act, torch.ones_like(known), new_known)
        return TurnAdvantages(advantages, valid)
