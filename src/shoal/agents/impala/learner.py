"""IMPALA's learner: the V-trace family's (`VTraceLearner`), one gradient step of the IMPALA
loss per batch of unrolls."""

from __future__ import annotations

from shoal.agents.impala.config import IMPALAConfig
from shoal.agents.impala.loss import Batch, LossResult, impala_loss
from shoal.agents.vtrace_ac import VTraceLearner


class IMPALALearner(VTraceLearner):
    """Owns the optimiser; `update` takes one unroll or a list of them (stacked along B)."""

    config: IMPALAConfig

    def loss(self, batch: Batch) -> LossResult:
        return impala_loss(self.net, batch, self.config)
