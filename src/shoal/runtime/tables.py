"""Tables as Ray actors, for data paths that shard them (Ape-X, Horgan et al. 2018).

Each `TableProcess` holds one of the run's `--replay-shards` tables, built by the agent's data
path with 1 / shards of its capacity. It is a threaded Ray actor: an actor's `insert` that waits
for the rate limiter and the learner's `sample` that waits for the other side wait in threads
of their own, so neither blocks the other. Actor i inserts into shard `i % shards` through a
`RemoteTable` and waits for the insert (its backpressure). The learner's `ShardedTables` draws
each batch from one shard, chosen in proportion to the shards' `sample_weight` (their priority
totals), and sends each shard what came of its batches without waiting (Ape-X's asynchronous
priority updates); at most `MAX_PENDING_FEEDBACK` of those are in flight. Importance weights are
normalised within the shard a batch came from.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from shoal.data import Batch
from shoal.runtime.program import Program

MAX_PENDING_FEEDBACK = 8
SIZE_REFRESH_S = 0.2
SAMPLE_WAIT_S = 0.05  # per try at one shard, so a shard that cannot sample does not hold others


class TableProcess:
    """One table of the run's data path; its methods are called remotely."""

    def __init__(self, program: Program, shards: int, index: int) -> None:
        self.table = program.data_path().make_table(shards, program.seed + 7919 * (index + 1))

    def insert(self, items: Any, version: int, block: bool = True, steps: int = 0) -> bool:
        return self.table.insert(items, version, block, steps)

    def sample(self, progress: float, timeout: float | None) -> Batch | None:
        return self.table.sample(progress, timeout)

    def after_update(self, key: Any, priorities: np.ndarray | None, version: int) -> None:
        self.table.after_update(Batch(None, 0, key), priorities, version)

    def status(self) -> float:
        return self.table.sample_weight

    def stats(self) -> dict[str, float]:
        return self.table.stats()

    def close(self) -> None:
        self.table.close()

    def where(self) -> tuple[int, str]:
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()


class RemoteTable:
    """A table in another Ray process (a shard, or the learner's), as inserters see it."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def insert(self, items: Any, version: int, block: bool = True, steps: int = 0) -> bool:
        import ray

        return bool(ray.get(self.handle.insert.remote(items, version, block, steps)))


class ShardedTables:
    """The learner's view of table shards in other processes, with a table's sampling methods."""

    def __init__(
        self,
        handles: Sequence[Any],
        merge_stats: Callable[[Sequence[dict[str, float]]], dict[str, float]],
        seed: int = 0,
    ) -> None:
        import ray

        self.ray, self.handles, self.merge_stats = ray, list(handles), merge_stats
        self.weights = np.zeros(len(self.handles))
        self.steps = np.zeros(len(self.handles), np.int64)  # each shard's, as last heard
        self.rng = np.random.default_rng(seed)
        self._refreshed = -np.inf
        self._pending: list[Any] = []

    def _refresh(self) -> None:
        if time.monotonic() - self._refreshed > SIZE_REFRESH_S:
            self.weights[:] = self.ray.get([handle.status.remote() for handle in self.handles])
            self._refreshed = time.monotonic()

    def sample(self, progress: float, timeout: float | None) -> Batch | None:
        deadline = time.monotonic() + (timeout or 0.0)
        while True:
            self._refresh()
            # Shards that can sample, in proportion to their priority totals, without waiting;
            # then, if none could, wait a little at one of them.
            weights = self.weights.copy()
            while weights.sum() > 0:
                shard = int(self.rng.choice(len(weights), p=weights / weights.sum()))
                batch = self.ray.get(self.handles[shard].sample.remote(progress, 0.0))
                if batch is not None:
                    return self._from(shard, batch)
                weights[shard] = self.weights[shard] = 0.0
            shard = int(self.rng.integers(len(self.handles)))
            wait = min(max(deadline - time.monotonic(), 0.0), SAMPLE_WAIT_S)
            batch = self.ray.get(self.handles[shard].sample.remote(progress, wait))
            if batch is not None:
                return self._from(shard, batch)
            self._refreshed = -np.inf  # look again before the next try
            if time.monotonic() >= deadline:
                return None

    def _from(self, shard: int, batch: Batch) -> Batch:
        self.steps[shard] = batch.steps
        batch.shard, batch.steps = shard, int(self.steps.sum())
        return batch

    def after_update(self, batch: Batch, priorities: np.ndarray | None, version: int) -> None:
        handle = self.handles[batch.shard]
        self._pending.append(handle.after_update.remote(batch.key, priorities, version))
        if len(self._pending) > MAX_PENDING_FEEDBACK:
            _, self._pending = self.ray.wait(self._pending, num_returns=len(self._pending) // 2)

    def can_sample(self) -> bool:
        self._refresh()
        return bool(self.weights.sum() > 0)

    def insert(self, items: Any, version: int, block: bool = True, steps: int = 0) -> bool:
        raise RuntimeError("The learner samples the table shards; actors insert into them.")

    def stats(self) -> dict[str, float]:
        return self.merge_stats(self.ray.get([handle.stats.remote() for handle in self.handles]))

    @property
    def sample_weight(self) -> float:
        return float(self.weights.sum())

    def close(self) -> None:
        for handle in self.handles:
            handle.close.remote()
