"""DQN (Mnih et al. 2015) with double Q, dueling heads, n-step returns and prioritised replay.

Actors assemble n-step transitions and their initial priorities (`DQNPolicy.prepare`); the
learner keeps the replay and learns at a fixed replay ratio. `shoal.agents.apex` is the same
agent with Ape-X's per-actor exploration for many actors.
"""

from shoal.agents.base import Agent
from shoal.agents.dqn.actor import DQNEvalPolicy, DQNPolicy
from shoal.agents.dqn.config import DQNConfig
from shoal.agents.dqn.learner import DQNLearner, make_replay
from shoal.agents.dqn.networks import make_networks

AGENT = Agent(
    name="dqn",
    config_cls=DQNConfig,
    make_networks=make_networks,
    make_policy=DQNPolicy,
    make_learner=DQNLearner,
    make_eval_policy=DQNEvalPolicy,
    data="replay",
    unroll_length=lambda config: config.unroll_length,
    # Replay learns from old experience by design: actors never wait for an update.
    on_policy=False,
    make_replay=make_replay,
)

__all__ = ["AGENT", "DQNConfig"]
