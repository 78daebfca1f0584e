"""What the continuous-control agents' configs (SAC's, TD3's) check alike."""

from __future__ import annotations

import math
from typing import Any

from shoal.nets.torso import check_torso_setting

__all__ = ["check_replay_and_mlp_settings"]


def check_replay_and_mlp_settings(config: Any) -> None:
    """The checks SAC's and TD3's configs share: a finite replay ratio, a batch and a warm-up
    that fit the replay, positive MLP widths and a known torso."""
    if not math.isfinite(config.updates_per_step):
        raise ValueError(
            f"updates_per_step must be finite, got {config.updates_per_step}; set "
            "--agent.updates-per-step to e.g. 1."
        )
    if config.batch_size > config.replay_capacity:
        raise ValueError(
            f"batch_size {config.batch_size} exceeds replay_capacity {config.replay_capacity}; "
            "set --agent.batch-size lower or --agent.replay-capacity higher."
        )
    if config.learning_starts > config.replay_capacity:
        raise ValueError(
            f"learning_starts {config.learning_starts} exceeds replay_capacity "
            f"{config.replay_capacity}: learning would never start. Set "
            "--agent.learning-starts lower."
        )
    if not config.hidden_sizes or min(config.hidden_sizes) <= 0:
        raise ValueError(
            f"hidden_sizes must be positive widths, got {config.hidden_sizes}; "
            "set e.g. --agent.hidden-sizes 256,256."
        )
    check_torso_setting(config.torso)
