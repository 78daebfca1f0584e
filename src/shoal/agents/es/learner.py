"""The ES learner: the gradient estimate of one iteration's mirrored pairs, then Adam.

Salimans et al. 2017, Algorithm 2 as OpenAI's code runs it: the population's 2n returns are
replaced by their centred ranks, the gradient estimate is formed from the (offset, rank)
scalars and this process's copy of the noise table, L2 decay is added, Adam takes the step,
and the observation moments the actors reported are merged into the normalisation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from shoal import ops
from shoal.agents.base import NetworkLearner, Update
from shoal.agents.common import LearningRateSchedule
from shoal.agents.es.config import ESConfig
from shoal.agents.evolution import (
    PerturbableMLP,
    merge_moments,
    noise_table,
    perturbations,
    population_metrics,
)
from shoal.envs.spec import EnvSpec
from shoal.optim import Adam


class ESLearner(NetworkLearner):
    def __init__(self, spec: EnvSpec, config: ESConfig, net: PerturbableMLP) -> None:
        self.config, self.net = config, net
        self.noise = noise_table(config.noise_seed, config.noise_table_size)
        self.optimizer = Adam(net.parameters(), lr=config.learning_rate)
        self.version = 0

    def update(self, batch: dict[str, Any], progress: float) -> Update:
        config, net = self.config, self.net
        n = len(batch["noise_offset"])
        eps = torch.from_numpy(perturbations(self.noise, batch["noise_offset"], net.num_params))
        returns = torch.from_numpy(np.concatenate([batch["return_pos"], batch["return_neg"]]))
        ranks = ops.centered_ranks(returns)
        gradient = ops.es_gradient(eps, ranks[:n], ranks[n:], config.noise_std)
        theta = self.optimizer.flat
        if config.anneal_lr:
            schedule = LearningRateSchedule(base=config.learning_rate, anneal=True)
            self.optimizer.lr = schedule.value(progress)
        # Adam descends: the negated ascent direction, plus the L2 decay's gradient.
        self.optimizer.flat_grad.copy_(-gradient + config.l2_coef * theta)
        self.optimizer.step()
        merge_moments(net, batch)
        self.version += 1
        net.iteration.fill_(self.version)
        metrics = population_metrics(batch)
        metrics["gradient_norm"] = float(gradient.norm())
        metrics["theta_norm"] = float(theta.norm())
        return Update(metrics)


__all__ = ["ESLearner", "merge_moments", "population_metrics"]
