"""The continuous-control family's network parts (SAC's, TD3's and DDPG's): MLPs after a torso,
twin Q critics, and the deterministic tanh actor.

As in Stable-Baselines3: the observation goes through a torso (for vectors just a flatten, for
images a CNN) and each critic's MLP takes the torso's features with the action (Fujimoto et al.
2018, "Addressing Function Approximation Error in Actor-Critic Methods": twin critics, the
minimum of the two as the target). Layers keep torch's default initialisation, as SB3's do.

The twin critics' MLPs are one two-member `EnsembleMLP` (`shoal.nets.ensemble`): one batched
matmul per layer for both. Checkpoints of the earlier layout (`q1.*` and `q2.*`, two
`nn.Sequential` MLPs) load into it (`TwinQ` converts their keys; the learners convert their
critic optimisers' moments with `twin_q_optimizer_state`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.nets.ensemble import EnsembleMLP
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
    "twin_q_optimizer_state",
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
    """`(obs [B, ...], action [B, D])` -> two Q-values `[B]` each; one torso feeds both, and
    the two MLPs are one two-member ensemble (`q`)."""

    def __init__(self, spec: EnvSpec, config: MLPSettings) -> None:
        super().__init__()
        self.torso = make_torso(spec, config)
        width = int(self.torso.out_features) + action_dim(spec)
        self.q = EnsembleMLP(2, width, config.hidden_sizes, 1, config.activation)

    def _inputs(self, obs: Any, action: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.torso(obs), action.reshape(len(action), -1)], dim=-1)

    def forward(self, obs: Any, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q = self.q(self._inputs(obs, action)).squeeze(-1)
        return q[0], q[1]

    def q1_only(self, obs: Any, action: torch.Tensor) -> torch.Tensor:
        """The first critic alone (TD3 trains its actor against it)."""
        return self.q.member(self._inputs(obs, action), 0).squeeze(-1)

    def _load_from_state_dict(
        self,
        state_dict: dict[str, Any],
        prefix: str,
        local_metadata: dict[str, Any],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        # A checkpoint of the earlier layout, two nn.Sequential MLPs `q1` and `q2` (Linear at
        # every even index): their layers, stacked, are the ensemble's.
        if f"{prefix}q1.0.weight" in state_dict and f"{prefix}q.layers.0.weight" not in state_dict:
            _stack_old_twin_keys(state_dict, prefix, len(self.q.layers))
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


def _stack_old_twin_keys(state: dict[str, Any], prefix: str, layers: int) -> None:
    """Replace, in place, `q1.*`/`q2.*` (nn.Linear layouts) with the ensemble's `q.layers.*`."""
    for j in range(layers):
        names = [f"{prefix}q{i}.{2 * j}" for i in (1, 2)]
        weights = [state.pop(f"{name}.weight") for name in names]
        biases = [state.pop(f"{name}.bias") for name in names]
        state[f"{prefix}q.layers.{j}.weight"] = torch.stack([w.t() for w in weights])
        state[f"{prefix}q.layers.{j}.bias"] = torch.stack(biases).unsqueeze(1)


def twin_q_optimizer_state(
    state: Mapping[str, Any], critic: TwinQ, key: str = "critic_optimizer"
) -> dict[str, Any]:
    """A learner's checkpoint `state` whose flat Adam moments for `critic` (under `key`) are
    laid out for the ensemble: a checkpoint of the earlier layout (its `network` holding
    `critic.q1.*`) held them torso first, then `q1`'s layers, then `q2`'s, each
    `nn.Linear`-shaped. Other checkpoints come back as they are."""
    network = state.get("network", {})
    if "critic.q1.0.weight" not in network or key not in state:
        return dict(state)
    torso = sum(p.numel() for p in critic.torso.parameters() if p.requires_grad)
    old_shapes = [
        shape
        for _ in range(2)
        for layer in critic.q.linears
        for shape in ((layer.out_features, layer.in_features), (layer.out_features,))
    ]

    def convert(flat: torch.Tensor) -> torch.Tensor:
        sizes = [math.prod(shape) for shape in old_shapes]
        if flat.numel() != torso + sum(sizes):
            raise ConfigError(
                f"The checkpoint's critic optimiser holds {flat.numel()} values, the twin "
                f"critics have {torso + sum(sizes)} parameters: it was saved for other "
                "network widths. Resume with the settings it was trained with."
            )
        # Member m's layer j: weight at 2 (m L + j), bias right after it.
        old = [
            piece.view(shape)
            for piece, shape in zip(torch.split(flat[torso:], sizes), old_shapes, strict=True)
        ]
        layers = len(critic.q.layers)
        parts = [flat[:torso]]
        for j in range(layers):
            weights = [old[2 * (m * layers + j)] for m in range(2)]
            biases = [old[2 * (m * layers + j) + 1] for m in range(2)]
            parts.append(torch.stack([w.t() for w in weights]).reshape(-1))
            parts.append(torch.stack(biases).reshape(-1))
        return torch.cat(parts)

    optimizer = dict(state[key])
    for moment in ("exp_avg", "exp_avg_sq"):
        optimizer[moment] = convert(optimizer[moment])
    return {**state, key: optimizer}


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
