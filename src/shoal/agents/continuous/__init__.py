"""The continuous-control family: what SAC, TD3 and DDPG share.

- `networks`: MLPs after a torso, `TwinQ` critics, `DeterministicActor`, the action-space checks.
- `policy`: `BoundedActionPolicy`, the warm-up, the rescaling to the env's bounds and the rows'
  exploration state.
- `data`: one-step transitions into a uniform replay behind a rate limiter, and `transitions`,
  a sampled batch as tensors.
- `config`: the replay and MLP checks their configs share.

Their learners step several optimisers (`shoal.agents.common.optimizer_step`) and average their
targets (`shoal.agents.common.incremental_update`).
"""

from shoal.agents.continuous.config import check_replay_and_mlp_settings
from shoal.agents.continuous.data import ReplaySettings, Transitions, make_data_path, transitions
from shoal.agents.continuous.networks import (
    DeterministicActor,
    MLPSettings,
    TwinQ,
    action_dim,
    check_actor_and_critic_fit,
    check_bounded_actions,
    make_torso,
    mlp,
)
from shoal.agents.continuous.policy import ActorNet, BoundedActionPolicy, WarmUpSettings

__all__ = [
    "ActorNet",
    "BoundedActionPolicy",
    "DeterministicActor",
    "MLPSettings",
    "ReplaySettings",
    "Transitions",
    "TwinQ",
    "WarmUpSettings",
    "action_dim",
    "check_actor_and_critic_fit",
    "check_bounded_actions",
    "check_replay_and_mlp_settings",
    "make_data_path",
    "make_torso",
    "mlp",
    "transitions",
]
