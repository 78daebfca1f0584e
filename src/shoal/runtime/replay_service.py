"""Replay as Ray actors (Ape-X, Horgan et al. 2018): actors insert, the learner samples.

Each `ReplayShard` holds one replay of `capacity / shards` transitions, built by the agent's
`make_replay`. Actor i inserts into shard `i % shards` (with the initial priorities it computed)
and waits for the insert, which bounds what it has in flight. The learner's `ShardedReplay`
draws each batch from one shard, chosen in proportion to the shards' priority totals, and
sends new priorities back without waiting (Ape-X's asynchronous priority updates); at most
`MAX_PENDING_PRIORITY_UPDATES` of those are in flight. Importance weights are normalised within
the shard a batch came from.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from shoal.runtime.program import Program

MAX_PENDING_PRIORITY_UPDATES = 8
SIZE_REFRESH_S = 0.2


class ReplayShard:
    """One replay shard; its methods are called remotely."""

    def __init__(self, program: Program, shards: int) -> None:
        make_replay = program.agent.make_replay
        assert make_replay is not None, "only replay agents have replay shards"
        self.replay = make_replay(program.spec, program.agent_config, shards)

    def add(self, data: dict[str, np.ndarray]) -> int:
        self.replay.add(data)
        return len(self.replay)

    def sample(self, batch_size: int, beta: float, seed: int) -> tuple[dict, int, float]:
        """A batch, this shard's size, and its priority total (for choosing shards)."""
        batch = self.replay.sample(batch_size, beta, np.random.default_rng(seed))
        return batch, len(self.replay), self.total()

    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        self.replay.update_priorities(indices, priorities)

    def status(self) -> tuple[int, float]:
        return len(self.replay), self.total()

    def total(self) -> float:
        return float(self.replay.priority_total)

    def memory_bytes(self) -> int:
        return int(self.replay.memory_bytes())

    def where(self) -> tuple[int, str]:
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()


class ShardedReplay:
    """The learner's view of the shards, with `TransitionReplay`'s sampling methods."""

    def __init__(self, shards: list[Any]) -> None:
        import ray

        self.ray = ray
        self.shards = shards
        self.sizes = np.zeros(len(shards), np.int64)
        self.totals = np.zeros(len(shards))
        self._refreshed = -np.inf
        self._pending: list[Any] = []

    def __len__(self) -> int:
        if time.monotonic() - self._refreshed > SIZE_REFRESH_S:
            status = self.ray.get([shard.status.remote() for shard in self.shards])
            self.sizes[:] = [size for size, _ in status]
            self.totals[:] = [total for _, total in status]
            self._refreshed = time.monotonic()
        return int(self.sizes.sum())

    def add(self, data: dict[str, np.ndarray]) -> None:
        raise RuntimeError(
            "With replay shards the actors insert transitions themselves; the learner only "
            "samples. Send Transitions.receipt() to the learner instead of the data."
        )

    def sample(self, batch_size: int, beta: float, rng: np.random.Generator) -> dict:
        weights = np.where(self.sizes > 0, np.maximum(self.totals, 1e-12), 0.0)
        if weights.sum() <= 0:
            len(self)  # refresh, then fall back to the largest shard
            weights = (self.sizes == self.sizes.max()).astype(float)
        shard = int(rng.choice(len(self.shards), p=weights / weights.sum()))
        seed = int(rng.integers(2**31))
        batch, size, total = self.ray.get(self.shards[shard].sample.remote(batch_size, beta, seed))
        self.sizes[shard], self.totals[shard] = size, total
        # Insert ids are per shard: shard s's id i is sent to the learner as i * S + s.
        batch["indices"] = batch["indices"] * len(self.shards) + shard
        return batch

    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        count = len(self.shards)
        shard_of, ids = indices % count, indices // count
        for shard in np.unique(shard_of):
            mine = shard_of == shard
            self._pending.append(
                self.shards[int(shard)].update_priorities.remote(ids[mine], priorities[mine])
            )
        if len(self._pending) > MAX_PENDING_PRIORITY_UPDATES:
            _, self._pending = self.ray.wait(self._pending, num_returns=len(self._pending) // 2)

    def memory_bytes(self) -> int:
        return sum(self.ray.get([shard.memory_bytes.remote() for shard in self.shards]))
