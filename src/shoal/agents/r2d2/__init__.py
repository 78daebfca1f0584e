"""R2D2 (Kapturowski et al. 2019, "Recurrent Experience Replay in Distributed Reinforcement
Learning"): Ape-X's distributed prioritised replay with an LSTM Q-network.

Actors act epsilon-greedily with their own LSTM state per env (held by the runtime) and cut
their experience into overlapping fixed-length sequences that store the state at their first
step, with initial priorities (`data.py`). The learner replays sequences, warms
the stored state by a burn-in, and learns transformed n-step double-Q targets (`loss.py`).
"""

from shoal.agents.base import Agent
from shoal.agents.r2d2.actor import R2D2Policy
from shoal.agents.r2d2.config import R2D2Config
from shoal.agents.r2d2.data import make_data_path
from shoal.agents.r2d2.learner import R2D2Learner
from shoal.agents.r2d2.networks import make_networks

AGENT = Agent(
    name="r2d2",
    config_cls=R2D2Config,
    make_networks=make_networks,
    make_policy=R2D2Policy,
    make_learner=R2D2Learner,
    make_data_path=make_data_path,
)

__all__ = ["AGENT", "R2D2Config"]
