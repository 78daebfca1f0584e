"""APPO's learner: `num_epochs` gradient steps of the APPO loss per batch of unrolls, a target
network copied every `target_update_period` steps, and the KL weight adapted as RLlib does."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import torch

from shoal import ops
from shoal.agents.appo.config import APPOConfig
from shoal.agents.appo.loss import Batch, appo_loss
from shoal.agents.base import NetworkLearner, Unroll, Update, concat_unrolls
from shoal.agents.common import DeclaredState, LearnerState, LearningRateSchedule, periodic_update
from shoal.agents.vtrace_ac import VTraceNet
from shoal.envs.spec import EnvSpec
from shoal.optim import Adam


class APPOLearner(DeclaredState, NetworkLearner):
    """Owns the optimiser, the target network (with `use_target_network`) and the KL weight;
    `update` takes one unroll or a list of them (stacked along B) and publishes one version."""

    def __init__(self, spec: EnvSpec, config: APPOConfig, net: VTraceNet) -> None:
        self.config = config
        self.net = net
        # The copy first: the flat-buffer Adam moves the parameters into one buffer.
        self.target = (
            copy.deepcopy(net).requires_grad_(False) if config.use_target_network else None
        )
        self.optimizer = Adam(net.parameters(), lr=config.learning_rate, eps=1e-5)
        device = next(net.parameters()).device
        self.kl_coeff = torch.tensor(float(config.kl_coeff), device=device)
        self.version = 0
        self.gradient_steps = 0

    def learner_state(self) -> LearnerState:
        modules: dict[str, torch.nn.Module] = {"network": self.net}
        if self.target is not None:
            modules["target_network"] = self.target
        return LearnerState(
            modules=modules,
            optimizers={"optimizer": self.optimizer},
            tensors={"kl_coeff": self.kl_coeff},
            counters=("version", "gradient_steps"),
        )

    def update(self, batch: Unroll | Sequence[Unroll], progress: float) -> Update:
        """`num_epochs` gradient steps on `batch`; `progress` in [0, 1] anneals the step size."""
        unroll = batch if isinstance(batch, Unroll) else self.stack(batch)
        config = self.config
        schedule = LearningRateSchedule(base=config.learning_rate, anneal=config.anneal_lr)
        learning_rate = schedule.value(progress)
        self.optimizer.lr = learning_rate

        device = next(self.net.parameters()).device
        tensors = Batch.from_unroll(unroll).to(device)
        metrics: dict[str, float] = {}
        for _ in range(config.num_epochs):
            result = appo_loss(self.net, tensors, config, float(self.kl_coeff), self.target)
            self.optimizer.zero_grad()
            result.loss.backward()
            # With max_grad_norm = 0 the infinite bound leaves gradients as they are.
            grad_norm = self.optimizer.clip_grad_norm(config.max_grad_norm or math.inf)
            self.optimizer.step()
            self.gradient_steps += 1
            if self.target is not None:
                periodic_update(
                    self.target, self.net, self.gradient_steps, config.target_update_period
                )
            if config.use_kl_loss and self.gradient_steps % config.target_update_period == 0:
                # RLlib adapts the weight when it updates the target network.
                self.kl_coeff.fill_(
                    ops.adaptive_kl_coefficient(
                        float(self.kl_coeff), float(result.kl), config.kl_target
                    )
                )
            metrics = {key: float(value) for key, value in result.metrics.items()}
            metrics["grad_norm"] = float(grad_norm)
        self.version += 1
        metrics["learning_rate"] = learning_rate
        if config.use_kl_loss:
            metrics["kl_coeff"] = float(self.kl_coeff)
        return Update(metrics)

    @staticmethod
    def stack(unrolls: Sequence[Unroll]) -> Unroll:
        """Unrolls of one length side by side: `[T, B1], [T, B2], ... -> [T, B1 + B2 + ...]`."""
        unrolls = list(unrolls)
        if not unrolls:
            raise ValueError("APPOLearner.update got an empty list of unrolls.")
        return concat_unrolls(unrolls)
