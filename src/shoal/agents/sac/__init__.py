"""Soft Actor-Critic (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications",
arXiv:1812.05905): a tanh-squashed Gaussian policy, twin Q critics with Polyak-averaged targets,
and a temperature tuned towards an entropy target, learning off-policy from a rate-limited
replay of one-step transitions (`data.py`).
"""

from shoal.agents.base import Agent
from shoal.agents.sac.actor import SACPolicy
from shoal.agents.sac.config import SACConfig
from shoal.agents.sac.data import make_data_path
from shoal.agents.sac.learner import SACLearner
from shoal.agents.sac.networks import make_networks

AGENT = Agent(
    name="sac",
    config_cls=SACConfig,
    make_networks=make_networks,
    make_policy=SACPolicy,
    make_learner=SACLearner,
    make_data_path=make_data_path,
)

__all__ = ["AGENT", "SACConfig"]
