"""R2D2's loss over a batch of replayed sequences (Kapturowski et al. 2019, sections 2.3 and 3).

For a sequence of `L` steps (`L + 1` inputs, see `shoal.replay.sequence`) with stored state s_0:

1. Burn-in (section 3): the online and the target network each unroll the first `burn_in`
   steps from s_0 without gradients, only to warm their states.
2. From there both unroll the rest; the trained steps are `t = burn_in .. L - 1` and the
   target of each is the transformed n-step double-Q target (section 2.3)

       y_t = h(Σ_{k<m} γ^k r_{t+k} + γ^m h^{-1}(Q_target(s_{t+m}, a*))),
       a* = argmax_a Q_online(s_{t+m}, a)   (over the legal actions of s_{t+m} where
                                             observations carry an action mask),

   with m = n except near episode ends and the sequence's end (`ops.transformed_n_step_double_q_
   targets`), and `δ_t = y_t - Q_online(s_t, a_t)`.
3. The loss is the importance-weighted mean over sequences of the mean `δ_t² / 2` over their
   trained steps (steps that hold only a truncated episode's final observation are skipped),
   and each sequence's new priority is `η max_t |δ_t| + (1 - η) mean_t |δ_t|` (section 2.3).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import torch

from shoal import ops
from shoal.agents.common.masks import legal_actions
from shoal.agents.value.loss import LossResult, sequence_priorities
from shoal.agents.value.recurrent import R2D2Net
from shoal.agents.value.recurrent_config import R2D2Config
from shoal.tree import map_tree

_PER_STEP = ("obs", "first", "prev_action", "prev_reward", "action", "reward", "terminated")
_PER_STEP += ("end", "acted")


class SequenceTD(NamedTuple):
    delta: torch.Tensor  # [L - burn_in, B] TD errors of the trained steps, in h-space
    mask: torch.Tensor  # [L - burn_in, B] float: 1 where the step has a target
    q_taken: torch.Tensor  # [L - burn_in, B] Q_online(s_t, a_t), differentiable when asked


def time_major(data: Mapping[str, np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
    """Replay's `[B, L(+1), ...]` sequence fields as `[L(+1), B, ...]` tensors on `device`."""
    out = {}
    for key in (*_PER_STEP, "core_h", "core_c"):
        x = torch.from_numpy(np.asarray(data[key])).to(device, non_blocking=True)
        out[key] = x.transpose(0, 1) if key in _PER_STEP else x
    return out


def sequence_td_errors(
    online: R2D2Net,
    target: R2D2Net,
    data: Mapping[str, np.ndarray],
    config: R2D2Config,
    *,
    grad: bool = True,
) -> SequenceTD:
    """TD errors of each sequence's trained steps; gradients reach only `q_taken` (if `grad`).

    `data` holds the fields of `shoal.replay.sequence_fields`, `[B, ...]` each.
    """
    batch = time_major(data, next(online.parameters()).device)
    packing = getattr(online, "obs_packing", None)  # a Dict observation (its mask too), packed
    if packing is not None:
        batch["obs"] = packing.unpack(batch["obs"])
    inputs = [batch[k] for k in ("obs", "first", "prev_action", "prev_reward")]
    state = (batch["core_h"], batch["core_c"])
    burn = config.burn_in

    def unroll(net: R2D2Net, steps: slice, start: tuple) -> tuple:
        obs, first, prev_action, prev_reward = (map_tree(lambda x: x[steps], x) for x in inputs)
        return net.unroll(obs, prev_action, prev_reward, first, start)

    online_state = target_state = state
    if burn:
        with torch.no_grad():  # burn-in only warms the stored state (section 3)
            _, online_state = unroll(online, slice(0, burn), state)
            if target is not online:
                _, target_state = unroll(target, slice(0, burn), state)
            else:
                target_state = online_state
    with torch.set_grad_enabled(grad):
        q_online, _ = unroll(online, slice(burn, None), online_state)  # [L + 1 - burn, B, A]
    with torch.no_grad():
        q_next_online = q_online[1:].detach()
        q_next_target = (
            q_next_online
            if target is online
            else unroll(target, slice(burn, None), target_state)[0][1:]
        )
        reward = batch["reward"][burn:]
        if config.reward_clip is not None:
            reward = reward.clamp(-config.reward_clip, config.reward_clip)
        discount = config.gamma * (~batch["terminated"][burn:]).to(reward.dtype)
        targets = ops.transformed_n_step_double_q_targets(
            reward,
            discount,
            q_next_target,
            q_next_online,
            config.n_step,
            batch["end"][burn:],
            config.rescale_eps,
            None if (legal := legal_actions(batch["obs"])) is None else legal[burn + 1 :],
        )
    action = batch["action"][burn:].long()
    q_taken = q_online[:-1].gather(-1, action.unsqueeze(-1)).squeeze(-1)
    mask = batch["acted"][burn:].to(q_taken.dtype)
    return SequenceTD(targets - q_taken, mask, q_taken)


def r2d2_loss(
    online: R2D2Net, target: R2D2Net, data: Mapping[str, np.ndarray], config: R2D2Config
) -> LossResult:
    """Importance-weighted squared TD loss of a sampled batch, and the sequences' priorities."""
    td = sequence_td_errors(online, target, data, config)
    count = td.mask.sum(0).clamp(min=1.0)
    per_sequence = (0.5 * td.delta.square() * td.mask).sum(0) / count
    weights = torch.from_numpy(np.asarray(data["weights"], np.float32)).to(per_sequence.device)
    loss = (weights * per_sequence).mean()
    td_abs = td.delta.detach().abs()
    priorities = sequence_priorities(td_abs, td.mask, config.eta)
    steps = td.mask.sum().clamp(min=1.0)
    metrics = {
        "loss": loss.detach(),
        "q_mean": (td.q_taken.detach() * td.mask).sum() / steps,
        "td_abs_mean": (td_abs * td.mask).sum() / steps,
        "priority_mean": priorities.mean(),
    }
    return LossResult(loss, priorities, metrics)


@torch.no_grad()
def initial_priorities(net: R2D2Net, data: Mapping[str, np.ndarray], config: R2D2Config):
    """Priorities `[M]` of new sequences, with the actor's network as online and target (Ape-X,
    Horgan et al. 2018: new experience enters replay with an informed priority)."""
    td = sequence_td_errors(net, net, data, config, grad=False)
    return sequence_priorities(td.delta.abs(), td.mask, config.eta).cpu().numpy()
