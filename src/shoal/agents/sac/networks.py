"""SAC's networks: a tanh-squashed Gaussian actor and twin Q critics, each an MLP after a torso.

As in Stable-Baselines3's SAC: the observation goes through a torso (for vectors just a
flatten, for images a CNN), the actor's MLP outputs the Gaussian's mean and log-std, and each
critic's MLP takes the torso's features with the action. Layers keep torch's default
initialisation, as SB3's do.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from shoal.agents.continuous.networks import (
    MLPSettings,
    TwinQ,
    action_dim,
    check_actor_and_critic_fit,
    check_bounded_actions,
    make_torso,
    mlp,
)
from shoal.agents.sac.config import SACConfig
from shoal.envs.spec import EnvSpec

# Bounds of the actor's log-std (SB3's): wide enough to be near deterministic or near uniform
# after squashing, narrow enough that exp() never overflows or underflows in float32.
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


class SquashedGaussianActor(nn.Module):
    """`obs [B, ...]` -> the Gaussian's mean and log-std `[B, D]`, before tanh squashing."""

    def __init__(self, spec: EnvSpec, config: SACConfig) -> None:
        super().__init__()
        self.torso = make_torso(spec, config)
        self.action_dim = action_dim(spec)
        width = int(self.torso.out_features)
        self.body = mlp(width, config.hidden_sizes, 2 * self.action_dim, config.activation)

    def forward(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.body(self.torso(obs)).chunk(2, dim=-1)
        return mean, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)


class SACNet(nn.Module):
    """The actor (`actor`, what acting needs) and the twin critics (`critic`)."""

    def __init__(self, spec: EnvSpec, config: SACConfig) -> None:
        super().__init__()
        check_bounded_actions(spec, "SAC")
        self.actor = SquashedGaussianActor(spec, config)
        self.critic = TwinQ(spec, config)


def make_networks(spec: EnvSpec, config: SACConfig) -> SACNet:
    net = SACNet(spec, config)
    check_fits(net, spec)
    return net


def check_fits(net: nn.Module, spec: EnvSpec) -> None:
    """Reject, before training, networks whose outputs do not fit the spaces."""
    check_actor_and_critic_fit("SAC", net, spec)


__all__ = [
    "MLPSettings",
    "SACNet",
    "SquashedGaussianActor",
    "TwinQ",
    "action_dim",
    "check_bounded_actions",
    "check_fits",
    "make_networks",
    "make_torso",
    "mlp",
]
