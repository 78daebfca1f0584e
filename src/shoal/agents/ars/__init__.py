"""Augmented random search (Mania et al. 2018), V2-t: a linear policy on normalised states,
mirrored directions from a shared noise table, the top b directions per update.

It shares evolution strategies' acting and data path (`shoal.agents.evolution`): actors send
(noise offset, sign, return, length) per episode, and the learner rebuilds the directions.
"""

import numpy as np

from shoal.agents.ars.config import ARSConfig
from shoal.agents.ars.learner import ARSLearner
from shoal.agents.base import Agent
from shoal.agents.evolution import (
    PerturbableMLP,
    PerturbedPolicy,
    check_flat_observations,
    make_data_path,
)
from shoal.envs.spec import EnvSpec


def make_networks(spec: EnvSpec, config: ARSConfig) -> PerturbableMLP:
    """M, a linear map of the normalised state (no bias, starting at zero, as the paper)."""
    obs_dim = check_flat_observations(spec, "ars")
    out = spec.num_actions if spec.discrete else int(np.prod(spec.action_shape))
    return PerturbableMLP(
        obs_dim,
        (),
        out,
        bias=False,
        zero_init=True,
        obs_clip=config.obs_clip,
        normalize_obs=config.normalize_obs,
    )


AGENT = Agent(
    name="ars",
    config_cls=ARSConfig,
    make_networks=make_networks,
    make_policy=PerturbedPolicy,
    make_learner=ARSLearner,
    make_data_path=make_data_path,
)

__all__ = ["AGENT", "ARSConfig"]
