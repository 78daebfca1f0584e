"""REINFORCE's learner: one gradient step of `reinforce_loss` per batch of unrolls (the family's
`OneStepLearner`)."""

from __future__ import annotations

from shoal.agents.actor_critic import ActorCritic, OneStepLearner
from shoal.agents.pg.config import PGConfig
from shoal.agents.pg.loss import reinforce_loss
from shoal.envs.spec import EnvSpec


class PGLearner(OneStepLearner):
    def __init__(self, spec: EnvSpec, config: PGConfig, net: ActorCritic) -> None:
        super().__init__(spec, config, net, reinforce_loss)
