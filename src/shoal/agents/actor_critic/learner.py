"""The family's one-step learner: one Adam step of an agent's loss per batch of unrolls (A2C's
n-step actor-critic loss, REINFORCE's), the learning rate annealed and the gradient clipped as
the config says."""

from __future__ import annotations

from typing import Any, Protocol

import torch

from shoal.agents.actor_critic.config import LossWeightsConfig
from shoal.agents.actor_critic.networks import ActorCritic
from shoal.agents.base import NetworkLearner, Unroll, Update
from shoal.agents.common import LearningRateSchedule
from shoal.envs.spec import EnvSpec
from shoal.optim import Adam

__all__ = ["LossFn", "OneStepLearner"]


class LossFn(Protocol):
    """`(net, unroll, config) -> (loss, metrics, observations)`: the scalar loss of an unroll
    `[T, B]`, its diagnostics, and the observations it saw flattened `[T B, ...]` (which
    update the network's observation statistics after the step)."""

    def __call__(
        self, net: ActorCritic, unroll: Unroll, config: Any
    ) -> tuple[torch.Tensor, dict[str, Any], Any]: ...


class OneStepLearner(NetworkLearner):
    """One gradient step of `loss_fn` per batch. It reads `learning_rate`, `anneal_lr` and
    `max_grad_norm` (0: no clipping) from `self.config` at every update, so PBT may change
    them in place; the metrics add `grad_norm` (before clipping, when clipping) and
    `learning_rate`."""

    net: ActorCritic

    def __init__(
        self, spec: EnvSpec, config: LossWeightsConfig, net: ActorCritic, loss_fn: LossFn
    ) -> None:
        self.config, self.net, self.loss_fn = config, net, loss_fn
        self.optimizer = Adam(net.parameters(), lr=config.learning_rate)
        self.version = 0

    def update(self, batch: Unroll, progress: float) -> Update:
        config = self.config
        schedule = LearningRateSchedule(base=config.learning_rate, anneal=config.anneal_lr)
        self.optimizer.lr = schedule.value(progress)
        loss, metrics, obs = self.loss_fn(self.net, batch, config)
        self.optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        if config.max_grad_norm > 0:
            metrics["grad_norm"] = float(self.optimizer.clip_grad_norm(config.max_grad_norm))
        self.optimizer.step()
        if self.net.obs_norm is not None:
            # After the step, so it saw the normalisation the actors acted with.
            self.net.obs_norm.update(obs)
        self.version += 1
        metrics["learning_rate"] = self.optimizer.lr
        return Update(metrics)
