"""DDPG (Lillicrap et al. 2016, "Continuous control with deep reinforcement learning",
arXiv:1509.02971): a deterministic actor trained by the deterministic policy gradient through one
Q critic, Polyak-averaged target networks, and Gaussian or Ornstein-Uhlenbeck exploration noise,
learning off-policy from a rate-limited replay of one-step transitions (the continuous family's
data path).
"""

from shoal.agents.base import Agent
from shoal.agents.continuous import make_data_path
from shoal.agents.ddpg.actor import DDPGPolicy
from shoal.agents.ddpg.config import DDPGConfig
from shoal.agents.ddpg.learner import DDPGLearner
from shoal.agents.ddpg.networks import make_networks

AGENT = Agent(
    name="ddpg",
    config_cls=DDPGConfig,
    make_networks=make_networks,
    make_policy=DDPGPolicy,
    make_learner=DDPGLearner,
    make_data_path=make_data_path,
)

__all__ = ["AGENT", "DDPGConfig"]
