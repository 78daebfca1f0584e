"""DQN's network: the value family's Q-network (`shoal.agents.value.networks`)."""

from shoal.agents.value.networks import QNet, check_fits, make_networks

__all__ = ["QNet", "check_fits", "make_networks"]
