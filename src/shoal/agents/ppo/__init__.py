"""Proximal Policy Optimisation (Schulman et al. 2017) with GAE, on rollouts of a vector env."""

from shoal.agents.base import Agent
from shoal.agents.ppo.actor import PPOEvalPolicy, PPOPolicy
from shoal.agents.ppo.config import PPOConfig, validate
from shoal.agents.ppo.learner import PPOLearner
from shoal.agents.ppo.networks import make_networks

AGENT = Agent(
    name="ppo",
    config_cls=PPOConfig,
    make_networks=make_networks,
    make_policy=PPOPolicy,
    make_learner=PPOLearner,
    make_eval_policy=PPOEvalPolicy,
    data="unroll",
    unroll_length=lambda config: config.rollout_length,
    validate=validate,
)

__all__ = ["AGENT", "PPOConfig"]
