"""Range checks shared by the agents' configs, each error naming the flag that fixes it."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from shoal.nets.torso import check_torso_setting


def flag(name: str) -> str:
    """The `--agent.` flag spelling of a config field."""
    return name.replace("_", "-")


def require_positive(config: Any, names: Iterable[str]) -> None:
    for name in names:
        if not getattr(config, name) > 0:
            raise ValueError(
                f"{name} must be > 0, got {getattr(config, name)}; set --agent.{flag(name)} "
                "to a positive value."
            )


def require_unit_interval(config: Any, names: Iterable[str]) -> None:
    for name in names:
        if not 0.0 <= getattr(config, name) <= 1.0:
            raise ValueError(
                f"{name} must be in [0, 1], got {getattr(config, name)}; set "
                f"--agent.{flag(name)} to a value in [0, 1]."
            )


def require_finite_nonnegative(config: Any, names: Iterable[str]) -> None:
    for name in names:
        if not 0 <= getattr(config, name) < math.inf:
            raise ValueError(
                f"{name} must be a finite number >= 0, got {getattr(config, name)}; set "
                f"--agent.{flag(name)}."
            )


def check_network_settings(config: Any) -> None:
    """`reward_clip`, `hidden_sizes` and `torso`, as the value-learning agents have them."""
    if config.reward_clip is not None and not config.reward_clip > 0:
        raise ValueError(
            f"reward_clip must be > 0 or None, got {config.reward_clip}; set "
            "--agent.reward-clip 1.0 to clip to [-1, 1] or none to keep rewards."
        )
    check_mlp_settings(config)


def check_mlp_settings(config: Any) -> None:
    """`hidden_sizes` are positive widths and `torso` names a known torso."""
    if not config.hidden_sizes or min(config.hidden_sizes) <= 0:
        raise ValueError(
            f"hidden_sizes must be positive widths, got {config.hidden_sizes}; "
            "set e.g. --agent.hidden-sizes 64,64."
        )
    check_torso_setting(config.torso)
