"""TD3's networks: a deterministic tanh actor and twin Q critics, each an MLP after a torso.

As in Stable-Baselines3's TD3: the observation goes through a torso (for vectors just a
flatten, for images a CNN), the actor's MLP ends in tanh, and each critic's MLP takes the
torso's features with the action. The torso, the MLPs and the twin critics are the continuous
family's.
"""

from __future__ import annotations

import torch
from torch import nn

from shoal.agents.continuous import DeterministicActor, TwinQ, action_dim, check_bounded_actions
from shoal.agents.td3.config import TD3Config
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.tree import map_tree


class TD3Net(nn.Module):
    """The actor (`actor`, what acting needs) and the twin critics (`critic`)."""

    def __init__(self, spec: EnvSpec, config: TD3Config) -> None:
        super().__init__()
        check_bounded_actions(spec, "TD3")
        self.actor = DeterministicActor(spec, config)
        self.critic = TwinQ(spec, config)


def make_networks(spec: EnvSpec, config: TD3Config) -> TD3Net:
    net = TD3Net(spec, config)
    check_fits(net, spec)
    return net


@torch.no_grad()
def check_fits(net: TD3Net, spec: EnvSpec) -> None:
    """Reject, before training, networks whose outputs do not fit the spaces."""
    obs = map_tree(torch.as_tensor, spec.sample_obs(2))
    d = action_dim(spec)
    try:
        action = net.actor(obs)
        q1, q2 = net.critic(obs, torch.zeros(2, d))
    except (RuntimeError, ValueError) as err:
        raise ConfigError(
            f"The TD3 networks do not fit {spec.env_id}: a batch of 2 observations failed with "
            f"{type(err).__name__}: {err}"
        ) from err
    shapes = [tuple(x.shape) for x in (action, q1, q2)]
    if shapes != [(2, d), (2,), (2,)]:
        raise ConfigError(
            f"The TD3 networks do not fit {spec.env_id}: for 2 observations they gave action "
            f"and Q shapes {shapes}, expected [(2, {d}), (2,), (2,)]."
        )
