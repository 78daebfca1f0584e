"""A3C: asynchronous advantage actor-critic (Mnih et al. 2016).

Each actor syncs the newest weights, acts `unroll_length` steps, computes the gradient of
the n-step actor-critic loss on its own data (its adder, with its copy of the network) and
sends the gradient, not the data; the learner applies gradients as they arrive, dropping those
staler than `max_staleness` versions. The network, policy and loss are the actor-critic
family's (`shoal.agents.actor_critic`), as PPO's and A2C's.
"""

from shoal.agents.a3c.config import A3CConfig
from shoal.agents.a3c.data import make_data_path
from shoal.agents.a3c.learner import A3CLearner
from shoal.agents.actor_critic import PPOPolicy, make_networks
from shoal.agents.base import Agent

AGENT = Agent(
    name="a3c",
    config_cls=A3CConfig,
    make_networks=make_networks,
    make_policy=PPOPolicy,
    make_learner=A3CLearner,
    make_data_path=make_data_path,
)

__all__ = ["AGENT", "A3CConfig"]
