"""TD3 (Fujimoto et al. 2018, "Addressing Function Approximation Error in Actor-Critic
Methods", arXiv:1802.09477): a deterministic actor with Gaussian exploration noise, twin Q
critics (clipped double Q), delayed policy updates and target policy smoothing, learning
off-policy from a rate-limited replay of one-step transitions (the continuous family's data path).
"""

from shoal.agents.base import Agent
from shoal.agents.continuous import make_data_path
from shoal.agents.td3.actor import TD3Policy
from shoal.agents.td3.config import TD3Config
from shoal.agents.td3.learner import TD3Learner
from shoal.agents.td3.networks import make_networks

AGENT = Agent(
    name="td3",
    config_cls=TD3Config,
    make_networks=make_networks,
    make_policy=TD3Policy,
    make_learner=TD3Learner,
    make_data_path=make_data_path,
)

__all__ = ["AGENT", "TD3Config"]
