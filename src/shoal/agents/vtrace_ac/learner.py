"""The V-trace family's learner: Adam over the network, `epochs()` gradient steps of the agent's
loss per batch of unrolls, one published version per batch (IMPALA: one step; APPO:
`num_epochs`, with its target network and KL weight in `after_step`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

import torch

from shoal.agents.base import NetworkLearner, Unroll, Update, concat_unrolls
from shoal.agents.common import LearningRateSchedule
from shoal.agents.vtrace_ac.batch import Batch
from shoal.agents.vtrace_ac.config import VTraceConfig
from shoal.agents.vtrace_ac.networks import VTraceNet
from shoal.envs.spec import EnvSpec
from shoal.optim import Adam

__all__ = ["StepLoss", "VTraceLearner"]


class StepLoss(Protocol):
    """What an agent's loss returns (its `LossResult`): the scalar to step on and its metrics."""

    @property
    def loss(self) -> torch.Tensor: ...  # scalar, differentiable

    @property
    def metrics(self) -> Mapping[str, torch.Tensor]: ...  # detached scalars


class VTraceLearner(NetworkLearner):
    """Owns the optimiser; `update` takes one unroll or a list of them (stacked along B).

    An agent gives `loss` (its loss of a batch under `self.net`) and may change `epochs`
    (gradient steps per batch: 1), `after_step` (called after each step with its loss) and
    `extra_metrics` (added after the learning rate). The learning rate, its annealing and the
    gradient clip are read from `self.config` at every update, so PBT may change them in place;
    the metrics are the last step's loss metrics, `grad_norm` and `learning_rate`."""

    config: VTraceConfig
    net: VTraceNet

    def __init__(self, spec: EnvSpec, config: VTraceConfig, net: VTraceNet) -> None:
        self.config = config
        self.net = net
        # Adam, not the paper's RMSProp: shoal's flat-buffer Adam is a few kernels per step.
        self.optimizer = Adam(net.parameters(), lr=config.learning_rate, eps=1e-5)
        self.version = 0

    def loss(self, batch: Batch) -> StepLoss:
        """The agent's loss of `batch` (on the network's device) under the current weights."""
        raise NotImplementedError

    def epochs(self) -> int:
        """Gradient steps on each batch."""
        return 1

    def after_step(self, result: StepLoss) -> None:
        """Called after each gradient step with the loss it stepped on."""

    def extra_metrics(self) -> dict[str, float]:
        """The agent's own metrics of an update, after the learning rate."""
        return {}

    def update(self, batch: Unroll | Sequence[Unroll], progress: float) -> Update:
        """`epochs()` gradient steps on `batch`; `progress` in [0, 1] anneals the step size."""
        unroll = batch if isinstance(batch, Unroll) else self.stack(batch)
        config = self.config
        schedule = LearningRateSchedule(base=config.learning_rate, anneal=config.anneal_lr)
        learning_rate = schedule.value(progress)
        self.optimizer.lr = learning_rate

        device = next(self.net.parameters()).device
        tensors = Batch.from_unroll(unroll).to(device)
        metrics: dict[str, float] = {}
        for _ in range(self.epochs()):
            result = self.loss(tensors)
            self.optimizer.zero_grad()
            result.loss.backward()  # type: ignore[no-untyped-call]
            # With max_grad_norm = 0 the infinite bound leaves gradients as they are.
            grad_norm = self.optimizer.clip_grad_norm(config.max_grad_norm or math.inf)
            self.optimizer.step()
            self.after_step(result)
            metrics = {key: float(value) for key, value in result.metrics.items()}
            metrics["grad_norm"] = float(grad_norm)
        self.version += 1
        metrics["learning_rate"] = learning_rate
        metrics.update(self.extra_metrics())
        return Update(metrics)

    @classmethod
    def stack(cls, unrolls: Sequence[Unroll]) -> Unroll:
        """Unrolls of one length side by side: `[T, B1], [T, B2], ... -> [T, B1 + B2 + ...]`."""
        unrolls = list(unrolls)
        if not unrolls:
            raise ValueError(f"{cls.__name__}.update got an empty list of unrolls.")
        return concat_unrolls(unrolls)
