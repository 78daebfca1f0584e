"""PPO's loss, composed from `shoal.ops` (Schulman et al. 2017, eq. 9)."""

from __future__ import annotations

from typing import NamedTuple

import torch

from shoal import ops
from shoal.agents.ppo.config import PPOConfig
from shoal.agents.ppo.networks import ActorCritic


class Minibatch(NamedTuple):
    """Flat samples, `[N, ...]`."""

    obs: torch.Tensor
    actions: torch.Tensor
    old_log_prob: torch.Tensor
    old_values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor


def rollout_targets(
    config: PPOConfig,
    rewards: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    v_tm1: torch.Tensor,
    v_t: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE advantages and value targets `[T, B]`.

    `v_t` holds the values of final observations where episodes were truncated. Rewards are
    clipped to `[-reward_clip, reward_clip]` first when set (Mnih et al. 2015, for Atari).
    """
    if config.reward_clip is not None:
        rewards = rewards.clamp(-config.reward_clip, config.reward_clip)
    discount_t = config.gamma * (~terminated).float()
    end_t = terminated | truncated
    advantages = ops.generalized_advantage_estimation(
        rewards, discount_t, v_tm1, v_t, config.gae_lambda, end_t
    )
    return advantages, advantages + v_tm1


def ppo_loss(
    net: ActorCritic, batch: Minibatch, config: PPOConfig, clip_eps: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped surrogate + weighted value loss - weighted entropy, and its diagnostics."""
    params, values = net(batch.obs)
    if net.discrete:
        log_prob = ops.categorical_log_prob(params, batch.actions)
        entropy = ops.categorical_entropy(params)
    else:
        log_prob = ops.gaussian_log_prob(params, net.log_std, batch.actions)
        entropy = ops.gaussian_entropy(net.log_std, log_prob.shape)
    log_ratio = log_prob - batch.old_log_prob
    advantages = batch.advantages
    if config.normalize_advantages and advantages.numel() > 1:
        advantages = ops.normalize_advantages(advantages)
    policy_loss = ops.clipped_surrogate_loss(log_ratio, advantages, clip_eps).mean()
    if config.clip_value:
        value_loss = ops.clipped_value_loss(values, batch.old_values, batch.returns, clip_eps)
    else:
        value_loss = ops.value_loss(values, batch.returns)
    value_loss = value_loss.mean()
    entropy = entropy.mean()
    loss = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    diagnostics = {
        "policy_loss": policy_loss.detach(),
        "value_loss": value_loss.detach(),
        "entropy": entropy.detach(),
        "approx_kl": ops.approx_kl(log_ratio.detach()),
        "clip_fraction": ops.clip_fraction(log_ratio.detach(), clip_eps),
    }
    return loss, diagnostics
