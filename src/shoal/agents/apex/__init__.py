"""Ape-X (Horgan et al. 2018, "Distributed Prioritized Experience Replay").

The value family's transition agent (`shoal.agents.value`, as DQN) with Ape-X's defaults: actor
i of N explores with a fixed `epsilon^(1 + alpha * i / (N - 1))`, and on the ray launcher replay
lives in shards (Ray actors) that actors fill with n-step transitions and initial priorities
while the learner samples them and writes priorities back asynchronously.
"""

from dataclasses import dataclass
from typing import Literal

from shoal.agents.base import Agent
from shoal.agents.value import (
    MUTABLE_SETTINGS,
    DQNConfig,
    DQNPolicy,
    QLearner,
    make_q_networks,
    make_transition_data_path,
)
from shoal.config import param


@dataclass(frozen=True, kw_only=True)
class ApexConfig(DQNConfig):
    """DQN's settings with Ape-X's exploration by default (see DQNConfig for every field)."""

    exploration: Literal["linear", "apex"] = param(
        "apex",
        "apex: actor i of N acts with apex_epsilon^(1 + apex_alpha * i / (N - 1)) throughout; "
        "linear: epsilon decays from epsilon_start to epsilon_end.",
    )


AGENT = Agent(
    name="apex",
    config_cls=ApexConfig,
    make_networks=make_q_networks,
    make_policy=DQNPolicy,
    make_learner=QLearner,
    make_data_path=make_transition_data_path,
    mutable=MUTABLE_SETTINGS,
)

__all__ = ["AGENT", "ApexConfig"]
