"""TD3's networks: a deterministic tanh actor and twin Q critics, each an MLP after a torso.

As in Stable-Baselines3's TD3: the observation goes through a torso (for vectors just a
flatten, for images a CNN), the actor's MLP ends in tanh, and each critic's MLP takes the
torso's features with the action. The torso, the MLPs and the twin critics are the continuous
family's.
"""

from __future__ import annotations

from torch import nn

from shoal.agents.continuous import DeterministicActor, TwinQ, check_bounded_actions
from shoal.agents.continuous.networks import check_actor_and_critic_fit
from shoal.agents.td3.config import TD3Config
from shoal.envs.spec import EnvSpec


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


def check_fits(net: nn.Module, spec: EnvSpec) -> None:
    """Reject, before training, networks whose outputs do not fit the spaces."""
    check_actor_and_critic_fit("TD3", net, spec)
