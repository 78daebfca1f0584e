"""Unrolls from actors to the learner, a batch at a time: the data path of PPO and IMPALA.

On-policy (PPO, Schulman et al. 2017): every batch is acted by one version of the weights, the
learner's current one. An actor that inserts an unroll acted by version v waits until the learner
has learned from it (`after_update` with a version > v), so it acts next with the new weights;
an unroll older than the learner's version is dropped (counted in `unrolls_dropped`). A batch
lays its unrolls side by side in actor order, so it does not depend on which actor was faster.

Off-policy (IMPALA, Espeholt et al. 2018): unrolls are taken as they come, and at most
`capacity` wait; an actor that would exceed it waits. The capacity bounds how stale the data
the learner sees can be (the policy lag), and V-trace corrects for the rest. With `max_lag`
(APPO's `max_policy_lag`, after Sample Factory's), an unroll acted more than `max_lag` learner
versions ago is dropped when the learner would take it (counted in `unrolls_dropped`).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from shoal.data.base import Batch
from shoal.data.unroll import Unroll, concat_unrolls

__all__ = ["UnrollQueue"]


class NoSnapshot:
    """For tables whose contents are stale once the learner restarts from a checkpoint (an
    on-policy batch, queued gradients, an iteration's episodes) or that the actors refill in a
    moment: they write no replay snapshot."""

    def snapshot_bytes(self) -> None:
        return None

    def write_snapshot(self, path: Path) -> int:
        raise NotImplementedError(f"a {type(self).__name__} keeps no snapshot")

    def read_snapshot(self, path: Path) -> int:
        raise NotImplementedError(f"a {type(self).__name__} keeps no snapshot")


class UnrollQueue(NoSnapshot):
    """`batch` unrolls per learner batch (side by side along B), on-policy or bounded."""

    def __init__(
        self, batch: int, capacity: int, on_policy: bool, max_lag: int | None = None
    ) -> None:
        if batch < 1 or capacity < 1:
            raise ValueError(f"need batch >= 1 and capacity >= 1, got {batch} and {capacity}.")
        if max_lag is not None and (on_policy or max_lag < 0):
            raise ValueError(f"max_lag bounds an off-policy queue and must be >= 0, got {max_lag}.")
        self.batch, self.on_policy = int(batch), bool(on_policy)
        # Off-policy: unrolls acted more than max_lag learner versions ago are dropped when
        # the learner would take them (Sample Factory's max_policy_lag); None keeps them all.
        self.max_lag = max_lag
        # On-policy, a batch is all that ever waits: its actors wait to be learned from.
        self.capacity = self.batch if on_policy else max(int(capacity), self.batch)
        self._pending: list[Unroll] = []
        self._version = 0  # the learner's version after its last update
        self._dropped = 0
        self._steps = 0  # env steps of every unroll inserted
        self._closed = False
        self._cond = threading.Condition()

    def insert(
        self, items: Unroll | None, version: int, block: bool = True, steps: int = 0
    ) -> bool:
        with self._cond:
            self._steps += steps
            if items is None:
                return not self._closed
            if self.on_policy and version < self._version:
                self._dropped += 1  # acted by weights the learner has moved past
                return True
            if block:
                self._cond.wait_for(lambda: self._closed or len(self._pending) < self.capacity)
            if self._closed:
                return False
            self._pending.append(items)
            self._cond.notify_all()
            if self.on_policy and block:
                self._cond.wait_for(lambda: self._closed or self._version > version)
            return True

    def can_sample(self) -> bool:
        with self._cond:
            return len(self._pending) >= self.batch

    def sample(self, progress: float, timeout: float | None) -> Batch | None:
        with self._cond:
            ready = self._cond.wait_for(
                lambda: self._closed or self._drop_stale() >= self.batch, timeout
            )
            if not ready or self._closed:
                return None
            taken, self._pending = self._pending[: self.batch], self._pending[self.batch :]
            steps = self._steps
            self._cond.notify_all()
        if self.on_policy:  # in actor order, whichever arrived first: reproducible batches
            taken.sort(key=lambda unroll: unroll.env_slot)
        unroll = concat_unrolls(taken)
        return Batch(unroll, unroll.behaviour_version, steps=steps)

    def _drop_stale(self) -> int:
        """Drop waiting unrolls older than `max_lag` versions (under the lock); how many wait."""
        if self.max_lag is not None:
            oldest = self._version - self.max_lag
            fresh = [u for u in self._pending if u.behaviour_version >= oldest]
            if len(fresh) < len(self._pending):
                self._dropped += len(self._pending) - len(fresh)
                self._pending = fresh
                self._cond.notify_all()  # room for the actors waiting to insert
        return len(self._pending)

    def after_update(self, batch: Batch, priorities: np.ndarray | None, version: int) -> None:
        with self._cond:
            self._version = max(self._version, int(version))
            self._cond.notify_all()

    def stats(self) -> dict[str, float]:
        keeps_count = self.on_policy or self.max_lag is not None
        return {"unrolls_dropped": float(self._dropped)} if keeps_count else {}

    @property
    def sample_weight(self) -> float:
        return float(len(self._pending))

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
