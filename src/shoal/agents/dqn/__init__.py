"""DQN (Mnih et al. 2015) with double Q, dueling heads, n-step returns and prioritised replay.

Actors assemble n-step transitions and their initial priorities (`data.py`); a rate-limited
replay keeps the learner at a fixed replay ratio. `shoal.agents.apex` is the same agent with
Ape-X's per-actor exploration for many actors.
"""

from shoal.agents.base import Agent
from shoal.agents.dqn.actor import DQNPolicy
from shoal.agents.dqn.config import DQNConfig
from shoal.agents.dqn.data import make_data_path
from shoal.agents.dqn.learner import DQNLearner
from shoal.agents.dqn.networks import make_networks

AGENT = Agent(
    name="dqn",
    config_cls=DQNConfig,
    make_networks=make_networks,
    make_policy=DQNPolicy,
    make_learner=DQNLearner,
    make_data_path=make_data_path,
    # What the learner reads from its config at each update, and the exploration rates the
    # acting policy reads at each step (`DQNPolicy.apply_settings`). Gamma is not here: the
    # actors' n-step returns already in replay were discounted with the old one.
    mutable=frozenset(
        {
            "learning_rate",
            "max_grad_norm",
            "huber_delta",
            "epsilon_start",
            "epsilon_end",
            "epsilon_decay_steps",
            "apex_epsilon",
            "apex_alpha",
        }
    ),
)

__all__ = ["AGENT", "DQNConfig"]
