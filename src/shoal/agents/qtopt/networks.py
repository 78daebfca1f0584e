"""QT-Opt's network: one Q-function `Q(s, a)`, an MLP on the torso's features and the action
(Kalashnikov et al. 2018, section 4: no actor; the policy is CEM's argmax of Q). The torso and
the MLP are the continuous family's.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from shoal import ops
from shoal.agents.continuous import action_dim, check_bounded_actions, make_torso, mlp
from shoal.agents.qtopt.config import QTOptConfig
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.tree import map_tree


class QFunction(nn.Module):
    """`(obs [B, ...], action [B, D])` -> `Q [B]`; `features` and `values` split it so that CEM
    encodes each state once and values many actions at it."""

    def __init__(self, spec: EnvSpec, config: QTOptConfig) -> None:
        super().__init__()
        self.torso = make_torso(spec, config)
        width = int(self.torso.out_features) + action_dim(spec)
        self.body = mlp(width, config.hidden_sizes, 1, config.activation)

    def features(self, obs: Any) -> torch.Tensor:
        """The torso's features `[B, F]`."""
        return self.torso(obs)

    def values(self, features: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Q at `features [B, F]` of each of `actions [B, N, D]`: `[B, N]`."""
        b, n = actions.shape[:2]
        x = torch.cat([features[:, None].expand(b, n, -1), actions.reshape(b, n, -1)], dim=-1)
        return self.body(x).squeeze(-1)

    def forward(self, obs: Any, action: torch.Tensor) -> torch.Tensor:
        return self.values(self.features(obs), action.reshape(len(action), 1, -1))[:, 0]


class QTOptNet(nn.Module):
    """`q`, the Q-function: all that acting and `shoal.load` need."""

    def __init__(self, spec: EnvSpec, config: QTOptConfig) -> None:
        super().__init__()
        check_bounded_actions(spec, "QT-Opt")
        self.q = QFunction(spec, config)


def make_networks(spec: EnvSpec, config: QTOptConfig) -> QTOptNet:
    net = QTOptNet(spec, config)
    check_fits(net, spec)
    return net


@torch.no_grad()
def check_fits(net: QTOptNet, spec: EnvSpec) -> None:
    """Reject, before training, a Q-function whose output for 2 observations is not `[2]`."""
    obs = map_tree(torch.as_tensor, spec.sample_obs(2))
    try:
        shape = tuple(net.q(obs, torch.zeros(2, action_dim(spec))).shape)
    except (RuntimeError, ValueError) as err:
        raise ConfigError(
            f"The QT-Opt network does not fit {spec.env_id}: a batch of 2 observations failed "
            f"with {type(err).__name__}: {err}"
        ) from err
    if shape != (2,):
        raise ConfigError(
            f"The QT-Opt network does not fit {spec.env_id}: for 2 observations Q gave shape "
            f"{shape}, expected (2,)."
        )


def cem_argmax(
    q: QFunction,
    obs: Any,
    config: QTOptConfig,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """CEM's `argmax_a Q(s, a)` over [-1, 1]^D (`shoal.ops.cem_maximize`, with the config's
    samples, iterations and elites) and Q there: `[B, D]` and `[B]`, without gradients."""
    with torch.no_grad():
        features = q.features(obs)
        d = q.body[0].in_features - features.shape[-1]
        shape = (config.cem_iterations, len(features), config.cem_samples, d)
        noise = torch.randn(shape, generator=generator, device=features.device)
        found = ops.cem_maximize(
            lambda actions: q.values(features, actions), noise, num_elites=config.cem_elites
        )
    return found.action, found.value
