"""SAC's losses over a batch of transitions, composed from `shoal.ops` (Haarnoja et al. 2018,
"Soft Actor-Critic Algorithms and Applications", arXiv:1812.05905):

    critics:      ½ Σ_i (Q_i(s, a) - y)²,  y = r + discount (min_i Q'_i(s', a') - α log π(a'|s'))
    actor:        α log π(ã|s) - min_i Q_i(s, ã),  ã ~ π(·|s) reparameterised
    temperature:  -log α (log π(ã|s) + H̄)

with `a' ~ π(·|s')` and `discount = γ` (0 after a termination). Every loss is a batch mean.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from shoal import ops
from shoal.agents.continuous.data import Transitions, transitions
from shoal.agents.sac.networks import SACNet


class PolicySample(NamedTuple):
    action: torch.Tensor  # [B, D] squashed, differentiable in the actor's parameters
    log_prob: torch.Tensor  # [B]


def sample_policy(net: SACNet, obs: torch.Tensor) -> PolicySample:
    """A reparameterised squashed-Gaussian action at each observation and its log-density."""
    mean, log_std = net.actor(obs)
    sample = ops.squashed_gaussian_sample(mean, log_std)
    return PolicySample(sample.action, sample.log_prob)


def critic_loss(
    net: SACNet, target_critic: nn.Module, batch: Transitions, alpha: torch.Tensor
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The twin critics' squared errors to the soft clipped double-Q target."""
    with torch.no_grad():
        following = sample_policy(net, batch.next_obs)
        q1_t, q2_t = target_critic(batch.next_obs, following.action)
        y = ops.soft_clipped_double_q_target(
            batch.reward, batch.discount, q1_t, q2_t, following.log_prob, alpha
        )
    q1, q2 = net.critic(batch.obs, batch.action)
    loss = (ops.value_loss(q1, y) + ops.value_loss(q2, y)).mean()
    return loss, {"critic_loss": loss.detach(), "q_mean": q1.detach().mean()}


def actor_loss(
    net: SACNet, batch: Transitions, sample: PolicySample, alpha: torch.Tensor
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The policy loss of `sample` (drawn at `batch.obs`) under the critics as they are.

    The critics' parameters get no gradients from it: only the actor learns here.
    """
    net.critic.requires_grad_(False)
    try:
        q1, q2 = net.critic(batch.obs, sample.action)
    finally:
        net.critic.requires_grad_(True)
    loss = ops.soft_policy_loss(sample.log_prob, torch.minimum(q1, q2), alpha).mean()
    return loss, {"actor_loss": loss.detach(), "entropy": -sample.log_prob.detach().mean()}


def alpha_loss(
    log_alpha: torch.Tensor, sample: PolicySample, target_entropy: float
) -> torch.Tensor:
    """The temperature's loss: α grows while the policy's entropy is below `target_entropy`."""
    return ops.temperature_loss(log_alpha, sample.log_prob, target_entropy).mean()


__all__ = [
    "PolicySample",
    "Transitions",
    "actor_loss",
    "alpha_loss",
    "critic_loss",
    "sample_policy",
    "transitions",
]
