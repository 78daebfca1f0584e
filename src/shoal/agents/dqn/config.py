"""DQN's settings: the value family's transition config (`shoal.agents.value.config`)."""

from shoal.agents.value.config import DQNConfig, apex_epsilon

__all__ = ["DQNConfig", "apex_epsilon"]
