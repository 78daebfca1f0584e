"""REINFORCE's learner: one gradient step of `reinforce_loss` per batch of unrolls."""

from __future__ import annotations

from shoal.agents.actor_critic import ActorCritic
from shoal.agents.base import NetworkLearner, Unroll, Update
from shoal.agents.common import LearningRateSchedule
from shoal.agents.pg.config import PGConfig
from shoal.agents.pg.loss import reinforce_loss
from shoal.envs.spec import EnvSpec
from shoal.optim import Adam


class PGLearner(NetworkLearner):
    net: ActorCritic

    def __init__(self, spec: EnvSpec, config: PGConfig, net: ActorCritic) -> None:
        self.config, self.net = config, net
        self.optimizer = Adam(net.parameters(), lr=config.learning_rate)
        self.version = 0

    def update(self, batch: Unroll, progress: float) -> Update:
        config = self.config
        schedule = LearningRateSchedule(base=config.learning_rate, anneal=config.anneal_lr)
        self.optimizer.lr = schedule.value(progress)
        loss, metrics, obs = reinforce_loss(self.net, batch, config)
        self.optimizer.zero_grad()
        loss.backward()
        if config.max_grad_norm > 0:
            metrics["grad_norm"] = float(self.optimizer.clip_grad_norm(config.max_grad_norm))
        self.optimizer.step()
        if self.net.obs_norm is not None:
            # After the step, so it saw the normalisation the actors acted with.
            self.net.obs_norm.update(obs)
        self.version += 1
        metrics["learning_rate"] = self.optimizer.lr
        return Update(metrics)
