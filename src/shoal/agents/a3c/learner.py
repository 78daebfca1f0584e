"""A3C's learner: applies each actor's gradient as it arrives (Mnih et al. 2016, Algorithm S3,
with the shared parameters held by one learner rather than by lock-free threads)."""

from __future__ import annotations

from typing import Any

import torch

from shoal.agents.a3c.config import A3CConfig
from shoal.agents.actor_critic import ActorCritic
from shoal.agents.base import NetworkLearner, Update
from shoal.agents.common import LearningRateSchedule
from shoal.envs.spec import EnvSpec
from shoal.optim import Adam


class A3CLearner(NetworkLearner):
    def __init__(self, spec: EnvSpec, config: A3CConfig, net: ActorCritic) -> None:
        self.config, self.net = config, net
        self.optimizer = Adam(net.parameters(), lr=config.learning_rate)
        self.version = 0

    def update(self, batch: dict[str, Any], progress: float) -> Update:
        gradient = torch.as_tensor(batch["gradient"])
        if gradient.shape != self.optimizer.flat_grad.shape:
            raise ValueError(
                f"a gradient of {gradient.numel()} values reached a learner of "
                f"{self.optimizer.flat_grad.numel()} parameters: actors and learner were built "
                "with different networks."
            )
        staleness = self.version - int(batch["version"])
        if self.config.anneal_lr:
            schedule = LearningRateSchedule(base=self.config.learning_rate, anneal=True)
            self.optimizer.lr = schedule.value(progress)
        self.optimizer.flat_grad.copy_(gradient)
        metrics = dict(batch["metrics"])
        if self.config.max_grad_norm > 0:
            metrics["grad_norm"] = float(self.optimizer.clip_grad_norm(self.config.max_grad_norm))
        self.optimizer.step()
        self.version += 1
        metrics["staleness"] = float(staleness)
        return Update(metrics)
