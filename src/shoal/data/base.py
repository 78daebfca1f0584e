"""The data path: how experience goes from the actors to the learner.

An agent builds its `DataPath` (Acme's builder idea: the agent makes its replay table with the rate
limiter inside); the runtime places its parts, the same way for every agent:

- one *adder* per actor turns that actor's unrolls into items for a table: the unroll itself,
  n-step transitions, or overlapping sequences, with initial priorities where the agent wants
  them. It runs next to the policy that acted (on the actor, or next to the learner under
  central inference) because it may need that policy's network.
- *tables* hold items and decide when each side may go on: `insert` blocks while the actors run
  ahead of the learner, `sample` while the learner runs ahead of the actors. An unroll queue
  does it by version (on-policy) or by capacity (bounded staleness); a replay table by its
  samples-per-insert rate limiter. Inline there is one table; on Ray the data path says whether
  its tables live in replay-shard processes (`sharded`) or in the learner's process.

A launcher asks the data path what it must know (unroll length, whether acting may overlap
learning, how many actors act inline, where the tables live) and never which kind of agent it
runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

__all__ = [
    "Adder",
    "Batch",
    "DataPath",
    "Layout",
    "PassThrough",
    "Table",
    "sum_stats",
]


@dataclass(frozen=True)
class Layout:
    """How a run's envs are spread over actors, which agents may need for exploration rates and
    batch sizes: actor `a`'s env `j` is env slot `a * envs_per_actor + j` of `total_envs`."""

    actors: int = 1
    envs_per_actor: int = 1
    queue_capacity: int = 2  # unrolls an off-policy queue holds before actors wait

    @property
    def total_envs(self) -> int:
        return self.actors * self.envs_per_actor


@dataclass
class Batch:
    """What a table hands the learner: `data` for `Learner.update`, and what the runtime and the
    table need afterwards."""

    data: Any
    behaviour_version: int  # oldest acting version in an unroll batch; newest inserted in replay
    key: Any = None  # the table's own handle for `after_update` (replay: insert ids)
    shard: int = 0  # which of several tables it came from (set by the learner's sharded view)
    steps: int = 0  # env steps acted into the table(s) when the batch was taken


class Inserter(Protocol):
    """The side of a table an actor sees: a `Table`, or a table in another process."""

    def insert(self, items: Any, version: int, block: bool = True, steps: int = 0) -> bool:
        """As `Table.insert`."""
        ...


class Table(Protocol):
    """One table of items between actors and the learner, with its rate control inside."""

    def insert(self, items: Any, version: int, block: bool = True, steps: int = 0) -> bool:
        """Add `items` (None: none this time) acted by weights of `version` over `steps` env
        steps; with `block`, first wait while the actors are ahead. False when the table was
        closed (the run is ending)."""
        ...

    def can_sample(self) -> bool:
        """Whether `sample` would return a batch now (for in-turn runs)."""
        ...

    def sample(self, progress: float, timeout: float | None) -> Batch | None:
        """The next batch, waiting up to `timeout` seconds while the learner is ahead; None on
        timeout or once closed. `progress` in [0, 1] is the fraction of the budget used."""
        ...

    def after_update(self, batch: Batch, priorities: np.ndarray | None, version: int) -> None:
        """The learner learned from `batch` and is now at `version` (new priorities if any)."""
        ...

    def stats(self) -> dict[str, float]:
        """Metrics since the last call (sizes, counts, rates)."""
        ...

    @property
    def sample_weight(self) -> float:
        """How much of the learner's sampling this table should get among several shards."""
        ...

    def close(self) -> None:
        """Release every waiting caller; later calls return at once."""
        ...

    def snapshot_bytes(self) -> int | None:
        """About the size in bytes of a snapshot of the table now; None for a table that keeps
        none (the runtime then never asks it for one)."""
        ...

    def write_snapshot(self, path: Path) -> int:
        """Write the table's contents to `path` atomically; returns the file's size."""
        ...

    def read_snapshot(self, path: Path) -> int:
        """Restore what `write_snapshot` wrote into this new table; returns its items."""
        ...


class Adder(Protocol):
    """Turns one actor's unrolls into table items; None when an unroll completes none."""

    def add(self, unroll: Any) -> Any | None: ...


class PassThrough:
    """The adder of agents that learn from whole unrolls."""

    def add(self, unroll: Any) -> Any:
        return unroll


def sum_stats(stats: Sequence[dict[str, float]]) -> dict[str, float]:
    """Several tables' stats as one: every value summed."""
    out: dict[str, float] = {}
    for row in stats:
        for key, value in row.items():
            out[key] = out.get(key, 0.0) + value
    return out


@dataclass(frozen=True)
class DataPath:
    """How an agent's experience flows; built by the agent, placed by the runtime."""

    unroll_length: int  # steps per env an actor collects before handing on an unroll
    # (shards, seed) -> one of `shards` tables (each holding 1 / shards of a replay).
    make_table: Callable[[int, int], Table]
    # (the policy that acted, actor index) -> that actor's adder.
    make_adder: Callable[[Any, int], Adder] = field(default=lambda policy, actor: PassThrough())
    overlap: bool = True  # inline default: act in a thread while the learner learns
    # Inline: as many actors as --actors (threads when overlapping), each with its own network
    # and envs, rather than one actor stepping every env (A3C's gradient workers). Read before
    # the layout is known, so it must not depend on the layout it is built with.
    actors_inline: bool = False
    sharded: bool = False  # ray: tables in --replay-shards processes, else in the learner's
    merge_stats: Callable[[Sequence[dict[str, float]]], dict[str, float]] = sum_stats
    # Env steps the table needs before the learner's first sample (a replay's warm-up, its
    # minimum size); 0: learning starts with the first unroll. Runs shorter are refused.
    warmup_steps: int = 0
