"""The actor-critic family's on-policy data path (PPO, A2C): one unroll of every actor's envs per
update, all acted by the weights being learned from."""

from __future__ import annotations

from functools import partial
from typing import Protocol

from shoal.agents.base import Layout
from shoal.data import DataPath, UnrollQueue
from shoal.envs.spec import EnvSpec

__all__ = ["RolloutSettings", "on_policy_data_path"]


class RolloutSettings(Protocol):
    @property
    def unroll_length(self) -> int: ...


def _queue(actors: int, shards: int, seed: int) -> UnrollQueue:
    return UnrollQueue(batch=actors, capacity=actors, on_policy=True)


def on_policy_data_path(spec: EnvSpec, config: RolloutSettings, layout: Layout) -> DataPath:
    """On-policy: one rollout of every actor's envs per update, all acted by the weights being
    learned from; acting waits for learning, so inline runs act and learn in turn."""
    return DataPath(
        unroll_length=config.unroll_length,
        make_table=partial(_queue, layout.actors),
        overlap=False,
    )
