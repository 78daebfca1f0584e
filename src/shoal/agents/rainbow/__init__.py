"""Rainbow (Hessel et al. 2018, "Rainbow: Combining Improvements in Deep Reinforcement Learning").

The value family's transition agent (`shoal.agents.value`, as DQN and Ape-X) with its six
improvements on: a categorical return distribution (C51, Bellemare et al. 2017) learned by the
cross-entropy of the projected n-step target (`shoal.ops.categorical_double_q_learning`), noisy
layers for exploration (Fortunato et al. 2018, `shoal.nets.NoisyLinear`), dueling streams,
double Q, n-step returns, and replay prioritised by the KL divergence of the loss. Every part
can be switched off for an ablation (`--agent.noisy false`, `--agent.distributional false`, ...).
"""

from shoal.agents.base import Agent
from shoal.agents.rainbow.config import RainbowConfig
from shoal.agents.value import (
    MUTABLE_SETTINGS,
    DQNPolicy,
    QLearner,
    make_q_networks,
    make_transition_data_path,
)

AGENT = Agent(
    name="rainbow",
    config_cls=RainbowConfig,
    make_networks=make_q_networks,
    make_policy=DQNPolicy,
    make_learner=QLearner,
    make_data_path=make_transition_data_path,
    mutable=MUTABLE_SETTINGS,
)

__all__ = ["AGENT", "RainbowConfig"]
