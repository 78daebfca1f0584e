"""DQN (Mnih et al. 2015) with double Q, dueling heads, n-step returns and prioritised replay.

Built from the value family (`shoal.agents.value`): actors assemble n-step transitions and their
initial priorities (`value.transitions`); a rate-limited replay keeps the learner (`QLearner`
with `dqn_loss`) at a fixed replay ratio. `shoal.agents.apex` is the same agent with Ape-X's
per-actor exploration for many actors.
"""

from shoal.agents.base import Agent
from shoal.agents.value import (
    MUTABLE_SETTINGS,
    DQNConfig,
    DQNPolicy,
    QLearner,
    make_q_networks,
    make_transition_data_path,
)

AGENT = Agent(
    name="dqn",
    config_cls=DQNConfig,
    make_networks=make_q_networks,
    make_policy=DQNPolicy,
    make_learner=QLearner,
    make_data_path=make_transition_data_path,
    mutable=MUTABLE_SETTINGS,
)

__all__ = ["AGENT", "DQNConfig"]
