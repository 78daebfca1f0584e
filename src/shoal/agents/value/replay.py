"""What the value agents' replays share: frames stored once, and the rate-limited table.

The transition path (`shoal.agents.value.transitions`) and the sequence paths (R2D2's, Agent57's)
put their replay behind the same `ReplayTable`; the settings it reads are the family's replay
section, `ReplayConfig` (also importable as `ReplayTableSettings`, its name before the section).
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import numpy as np

from shoal.agents.common.masks import ObsPacking
from shoal.agents.value.config import ReplayConfig
from shoal.data import ReplayTable, Unroll
from shoal.envs.spec import EnvSpec

__all__ = [
    "Adder",
    "PackingAdder",
    "ReplayTableSettings",
    "packed",
    "replay_table",
    "stored_frame_stack",
    "stored_obs",
]


# The replay section of a value agent's config, which the table reads (was a Protocol of its
# five fields before every value agent's config inherited the section).
ReplayTableSettings = ReplayConfig


class Adder(Protocol):
    def add(self, unroll: Unroll) -> dict[str, np.ndarray] | None: ...


class PackingAdder:
    """`adder` fed unrolls whose Dict observations (an action mask among them) are packed into
    one float32 vector each (`ObsPacking`), the form the value family's replays store; the
    learner's losses unpack them."""

    def __init__(self, adder: Adder, packing: ObsPacking) -> None:
        self.adder, self.packing = adder, packing

    def add(self, unroll: Unroll) -> dict[str, np.ndarray] | None:
        packed = dataclasses.replace(
            unroll, obs=self.packing.pack(unroll.obs), final_obs=self.packing.pack(unroll.final_obs)
        )
        return self.adder.add(packed)


def stored_obs(spec: EnvSpec) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype replay stores an observation in: a Box's own, a Dict's packed
    (`ObsPacking`: one float32 vector, the action mask among its entries)."""
    if spec.dict_obs:
        return (ObsPacking(spec.observation_space).size,), np.dtype(np.float32)
    return spec.obs_shape, spec.obs_dtype


def packed(spec: EnvSpec, adder: Adder) -> Adder:
    """`adder`, behind a `PackingAdder` for Dict observations."""
    return PackingAdder(adder, ObsPacking(spec.observation_space)) if spec.dict_obs else adder


def stored_frame_stack(spec: EnvSpec) -> int:
    """How many stacked frames an observation holds that replay can store once each (Atari: 4
    uint8 frames of one image per agent step), else 1 (Dict observations: packed, not stacked)."""
    if spec.dict_obs:
        return 1
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
