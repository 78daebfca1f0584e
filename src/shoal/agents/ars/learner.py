"""The ARS learner: the top-b directions' update of one iteration (V2-t).

Mania et al. 2018, Algorithm 2: with the returns of the N mirrored pairs, keep the b
directions with the largest `max(r+, r-)`, move M by `alpha / (b sigma_R) sum (r+ - r-) delta`
(`ops.ars_direction`), and merge the states the actors saw into the normalisation (V2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from shoal import ops
from shoal.agents.ars.config import ARSConfig
from shoal.agents.base import Update, Weights
from shoal.agents.evolution import (
    PerturbableMLP,
    merge_moments,
    noise_table,
    perturbations,
    population_metrics,
)
from shoal.envs.spec import EnvSpec


class ARSLearner:
    def __init__(self, spec: EnvSpec, config: ARSConfig, net: PerturbableMLP) -> None:
        self.config, self.net = config, net
        self.noise = noise_table(config.noise_seed, config.noise_table_size)
        self.version = 0

    def update(self, batch: dict[str, Any], progress: float) -> Update:
        config, net = self.config, self.net
        eps = perturbations(self.noise, batch["noise_offset"], net.num_params)
        top_b = min(config.top_directions, len(batch["noise_offset"]))
        found = ops.ars_direction(
            torch.from_numpy(eps).double(),
            torch.from_numpy(batch["return_pos"]),
            torch.from_numpy(batch["return_neg"]),
            top_b,
        )
        step = config.step_size * found.direction
        net.add_to_params(step)
        merge_moments(net, batch)
        self.version += 1
        net.iteration.fill_(self.version)
        metrics = population_metrics(batch)
        metrics["reward_std"] = float(found.reward_std)
        metrics["step_norm"] = float(step.norm())
        return Update(metrics)

    def weights(self) -> Weights:
        return {k: v.detach().to("cpu", copy=True) for k, v in self.net.state_dict().items()}

    def state_dict(self) -> dict[str, Any]:
        return {"network": self.net.state_dict(), "version": self.version}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.net.load_state_dict(state["network"])
        self.version = int(state["version"])


__all__ = ["ARSLearner"]
