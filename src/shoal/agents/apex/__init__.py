"""Ape-X (Horgan et al. 2018, "Distributed Prioritized Experience Replay").

The DQN agent with Ape-X's defaults: actor i of N explores with a fixed
`epsilon^(1 + alpha * i / (N - 1))`, and on the ray launcher replay lives in shards (Ray actors)
that actors fill with n-step transitions and initial priorities while the learner samples them
and writes priorities back asynchronously.
"""

from dataclasses import dataclass, replace
from typing import Literal

from shoal.agents.dqn import AGENT as DQN_AGENT
from shoal.agents.dqn import DQNConfig
from shoal.config import param


@dataclass(frozen=True, kw_only=True)
class ApexConfig(DQNConfig):
    """DQN's settings with Ape-X's exploration by default (see DQNConfig for every field)."""

    exploration: Literal["linear", "apex"] = param(
        "apex",
        "apex: actor i of N acts with apex_epsilon^(1 + apex_alpha * i / (N - 1)) throughout; "
        "linear: epsilon decays from epsilon_start to epsilon_end.",
    )


AGENT = replace(DQN_AGENT, name="apex", config_cls=ApexConfig)

__all__ = ["AGENT", "ApexConfig"]
