"""What ES's and ARS's learners do alike with a batch of mirrored pairs: report the population,
merge the observation moments."""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal.agents.evolution.networks import PerturbableMLP

__all__ = ["merge_moments", "population_metrics"]


def population_metrics(batch: dict[str, Any]) -> dict[str, float]:
    """The metrics of one iteration's population of mirrored pairs (ES's and ARS's)."""
    returns = np.concatenate([batch["return_pos"], batch["return_neg"]])
    lengths = np.concatenate([batch["length_pos"], batch["length_neg"]])
    return {
        "population_return_mean": float(returns.mean()),
        "population_return_max": float(returns.max()),
        "population_length_mean": float(lengths.mean()),
        "pairs": float(len(batch["noise_offset"])),
    }


def merge_moments(net: PerturbableMLP, batch: dict[str, Any]) -> None:
    """Merge the observation moments the actors reported into the network's normalisation."""
    if net.normalize_obs and "obs_count" in batch:
        net.merge_obs_moments(batch["obs_sum"], batch["obs_sumsq"], float(batch["obs_count"]))
