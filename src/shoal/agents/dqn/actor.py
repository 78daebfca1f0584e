"""DQN's actor side: the value family's epsilon-greedy policy (`shoal.agents.value.policy`)."""

from shoal.agents.value.policy import DQNPolicy, initial_priorities

__all__ = ["DQNPolicy", "initial_priorities"]
