"""REINFORCE's loss (Williams 1992), composed from `shoal.ops`.

Returns are each step's discounted reward-to-go to the end of its episode within the unroll
(`ops.lambda_returns` with λ = 1). Where the unroll cuts an episode, its last steps have no
whole return: with a baseline they bootstrap from its value of the unroll's last observation
(and a time-limit truncation from its final observation's value); without one they are left out
of the policy loss (`ops.complete_return_mask`), and a truncated episode's return is the
rewards it got.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from shoal import ops
from shoal.agents.actor_critic import ActorCritic
from shoal.agents.base import Unroll
from shoal.agents.pg.config import PGConfig
from shoal.tree import map_tree


def reinforce_loss(
    net: ActorCritic, unroll: Unroll, config: PGConfig
) -> tuple[torch.Tensor, dict[str, Any], Any]:
    """`-log π(a_t|s_t) (G_t - b(s_t))` over the steps with a return, `- entropy_coef H`, and
    with a baseline `+ value_coef (G_t - V(s_t))² / 2`; averaged over an unroll `[T, B]`. Also
    its diagnostics and the observations acted on, flattened `[T B, ...]`."""
    device = next(net.parameters()).device
    length, width = unroll.length, unroll.batch_size

    def tensor(x: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.asarray(x)).to(device)

    obs = map_tree(lambda x: tensor(x).flatten(0, 1), unroll.obs)
    if config.baseline:
        params, values = net(obs)  # T + 1 observations: the last one bootstraps a cut episode
        values = values.view(length + 1, width)
        params = params.view(length + 1, width, *params.shape[1:])[:-1].flatten(0, 1)
        v_t = values[1:].detach().clone()
        if len(unroll.final_index):
            with torch.no_grad():
                t, b = tensor(unroll.final_index).unbind(1)
                v_t[t, b] = net.value(map_tree(tensor, unroll.final_obs))
    else:
        acted = map_tree(lambda x: x.view(length + 1, width, *x.shape[1:])[:-1].flatten(0, 1), obs)
        params = net.policy(acted)
        v_t = torch.zeros(length, width, device=device)
    terminated = tensor(unroll.terminated)
    end_t = terminated | tensor(unroll.truncated)
    discount_t = config.gamma * (~terminated).float()
    returns = ops.lambda_returns(tensor(unroll.rewards), discount_t, v_t, 1.0, end_t)
    if config.baseline:
        keep = torch.ones_like(end_t)
        weights = returns - values[:-1].detach()
    else:
        keep = ops.complete_return_mask(end_t)
        weights = returns
    keep, weights = keep.flatten(), weights.flatten()[keep.flatten()]
    if config.normalize_advantages and weights.numel() > 1:
        weights = ops.normalize_advantages(weights)

    actions = tensor(unroll.actions).flatten(0, 1)
    if net.discrete:
        log_prob = ops.categorical_log_prob(params, actions)
        entropy = ops.categorical_entropy(params)
    else:
        log_std = net.log_std
        assert log_std is not None  # a Gaussian policy has one
        log_prob = ops.gaussian_log_prob(params, log_std, actions)
        entropy = ops.gaussian_entropy(log_std, log_prob.shape)
    # Summed over the kept steps, averaged over all: no NaN when an unroll completes none.
    policy_loss = ops.vtrace_policy_gradient_loss(log_prob[keep], weights).sum() / keep.numel()
    entropy = entropy.mean()
    loss = policy_loss - config.entropy_coef * entropy
    diagnostics = {
        "policy_loss": float(policy_loss.detach()),
        "entropy": float(entropy.detach()),
        "return_mean": float(returns.flatten()[keep].mean()) if bool(keep.any()) else 0.0,
        "complete_fraction": float(keep.float().mean()),
    }
    if config.baseline:
        y, v = returns.flatten(), values[:-1].flatten()
        value_loss = ops.value_loss(v, y).mean()
        loss = loss + config.value_coef * value_loss
        diagnostics["value_loss"] = float(value_loss.detach())
        diagnostics["explained_variance"] = float(
            1 - (y - v.detach()).var() / y.var().clamp_min(1e-8)
        )
    seen = map_tree(lambda x: x.view(length + 1, width, *x.shape[1:])[:-1].flatten(0, 1), obs)
    return loss, diagnostics, seen
