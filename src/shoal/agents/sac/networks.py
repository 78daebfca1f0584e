"""SAC's networks: a tanh-squashed Gaussian actor and twin Q critics, each an MLP after a torso.

As in Stable-Baselines3's SAC: the observation goes through a torso (for vectors just a
flatten, for images a CNN), the actor's MLP outputs the Gaussian's mean and log-std, and each
critic's MLP takes the torso's features with the action. Layers keep torch's default
initialisation, as SB3's do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from shoal.agents.sac.config import SACConfig
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.nets.mlp import Activation
from shoal.nets.torso import torso_from_setting
from shoal.tree import map_tree

# Bounds of the actor's log-std (SB3's): wide enough to be near deterministic or near uniform
# after squashing, narrow enough that exp() never overflows or underflows in float32.
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0

_ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh}


def mlp(
    in_features: int, hidden_sizes: Sequence[int], out_features: int, activation: Activation
) -> nn.Sequential:
    """Linear + activation per hidden width, then a linear output layer."""
    layers: list[nn.Module] = []
    width = in_features
    for size in hidden_sizes:
        layers += [nn.Linear(width, size), _ACTIVATIONS[activation]()]
        width = size
    layers.append(nn.Linear(width, out_features))
    return nn.Sequential(*layers)


class MLPSettings(Protocol):
    """The network settings SAC's and TD3's configs share."""

    hidden_sizes: tuple[int, ...]
    activation: Activation
    torso: str


def make_torso(spec: EnvSpec, config: MLPSettings) -> nn.Module:
    """The observation encoder; no hidden layers of its own: the MLPs after it hold them (a
    flatten for vectors). TD3 builds its networks from these parts too, with its own config."""
    return torso_from_setting(spec.observation_space, config.torso, (), config.activation)


def action_dim(spec: EnvSpec) -> int:
    """D, the number of action entries (a Box of any shape is flattened)."""
    return math.prod(spec.action_shape)


def check_bounded_actions(spec: EnvSpec, algo: str) -> None:
    """Reject action spaces that a squashed or tanh actor cannot act in."""
    if spec.discrete:
        raise ConfigError(
            f"{algo} needs continuous (Box) actions; {spec.env_id} has {spec.action_space}. Use "
            "DQN (`shoal train dqn`) or PPO for discrete actions."
        )
    space = spec.action_space
    if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
        raise ConfigError(
            f"{algo} acts in [-1, 1] rescaled to the action bounds, and {spec.env_id}'s "
            f"action space {space} is unbounded. Wrap the env to give finite bounds, e.g. "
            "gymnasium.wrappers.RescaleAction or ClipAction."
        )


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


class TwinQ(nn.Module):
    """`(obs [B, ...], action [B, D])` -> two Q-values `[B]` each; one torso feeds both."""

    def __init__(self, spec: EnvSpec, config: MLPSettings) -> None:
        super().__init__()
        self.torso = make_torso(spec, config)
        width = int(self.torso.out_features) + action_dim(spec)
        self.q1 = mlp(width, config.hidden_sizes, 1, config.activation)
        self.q2 = mlp(width, config.hidden_sizes, 1, config.activation)

    def _inputs(self, obs: Any, action: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.torso(obs), action.reshape(len(action), -1)], dim=-1)

    def forward(self, obs: Any, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self._inputs(obs, action)
        return self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)

    def q1_only(self, obs: Any, action: torch.Tensor) -> torch.Tensor:
        """The first critic alone (TD3 trains its actor against it)."""
        return self.q1(self._inputs(obs, action)).squeeze(-1)


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


@torch.no_grad()
def check_fits(net: SACNet, spec: EnvSpec) -> None:
    """Reject, before training, networks whose outputs do not fit the spaces."""
    obs = map_tree(torch.as_tensor, spec.sample_obs(2))
    d = action_dim(spec)
    try:
        mean, log_std = net.actor(obs)
        q1, q2 = net.critic(obs, torch.zeros(2, d))
    except (RuntimeError, ValueError) as err:
        raise ConfigError(
            f"The SAC networks do not fit {spec.env_id}: a batch of 2 observations failed with "
            f"{type(err).__name__}: {err}"
        ) from err
    shapes = [tuple(x.shape) for x in (mean, log_std, q1, q2)]
    if shapes != [(2, d), (2, d), (2,), (2,)]:
        raise ConfigError(
            f"The SAC networks do not fit {spec.env_id}: for 2 observations they gave mean, "
            f"log-std and Q shapes {shapes}, expected [(2, {d}), (2, {d}), (2,), (2,)]."
        )
