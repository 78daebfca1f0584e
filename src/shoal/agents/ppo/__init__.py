"""Proximal Policy Optimisation (Schulman et al. 2017) with GAE, on rollouts of a vector env."""

from shoal.agents.actor_critic import PPOPolicy, make_networks, on_policy_data_path
from shoal.agents.base import Agent, Layout
from shoal.agents.common.league_policy import league_metrics, with_league
from shoal.agents.ppo.config import PPOConfig, validate
from shoal.agents.ppo.learner import PPOLearner
from shoal.data import DataPath
from shoal.envs.spec import EnvSpec


def make_data_path(spec: EnvSpec, config: PPOConfig, layout: Layout) -> DataPath:
    """On-policy: the actor-critic family's unroll queue (`on_policy_data_path`)."""
    return on_policy_data_path(spec, config, layout)


AGENT = Agent(
    name="ppo",
    config_cls=PPOConfig,
    make_networks=make_networks,
    make_policy=with_league(PPOPolicy),
    make_learner=PPOLearner,
    make_data_path=make_data_path,
    validate=validate,
    policy_metrics=league_metrics,
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
