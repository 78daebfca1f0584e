"""APPO's learner: the V-trace family's (`VTraceLearner`) with `num_epochs` gradient steps of
the APPO loss per batch of unrolls, a target network copied every `target_update_period` steps,
and the KL weight adapted as RLlib does."""

from __future__ import annotations

import copy

import torch

from shoal import ops
from shoal.agents.appo.config import APPOConfig
from shoal.agents.appo.loss import Batch, LossResult, appo_loss
from shoal.agents.common import DeclaredState, LearnerState, periodic_update
from shoal.agents.vtrace_ac import StepLoss, VTraceLearner, VTraceNet
from shoal.envs.spec import EnvSpec


class APPOLearner(DeclaredState, VTraceLearner):
    """Owns the optimiser, the target network (with `use_target_network`) and the KL weight;
    `update` takes one unroll or a list of them (stacked along B) and publishes one version."""

    config: APPOConfig

    def __init__(self, spec: EnvSpec, config: APPOConfig, net: VTraceNet) -> None:
        # The copy first: the flat-buffer Adam moves the parameters into one buffer.
        self.target = (
            copy.deepcopy(net).requires_grad_(False) if config.use_target_network else None
        )
        super().__init__(spec, config, net)
        device = next(net.parameters()).device
        self.kl_coeff = torch.tensor(float(config.kl_coeff), device=device)
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

    def loss(self, batch: Batch) -> LossResult:
        return appo_loss(self.net, batch, self.config, float(self.kl_coeff), self.target)

    def epochs(self) -> int:
        return self.config.num_epochs

    def after_step(self, result: StepLoss) -> None:
        config = self.config
        self.gradient_steps += 1
        if self.target is not None:
            periodic_update(self.target, self.net, self.gradient_steps, config.target_update_period)
        if config.use_kl_loss and self.gradient_steps % config.target_update_period == 0:
            # RLlib adapts the weight when it updates the target network.
            # Float noise makes a KL of two near-equal policies a hair below 0 (-6e-9 seen
            # resuming a CartPole run); it undershoots the target all the same.
            kl = max(float(result.metrics["kl"]), 0.0)
            self.kl_coeff.fill_(
                ops.adaptive_kl_coefficient(float(self.kl_coeff), kl, config.kl_target)
            )

    def extra_metrics(self) -> dict[str, float]:
        return {"kl_coeff": float(self.kl_coeff)} if self.config.use_kl_loss else {}
