"""A2C: synchronous n-step advantage actor-critic (Mnih et al. 2016, as OpenAI Baselines' A2C).

Every actor's envs act T steps with the learner's current weights; the learner takes one
gradient step on the batch of all of them. The policy, network and on-policy unroll queue are
the actor-critic family's (`shoal.agents.actor_critic`), as PPO's; only the loss
(`n_step_advantage`) and the single step differ.
"""

from shoal.agents.a2c.config import A2CConfig
from shoal.agents.a2c.learner import A2CLearner
from shoal.agents.actor_critic import PPOPolicy, make_networks, on_policy_data_path
from shoal.agents.base import Agent, Layout
from shoal.data import DataPath
from shoal.envs.spec import EnvSpec


def make_data_path(spec: EnvSpec, config: A2CConfig, layout: Layout) -> DataPath:
    """PPO's: one unroll of every actor per update, acted by the weights being learned from."""
    return on_policy_data_path(spec, config, layout)  # reads only config.unroll_length


AGENT = Agent(
    name="a2c",
    config_cls=A2CConfig,
    make_networks=make_networks,
    make_policy=PPOPolicy,
    make_learner=A2CLearner,
    make_data_path=make_data_path,
    # Read by the learner at every update, so PBT may change them in place.
    mutable=frozenset({"learning_rate", "entropy_coef", "value_coef", "gamma", "max_grad_norm"}),
)

__all__ = ["AGENT", "A2CConfig"]
