"""What every agent may share and no agent owns: target-network updates, typed schedules, the
learner's state declared once, and one optimiser step.

Agents import this package, `shoal.agents.base`, `shoal.agents.checks` and a family library
(`shoal.agents.value`, `shoal.agents.actor_critic`, `shoal.agents.continuous`,
`shoal.agents.evolution`), never another agent: a change to one agent is then a change to it
alone (SB3's `common/`, Acme's `learning_lib`).
"""

from shoal.agents.common.masks import ObsPacking, legal_actions, legal_actions_np
from shoal.agents.common.optim import optimizer_step
from shoal.agents.common.schedules import LearningRateSchedule, LinearSchedule, apex_spread
from shoal.agents.common.state import DeclaredState, LearnerState
from shoal.agents.common.targets import (
    HardUpdate,
    SoftUpdate,
    TargetUpdate,
    incremental_update,
    periodic_update,
)

__all__ = [
    "DeclaredState",
    "HardUpdate",
    "LearnerState",
    "LearningRateSchedule",
    "LinearSchedule",
    "ObsPacking",
    "SoftUpdate",
    "TargetUpdate",
    "apex_spread",
    "incremental_update",
    "legal_actions",
    "legal_actions_np",
    "optimizer_step",
    "periodic_update",
]
