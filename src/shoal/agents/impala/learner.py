"""IMPALA's learner: one gradient step of the V-trace actor-critic loss per batch of unrolls."""

from __future__ import annotations

import math
from collections.abc import Sequence

from shoal.agents.base import NetworkLearner, Unroll, Update, concat_unrolls
from shoal.agents.common import LearningRateSchedule
from shoal.agents.impala.config import IMPALAConfig
from shoal.agents.impala.loss import Batch, impala_loss
from shoal.agents.impala.networks import IMPALANet
from shoal.envs.spec import EnvSpec
from shoal.optim import Adam


class IMPALALearner(NetworkLearner):
    """Owns the optimiser; `update` takes one unroll or a list of them (stacked along B)."""

    def __init__(self, spec: EnvSpec, config: IMPALAConfig, net: IMPALANet) -> None:
        self.config = config
        self.net = net
        # Adam, not the paper's RMSProp: shoal's flat-buffer Adam is a few kernels per step.
        self.optimizer = Adam(net.parameters(), lr=config.learning_rate, eps=1e-5)
        self.version = 0

    def update(self, batch: Unroll | Sequence[Unroll], progress: float) -> Update:
        """One gradient step on `batch`; `progress` in [0, 1] anneals the learning rate."""
        unroll = batch if isinstance(batch, Unroll) else self.stack(batch)
        config = self.config
        schedule = LearningRateSchedule(base=config.learning_rate, anneal=config.anneal_lr)
        learning_rate = schedule.value(progress)
        self.optimizer.lr = learning_rate

        device = next(self.net.parameters()).device
        result = impala_loss(self.net, Batch.from_unroll(unroll).to(device), config)
        self.optimizer.zero_grad()
        result.loss.backward()
        # With max_grad_norm = 0 the infinite bound leaves gradients as they are.
        grad_norm = self.optimizer.clip_grad_norm(config.max_grad_norm or math.inf)
        self.optimizer.step()
        self.version += 1
        metrics = {key: float(value) for key, value in result.metrics.items()}
        metrics["grad_norm"] = float(grad_norm)
        metrics["learning_rate"] = learning_rate
        return Update(metrics)

    @staticmethod
    def stack(unrolls: Sequence[Unroll]) -> Unroll:
        """Unrolls of one length side by side: `[T, B1], [T, B2], ... -> [T, B1 + B2 + ...]`."""
        unrolls = list(unrolls)
        if not unrolls:
            raise ValueError("IMPALALearner.update got an empty list of unrolls.")
        return concat_unrolls(unrolls)
