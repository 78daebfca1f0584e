"""The advantage actor-critic loss (Mnih et al. 2016, Algorithm S3), composed from `shoal.ops`.

A2C's learner and A3C's actors (which compute gradients on their own data) share it.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import torch

from shoal import ops
from shoal.agents.actor_critic.networks import ActorCritic, CoreState
from shoal.agents.actor_critic.sequences import sequence_inputs
from shoal.agents.base import Unroll
from shoal.tree import map_tree


class LossSettings(Protocol):
    gamma: float
    value_coef: float
    entropy_coef: float
    normalize_advantages: bool


def actor_critic_loss(
    net: ActorCritic, unroll: Unroll, config: LossSettings
) -> tuple[torch.Tensor, dict[str, Any], Any]:
    """`-log π(a|s) A - entropy_coef H + value_coef (R - V)² / 2`, averaged over an unroll
    `[T, B]`; its diagnostics; and the observations it saw, flattened `[T B, ...]`.

    Values of the T + 1 observations and of truncated episodes' final observations are
    computed with `net` (the weights being learned), in one pass with the policy. A recurrent
    network runs over each env's whole sequence from the state recorded at its first step
    (`sequence_inputs`).
    """
    device = next(net.parameters()).device
    length, width = unroll.length, unroll.batch_size

    def tensor(x: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.asarray(x)).to(device)

    obs_tm = map_tree(tensor, unroll.obs)  # [T + 1, B, ...]
    obs = map_tree(lambda x: x.flatten(0, 1), obs_tm)
    final_index = tensor(unroll.final_index)
    kept: dict[int, CoreState] = {}
    if net.recurrent:
        first, state = sequence_inputs(unroll, net.initial_state(0).keys())
        t_trunc = final_index[:, 0].unique().tolist()
        unrolled = net.unroll(obs_tm, tensor(first), map_tree(tensor, state), t_trunc)
        params, values, kept = unrolled.params.flatten(0, 1), unrolled.values, unrolled.kept
    else:
        params, values = net(obs)
    values = values.view(length + 1, width)
    params = params.view(length + 1, width, *params.shape[1:])[:-1].flatten(0, 1)
    v_t = values[1:].detach().clone()
    if len(unroll.final_index):
        with torch.no_grad():
            t, b = final_index.unbind(1)
            v_t[t, b] = net.final_values(map_tree(tensor, unroll.final_obs), final_index, kept)
    terminated = tensor(unroll.terminated)
    discount_t = config.gamma * (~terminated).float()
    end_t = terminated | tensor(unroll.truncated)
    targets = ops.n_step_advantage(tensor(unroll.rewards), discount_t, values[:-1], v_t, end_t)
    advantages = targets.advantages.flatten()
    if config.normalize_advantages and advantages.numel() > 1:
        advantages = ops.normalize_advantages(advantages)
    actions = tensor(unroll.actions).flatten(0, 1)
    if net.discrete:
        log_prob = ops.categorical_log_prob(params, actions)
        entropy = ops.categorical_entropy(params)
    else:
        log_prob = ops.gaussian_log_prob(params, net.log_std, actions)
        entropy = ops.gaussian_entropy(net.log_std, log_prob.shape)
    policy_loss = ops.vtrace_policy_gradient_loss(log_prob, advantages).mean()
    value_loss = ops.value_loss(values[:-1].flatten(), targets.returns.flatten()).mean()
    entropy = entropy.mean()
    loss = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    y, v = targets.returns.flatten(), values[:-1].detach().flatten()
    diagnostics = {
        "policy_loss": float(policy_loss.detach()),
        "value_loss": float(value_loss.detach()),
        "entropy": float(entropy.detach()),
        "explained_variance": float(1 - (y - v).var() / y.var().clamp_min(1e-8)),
    }
    seen = map_tree(lambda x: x.view(length + 1, width, *x.shape[1:])[:-1].flatten(0, 1), obs)
    return loss, diagnostics, seen
