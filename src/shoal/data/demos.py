"""A replay table with a demonstration replay beside it (R2D3, Paine et al. 2019, section 3).

R2D3 keeps two replays: the agent replay, which the actors fill, and a demo replay, filled once
with demonstrations before the run starts. Each element of a batch the learner samples comes
from the demo replay with probability `demo_ratio` (the paper's ρ, 1/256 by default) and from
the agent replay otherwise: the batch holds `k ~ Binomial(B, ρ)` demo items after `B - k` agent
items. Both replays are prioritised (or both uniform): each draws its items by its own
priorities, their importance weights are normalised within the replay they came from, and the
learner's new priorities go back to the replay each item came from.

`DemoReplayTable` is a `ReplayTable` for the agent replay (its rate limiter counts what the
actors insert and each batch the learner samples, demonstrations included, so
`samples_per_insert` is still batches' items per inserted item) with the demo replay inside.
Both replays live where the table lives: inline, in the run's process; on Ray, in each replay
shard (`--replay-shards`), each shard holding the whole demo replay, so a batch from any shard
mixes element by element. A snapshot holds the agent replay only (`ReplayTable`'s): the
demo replay is made again from the dataset when a run resumes, every demo at the same
priority, as at the start (a replay restores only into an empty one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal.data.base import Batch
from shoal.data.table import Replay, ReplayTable

__all__ = ["DemoReplayTable"]


class DemoReplayTable(ReplayTable):
    """`replay` (the agent's) behind the rate limiter, with `demos`, a replay already filled
    with demonstrations, from which each batch element comes with probability `demo_ratio`."""

    def __init__(self, replay: Replay, demos: Replay, *, demo_ratio: float, **table: Any) -> None:
        """`table`: `ReplayTable`'s settings (batch_size, samples_per_insert, min_size, ...)."""
        if not 0.0 <= demo_ratio <= 1.0:
            raise ValueError(f"demo_ratio must be in [0, 1], got {demo_ratio}.")
        if len(demos) == 0:
            raise ValueError("The demo replay holds no item: fill it before making the table.")
        super().__init__(replay, **table)
        self.demos, self.demo_ratio = demos, float(demo_ratio)
        self._demo_sampled = 0

    def sample(self, progress: float, timeout: float | None) -> Batch | None:
        if not self.limiter.await_can_sample(self.batch_size, timeout):
            return None
        if len(self.replay) == 0:  # items inserted, none complete yet
            return None
        beta = self.beta + min(max(progress, 0.0), 1.0) * (self.beta_end - self.beta)
        with self._lock:
            demo = int(self.rng.binomial(self.batch_size, self.demo_ratio))
            agent = self.batch_size - demo
            parts = []
            if agent:
                parts.append(self.replay.sample(agent, beta, self.rng))
            if demo:
                parts.append(self.demos.sample(demo, beta, self.rng))
            self.limiter.sample(self.batch_size)
            self._demo_sampled += demo
        self._last_beta = beta
        data = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
        data["demo"] = np.arange(self.batch_size) >= agent
        key = (data["indices"][:agent], data["indices"][agent:])
        return Batch(data, self._newest_version, key=key, steps=self._steps)

    def after_update(self, batch: Batch, priorities: np.ndarray | None, version: int) -> None:
        if priorities is None:
            return
        agent_ids, demo_ids = batch.key
        agent = len(agent_ids)
        with self._lock:
            if agent:
                self.replay.update_priorities(agent_ids, priorities[:agent])
            if len(demo_ids):
                self.demos.update_priorities(demo_ids, priorities[agent:])

    def stats(self) -> dict[str, float]:
        out = super().stats()
        out["demo_size"] = float(len(self.demos))
        out["demo_sampled"] = float(self._demo_sampled)
        return out

    @staticmethod
    def merge_stats(stats: Any) -> dict[str, float]:
        out = ReplayTable.merge_stats(stats)
        if out:  # every shard holds the same demonstrations
            out["demo_size"] = max(row["demo_size"] for row in stats)
        return out

    @property
    def sample_weight(self) -> float:
        return super().sample_weight  # the agent replay's: every shard holds the same demos
