"""What evolution strategies and ARS share: the noise table, the perturbable network, the
policy that acts each env with its own perturbation, and the episode data path."""

from shoal.agents.evolution.data import EpisodeAdder, PairTable, make_data_path
from shoal.agents.evolution.networks import PerturbableMLP, check_flat_observations
from shoal.agents.evolution.noise import noise_table, perturbations
from shoal.agents.evolution.policy import PerturbedPolicy
from shoal.agents.evolution.population import merge_moments, population_metrics

__all__ = [
    "EpisodeAdder",
    "PairTable",
    "PerturbableMLP",
    "PerturbedPolicy",
    "check_flat_observations",
    "make_data_path",
    "merge_moments",
    "noise_table",
    "perturbations",
    "population_metrics",
]
