"""R2D2 (Kapturowski et al. 2019, "Recurrent Experience Replay in Distributed Reinforcement
Learning"): Ape-X's distributed prioritised replay with an LSTM Q-network.

Actors act epsilon-greedily with their own LSTM state per env and cut their experience into
overlapping fixed-length sequences that store the state at their first step, with initial
priorities (`R2D2Policy.prepare`). The learner replays sequences, warms the stored state by a
burn-in, and learns transformed n-step double-Q targets (`loss.py`), with DQN's replay-ratio
learner (`learner.py`). The policy keeps per-row state, so it also serves central inference.
"""

from shoal.agents.base import Agent
from shoal.agents.r2d2.actor import R2D2EvalPolicy, R2D2Policy
from shoal.agents.r2d2.config import R2D2Config
from shoal.agents.r2d2.learner import R2D2Learner, make_replay
from shoal.agents.r2d2.networks import make_networks

AGENT = Agent(
    name="r2d2",
    config_cls=R2D2Config,
    make_networks=make_networks,
    make_policy=R2D2Policy,
    make_learner=R2D2Learner,
    make_eval_policy=R2D2EvalPolicy,
    data="replay",
    unroll_length=lambda config: config.unroll_length,
    # Replay learns from old experience by design: actors never wait for an update.
    on_policy=False,
    make_replay=make_replay,
)

__all__ = ["AGENT", "R2D2Config"]
