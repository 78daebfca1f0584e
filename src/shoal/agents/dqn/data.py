"""DQN's data path: the value family's transition path (`shoal.agents.value.transitions`)."""

from shoal.agents.value.replay import replay_table, stored_frame_stack
from shoal.agents.value.transitions import make_data_path, make_replay

__all__ = ["make_data_path", "make_replay", "replay_table", "stored_frame_stack"]
