"""SAC's data path: the continuous family's transition path (`shoal.agents.continuous.data`)."""

from shoal.agents.continuous.data import ReplaySettings, make_data_path, make_replay

__all__ = ["ReplaySettings", "make_data_path", "make_replay"]
