"""Evolution strategies (Salimans et al. 2017) as OpenAI ran them: a shared noise table,
mirrored sampling, centred ranks, observation normalisation, Adam and L2 decay.

Actors evaluate perturbations (`PerturbedPolicy`: each env acts with its own) and send
(noise offset, sign, return, length) per episode; the learner rebuilds the perturbations from
its copy of the noise table. What an actor sends does not grow with the network.
"""

import numpy as np

from shoal.agents.base import Agent
from shoal.agents.es.config import ESConfig
from shoal.agents.es.learner import ESLearner
from shoal.agents.evolution import (
    PerturbableMLP,
    PerturbedPolicy,
    check_flat_observations,
    make_data_path,
)
from shoal.envs.spec import EnvSpec


def make_networks(spec: EnvSpec, config: ESConfig) -> PerturbableMLP:
    obs_dim = check_flat_observations(spec, "es")
    out = spec.num_actions if spec.discrete else int(np.prod(spec.action_shape))
    return PerturbableMLP(
        obs_dim,
        config.hidden_sizes,
        out,
        config.activation,
        obs_clip=config.obs_clip,
        normalize_obs=config.normalize_obs,
    )


AGENT = Agent(
    name="es",
    config_cls=ESConfig,
    make_networks=make_networks,
    make_policy=PerturbedPolicy,
    make_learner=ESLearner,
    make_data_path=make_data_path,
)

__all__ = ["AGENT", "ESConfig"]
