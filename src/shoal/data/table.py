"""A replay (transitions or sequences) with a samples-per-insert rate limiter inside it.

The data path of the replay agents (DQN, Ape-X, R2D2, SAC, TD3). The limiter (Reverb's
SampleToInsertRatio, `shoal.replay.RateLimiter`) keeps the learner replaying each inserted item
`samples_per_insert` times whatever the speeds of actors and learner. The learner never runs
ahead: it samples only while `sampled + batch <= samples_per_insert * (inserted - min_size)`,
as a learner that waits for data would. The actors may run ahead by a tolerance (Acme's: 10% of
`samples_per_insert` over the `min_size` items that must arrive before learning starts), and
never less than one insert chunk plus one batch, so neither side can wait for ever; beyond it,
`insert` waits. Inserts are split into chunks that fit the tolerance, so an actor may insert
any number of items at once.

Importance-sampling exponent β moves linearly from `beta` to `beta_end` with the run's progress
(Schaul et al. 2016, section 3.4).

A table writes itself to a snapshot file (`write_snapshot`: the replay with its frames once
each, priorities and insert ids, the limiter's counters, the sampling generator) and a new
table reads it back (`read_snapshot`), so a resumed run goes on with its replay and replay ratio.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from shoal.data.base import Adder, Batch, DataPath
from shoal.replay.rate_limiter import RateLimiter
from shoal.run.arrays import array_bytes, read_arrays, write_arrays

__all__ = ["ReplayTable", "replay_data_path"]

TOLERANCE = 0.1  # of samples_per_insert, over min_size items: how far actors may run ahead


class Replay(Protocol):
    """What `TransitionReplay` and `SequenceReplay` both offer."""

    def __len__(self) -> int: ...

    def add(self, batch: Mapping[str, np.ndarray]) -> None: ...

    def sample(self, batch_size: int, beta: float, rng: np.random.Generator) -> dict[str, Any]: ...

    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None: ...

    @property
    def priority_total(self) -> float: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...


class ReplayTable:
    """`replay` behind a rate limiter; items are dicts of `[M, ...]` arrays (see the replay)."""

    def __init__(
        self,
        replay: Replay,
        *,
        batch_size: int,
        samples_per_insert: float,
        min_size: int,
        beta: float = 0.4,
        beta_end: float = 1.0,
        seed: int = 0,
    ) -> None:
        self.replay, self.batch_size = replay, int(batch_size)
        self.min_size = max(1, int(min_size))
        self.beta, self.beta_end = float(beta), float(beta_end)
        spi = float(samples_per_insert)
        lead = max(TOLERANCE * spi * self.min_size, spi + self.batch_size)
        # The largest insert both sides can always get past (see RateLimiter).
        self.chunk = max(1, int((lead - self.batch_size) // spi))
        self.limiter = RateLimiter(spi, self.min_size, lead, sample_lead=0.0, insert_lead=lead)
        self.rng = np.random.default_rng(seed)
        self._newest_version = 0
        self._steps = 0  # env steps that made the items inserted
        self._last_beta = self.beta
        self._last_report = (time.perf_counter(), 0, 0)
        # Held by every change to the replay and its counters, and by a snapshot, so a
        # snapshot is one moment of the table even while actors and learner go on.
        self._lock = threading.Lock()

    def insert(
        self,
        items: Mapping[str, np.ndarray] | None,
        version: int,
        block: bool = True,
        steps: int = 0,
    ) -> bool:
        self._steps += steps
        if items is None:
            return not self.limiter.closed
        count = len(next(iter(items.values())))
        for start in range(0, count, self.chunk):
            part = {key: value[start : start + self.chunk] for key, value in items.items()}
            size = min(self.chunk, count - start)
            if block and not self.limiter.await_can_insert(size):
                return False  # closed: the run is ending
            with self._lock:
                self.replay.add(part)
                self.limiter.insert(size)
        self._newest_version = max(self._newest_version, int(version))
        return True

    def can_sample(self) -> bool:
        return len(self.replay) > 0 and self.limiter.can_sample(self.batch_size)

    def sample(self, progress: float, timeout: float | None) -> Batch | None:
        if not self.limiter.await_can_sample(self.batch_size, timeout):
            return None
        if len(self.replay) == 0:  # items inserted, none complete yet (n-step, sequences)
            return None
        beta = self.beta + min(max(progress, 0.0), 1.0) * (self.beta_end - self.beta)
        with self._lock:
            data = self.replay.sample(self.batch_size, beta, self.rng)
            self.limiter.sample(self.batch_size)
        self._last_beta = beta
        return Batch(data, self._newest_version, key=data["indices"], steps=self._steps)

    def after_update(self, batch: Batch, priorities: np.ndarray | None, version: int) -> None:
        if priorities is not None:
            with self._lock:
                self.replay.update_priorities(batch.key, priorities)

    def stats(self) -> dict[str, float]:
        inserted, sampled = self.limiter.snapshot()
        now = time.perf_counter()
        then, inserted_then, sampled_then = self._last_report
        seconds = max(now - then, 1e-9)
        self._last_report = (now, inserted, sampled)
        return {
            "replay_size": float(len(self.replay)),
            "replay_inserted": float(inserted),
            "replay_sampled": float(sampled),
            "replay_ratio": sampled / max(inserted, 1),
            "inserts_per_s": (inserted - inserted_then) / seconds,
            "samples_per_s": (sampled - sampled_then) / seconds,
            "priority_beta": self._last_beta,
        }

    @staticmethod
    def merge_stats(stats: Sequence[dict[str, float]]) -> dict[str, float]:
        """Shards' stats as one replay's: counts and rates summed, the ratio recomputed."""
        out: dict[str, Any] = {}
        for row in stats:
            for key, value in row.items():
                out[key] = out.get(key, 0.0) + value
        if out:
            out["replay_ratio"] = out["replay_sampled"] / max(out["replay_inserted"], 1.0)
            out["priority_beta"] = max(row["priority_beta"] for row in stats)
        return out

    @property
    def sample_weight(self) -> float:
        return float(self.replay.priority_total) if self.can_sample() else 0.0

    def close(self) -> None:
        self.limiter.close()

    def _state(self) -> dict[str, Any]:
        # Not `_steps`: it counts the env steps inserted since this table was made, which the
        # runtime adds to the steps the run had at its start (a resumed run's included).
        return {
            "replay": self.replay.state_dict(),
            "limiter": self.limiter.state_dict(),
            "newest_version": self._newest_version,
            "rng": self.rng.bit_generator.state,
        }

    def snapshot_bytes(self) -> int:
        """About the size of the snapshot `write_snapshot` would write now, in bytes."""
        with self._lock:
            return array_bytes(self._state())

    def write_snapshot(self, path: Path) -> int:
        """Write the table to `path` atomically (a temp file, then rename); returns its size in
        bytes. Inserts, samples and priority updates wait until it is written."""
        with self._lock:
            return write_arrays(path, self._state())

    def read_snapshot(self, path: Path) -> int:
        """Restore what `write_snapshot` wrote into this new table; returns the items it holds.
        A CheckpointError, ValueError or KeyError says why it cannot; the table is then as it
        was."""
        state = read_arrays(path)
        counters, version = state["limiter"], int(state["newest_version"])
        with self._lock:
            self.rng.bit_generator.state = state["rng"]
            self.replay.load_state_dict(state["replay"])  # checks everything, then restores
            self.limiter.load_state_dict(counters)
            self._newest_version = version
        return len(self.replay)


def replay_data_path(
    unroll_length: int,
    make_table: Callable[[int, int], ReplayTable],
    make_adder: Callable[[Any, int], Adder],
    warmup_steps: int = 0,
) -> DataPath:
    """The data path of a replay agent: its tables sharded over `--replay-shards` processes on
    ray, their stats merged as one replay's; inline, acting and learning in turn (the table
    fixes how much is learned per step anyway, and in turn a seed learns the same whatever else
    the machine is doing). `warmup_steps`: see `DataPath`."""
    return DataPath(
        unroll_length=unroll_length,
        warmup_steps=warmup_steps,
        make_table=make_table,
        make_adder=make_adder,
        overlap=False,
        sharded=True,
        merge_stats=ReplayTable.merge_stats,
    )
