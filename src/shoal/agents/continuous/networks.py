"""The continuous-control family's network parts (SAC's, TD3's and DDPG's): MLPs after a torso,
twin Q critics, and the deterministic tanh actor.

As in Stable-Baselines3: the observation goes through a torso (for vectors just a flatten, for
images a CNN) and each critic's MLP takes the torso's features with the action (Fujimoto et al.
2018, "Addressing Function Approximation Error in Actor-Critic Methods": twin critics, the
minimum of the two as the target). Layers keep torch's default initialisation, as SB3's do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.nets.mlp import Activation
from shoal.nets.torso import torso_from_setting
from shoal.tree import map_tree

__all__ = [
    "DeterministicActor",
    "MLPSettings",
    "TwinQ",
    "action_dim",
    "check_actor_and_critic_fit",
    "check_bounded_actions",
    "make_torso",
    "mlp",
]

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


class DeterministicActor(nn.Module):
    """`obs [B, ...]` -> actions `[B, D]` in [-1, 1]: a torso, an MLP, then tanh (the
    deterministic policy μ(s) of DDPG, Lillicrap et al. 2016, and TD3)."""

    def __init__(self, spec: EnvSpec, config: MLPSettings) -> None:
        super().__init__()
        self.torso = make_torso(spec, config)
        width = int(self.torso.out_features)
        self.body = mlp(width, config.hidden_sizes, action_dim(spec), config.activation)

    def forward(self, obs: Any) -> torch.Tensor:
        return torch.tanh(self.body(self.torso(obs)))


@torch.no_grad()
def check_actor_and_critic_fit(algo: str, net: nn.Module, spec: EnvSpec) -> None:
    """Reject, before training, an actor (`net.actor`) and a critic (`net.critic`) whose outputs
    do not fit the spaces: for a batch of 2 observations each of the actor's outputs must be
    `[2, A]` (an action, or a mean and a log-std) and each of the critic's `[2]` (one Q, or
    twins)."""
    obs = map_tree(torch.as_tensor, spec.sample_obs(2))
    d = action_dim(spec)
    try:
        acted = net.actor(obs)
        valued = net.critic(obs, torch.zeros(2, d))
    except (RuntimeError, ValueError) as err:
        raise ConfigError(
            f"The {algo} networks do not fit {spec.env_id}: a batch of 2 observations failed with "
            f"{type(err).__name__}: {err}"
        ) from err
    actor_outputs = acted if isinstance(acted, tuple) else (acted,)
    critic_outputs = valued if isinstance(valued, tuple) else (valued,)
    shapes = [tuple(x.shape) for x in (*actor_outputs, *critic_outputs)]
    expected = [(2, d)] * len(actor_outputs) + [(2,)] * len(critic_outputs)
    if shapes != expected:
        raise ConfigError(
            f"The {algo} networks do not fit {spec.env_id}: for 2 observations the actor and the "
            f"critic gave shapes {shapes}, expected {expected}."
        )
