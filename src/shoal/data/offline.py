"""The data path of an offline learner: minibatches from a fixed dataset, none from the actors.

The learner of an offline agent (behavioural cloning) learns from a dataset only. The actors
still play, with the policy as it learns, but what they play never reaches the learner: the
adder makes no items, and the table counts their steps. Those steps are the run's clock, as for
every agent (`--total-steps`, metrics rows, checkpoints, `--eval-every`), and the episodes they
end are the run's learning curve: how well the policy learned so far does in the env.

`DatasetTable` releases `updates_per_step` minibatches per env step the actors play, through
the replay's samples-per-insert rate limiter (`shoal.replay.RateLimiter`, counting env steps in
and minibatches out), so a run learns as much per step on every launcher: in turn inline, the
learner makes every update the steps allow; overlapped or on Ray, actors wait while they are
ahead. Minibatches are drawn uniformly, with replacement, from a seeded generator.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from shoal.data.base import Adder, Batch, DataPath
from shoal.replay.rate_limiter import RateLimiter
from shoal.tree import map_tree

__all__ = ["DatasetTable", "NoItems", "offline_data_path"]


class NoItems:
    """The adder of an offline agent: what the actors play is only counted."""

    def add(self, unroll: Any) -> None:
        return None


class DatasetTable:
    """Minibatches of `batch_size` drawn from `data` (a dict of `[N, ...]` arrays, or of such
    dicts), `updates_per_step` of them per env step inserted."""

    def __init__(
        self,
        data: dict[str, Any],
        *,
        batch_size: int,
        updates_per_step: float,
        max_insert: int,
        seed: int = 0,
    ) -> None:
        """`max_insert`: the most env steps one insert carries, summed over the actors that may
        insert at once (the limiter lets actors run that far ahead, so neither side waits
        for ever)."""
        self.data = data
        self.size = len(data["actions"])
        self.batch_size = int(batch_size)
        spi = float(updates_per_step)
        lead = spi * max(1, int(max_insert)) + 1.0
        # The limiter's line runs through (1 step, 0 updates); a sample lead of one step's worth
        # moves it to the origin, so that n steps allow floor(n * spi) updates exactly.
        self.limiter = RateLimiter(spi, 1, lead, sample_lead=spi, insert_lead=lead)
        self.rng = np.random.default_rng(seed)
        self._steps = 0
        self._updates = 0
        self._last_report = (time.perf_counter(), 0)
        self._lock = threading.Lock()

    def insert(self, items: Any, version: int, block: bool = True, steps: int = 0) -> bool:
        if steps <= 0:
            return not self.limiter.closed
        if block and not self.limiter.await_can_insert(steps):
            return False  # closed: the run is ending
        with self._lock:
            self._steps += steps
            self.limiter.insert(steps)
        return True

    def can_sample(self) -> bool:
        return self.limiter.can_sample(1)

    def sample(self, progress: float, timeout: float | None) -> Batch | None:
        if not self.limiter.await_can_sample(1, timeout):
            return None
        with self._lock:
            index = self.rng.integers(0, self.size, self.batch_size)
            self.limiter.sample(1)
            self._updates += 1
            steps = self._steps
        batch = {key: map_tree(lambda x: x[index], value) for key, value in self.data.items()}
        return Batch(batch, 0, steps=steps)

    def after_update(self, batch: Batch, priorities: np.ndarray | None, version: int) -> None:
        return None

    def stats(self) -> dict[str, float]:
        now = time.perf_counter()
        then, updates_then = self._last_report
        self._last_report = (now, self._updates)
        return {
            "dataset_size": float(self.size),
            "dataset_batches": float(self._updates),
            "batches_per_s": (self._updates - updates_then) / max(now - then, 1e-9),
        }

    @property
    def sample_weight(self) -> float:
        return 1.0 if self.can_sample() else 0.0

    def close(self) -> None:
        self.limiter.close()

    def snapshot_bytes(self) -> int | None:
        return None  # the dataset is read again on resume: nothing to snapshot

    def write_snapshot(self, path: Any) -> int:
        raise NotImplementedError("a dataset table keeps no snapshot")

    def read_snapshot(self, path: Any) -> int:
        raise NotImplementedError("a dataset table keeps no snapshot")


def offline_data_path(
    unroll_length: int, make_table: Callable[[int, int], DatasetTable]
) -> DataPath:
    """The data path of an offline agent: one table in the learner's process (on Ray the
    actors send it step counts only), acting and learning in turn inline (reproducible under a
    seed)."""
    adder: Callable[[Any, int], Adder] = lambda policy, actor: NoItems()  # noqa: E731
    return DataPath(
        unroll_length=unroll_length,
        make_table=make_table,
        make_adder=adder,
        overlap=False,
        sharded=False,
    )
