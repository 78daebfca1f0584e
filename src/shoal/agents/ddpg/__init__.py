"""DDPG (Lillicrap et al. 2016, "Continuous control with deep reinforcement learning",
arXiv:1509.02971): a deterministic actor trained by the deterministic policy gradient through one
Q critic, Polyak-averaged target networks, and Gaussian or Ornstein-Uhlenbeck exploration noise,
learning off-policy from a rate-limited replay of one-step transitions (the continuous family's
data path).

Ape-X DPG (Horgan et al. 2018) is this agent with n-step transitions (`n_step`), prioritised
replay whose actors give their own transitions their priorities (`prioritized`), a noise scale
per actor (`noise_schedule: apex`) and, on ray, replay sharded over `--replay-shards`.
"""

from functools import partial

from shoal.agents.base import Agent
from shoal.agents.continuous import make_data_path
from shoal.agents.ddpg.actor import DDPGPolicy
from shoal.agents.ddpg.config import DDPGConfig
from shoal.agents.ddpg.learner import DDPGLearner
from shoal.agents.ddpg.loss import initial_priorities
from shoal.agents.ddpg.networks import make_networks

AGENT = Agent(
    name="ddpg",
    config_cls=DDPGConfig,
    make_networks=make_networks,
    make_policy=DDPGPolicy,
    make_learner=DDPGLearner,
    make_data_path=partial(make_data_path, priorities=initial_priorities),
)

__all__ = ["AGENT", "DDPGConfig"]
