"""What the value agents' replays share: frames stored once, and the rate-limited table.

The transition path (`shoal.agents.value.transitions`) and the sequence paths (R2D2's, Agent57's)
put their replay behind the same `ReplayTable`; the settings it reads are the family's replay
section, `ReplayConfig` (also importable as `ReplayTableSettings`, its name before the section).
"""

from __future__ import annotations

import numpy as np

from shoal.agents.value.config import ReplayConfig
from shoal.data import ReplayTable
from shoal.envs.spec import EnvSpec

__all__ = ["ReplayTableSettings", "replay_table", "stored_frame_stack"]


# The replay section of a value agent's config, which the table reads (was a Protocol of its
# five fields before every value agent's config inherited the section).
ReplayTableSettings = ReplayConfig


def stored_frame_stack(spec: EnvSpec) -> int:
    """How many stacked frames an observation holds that replay can store once each (Atari: 4
    uint8 frames of one image per agent step), else 1."""
    shape = spec.obs_shape
    stacked = spec.frames_per_step > 1 and spec.obs_dtype == np.uint8 and len(shape) == 3
    return shape[0] if stacked else 1


def replay_table(replay: object, config: ReplayConfig, shards: int, seed: int) -> ReplayTable:
    """A replay behind the rate limiter; each of `shards` tables needs 1 / shards of the items
    before learning starts."""
    return ReplayTable(
        replay,  # type: ignore[arg-type]
        batch_size=config.batch_size,
        samples_per_insert=config.samples_per_insert,
        min_size=-(-config.min_replay_size // shards),
        beta=config.priority_beta,
        beta_end=config.priority_beta_end,
        seed=seed,
    )
