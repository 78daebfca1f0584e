"""Proximal Policy Optimisation (Schulman et al. 2017) with GAE, on rollouts of a vector env."""

from functools import partial

from shoal.agents.base import Agent, Layout
from shoal.agents.ppo.actor import PPOPolicy
from shoal.agents.ppo.config import PPOConfig, validate
from shoal.agents.ppo.learner import PPOLearner
from shoal.agents.ppo.networks import make_networks
from shoal.data import DataPath, UnrollQueue
from shoal.envs.spec import EnvSpec


def _queue(actors: int, shards: int, seed: int) -> UnrollQueue:
    return UnrollQueue(batch=actors, capacity=actors, on_policy=True)


def make_data_path(spec: EnvSpec, config: PPOConfig, layout: Layout) -> DataPath:
    """On-policy: one rollout of every actor's envs per update, all acted by the weights being
    learned from; acting waits for learning, so inline runs act and learn in turn."""
    return DataPath(
        unroll_length=config.rollout_length,
        make_table=partial(_queue, layout.actors),
        overlap=False,
    )


AGENT = Agent(
    name="ppo",
    config_cls=PPOConfig,
    make_networks=make_networks,
    make_policy=PPOPolicy,
    make_learner=PPOLearner,
    make_data_path=make_data_path,
    validate=validate,
    mutable=frozenset(
        {
            "learning_rate",
            "entropy_coef",
            "value_coef",
            "clip_eps",
            "gamma",
            "gae_lambda",
            "max_grad_norm",
            "num_epochs",
            "target_kl",
        }
    ),
)

__all__ = ["AGENT", "PPOConfig"]
