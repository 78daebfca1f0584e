"""A2C's learner: one gradient step of the family's n-step actor-critic loss per batch of
unrolls (`OneStepLearner`)."""

from __future__ import annotations

from shoal.agents.a2c.config import A2CConfig
from shoal.agents.actor_critic import ActorCritic, OneStepLearner, actor_critic_loss
from shoal.envs.spec import EnvSpec


class A2CLearner(OneStepLearner):
    def __init__(self, spec: EnvSpec, config: A2CConfig, net: ActorCritic) -> None:
        super().__init__(spec, config, net, actor_critic_loss)
