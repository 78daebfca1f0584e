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

A shard's process that dies is restarted by Ray under the same handle and name, holding its part
of the newest checkpoint's replay snapshot (or nothing, if no checkpoint has one). Until it is
back, actors' inserts into it are sent again and the learner samples the other shards, so the
run goes on; the driver says what was lost (`ray_launcher`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, cast

import numpy as np

from shoal.data import Batch, ReplayTable
from shoal.errors import ShoalError, user_error
from shoal.run.checkpoints import load_latest
from shoal.runtime.program import Program
from shoal.runtime.ray_signals import die_on_sigterm
from shoal.runtime.snapshots import guarded

MAX_PENDING_FEEDBACK = 8
SIZE_REFRESH_S = 0.2
STATUS_WAIT_S = 1.0  # a live shard answers a status call in milliseconds
STATUS_RESEND_S = 5.0
SAMPLE_WAIT_S = 0.05  # per try at one shard, so a shard that cannot sample does not hold others
RETRY_S = 0.5  # an insert into a shard being restarted is sent again after this long


def died(ray: Any) -> tuple[type[Exception], ...]:
    """What a call to a Ray actor raises when its process died (and may be restarting)."""
    return (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)


def _restarted() -> bool:
    """Whether Ray runs this actor's constructor again, after its process died."""
    import ray

    if not ray.is_initialized():
        return False
    context = ray.get_runtime_context()
    return context.get_actor_id() is not None and context.was_current_actor_reconstructed


class InsertOrder:
    """Each actor's inserts applied once each and in the order it made them.

    A replay links each env's transitions into a chain and refuses a transition that does not
    start an episode yet follows an episode's end, so one actor's inserts must arrive in order
    and once. Two things break that on Ray. An insert whose call failed is sent again, though
    Ray may have run it (`ActorUnavailableError`: "may or may not have been executed"), so
    the replay got it twice. And a killed actor's insert that was waiting for room goes on in
    the table's thread, and may land after its restarted process's first inserts (the 1-hour
    soak, `benchmarks/soak.py`, stopped on the replay's error after ten actor kills). So every
    insert carries `order`, (source, incarnation, number): the actor, when its process started
    (`time.time_ns()`, so a restarted one's is larger), and a count of its inserts. One source's
    inserts run one at a time; one already applied, or from an incarnation older than the
    newest seen, is dropped (a dead process's unroll is lost with it, as its calls in flight)."""

    def __init__(self) -> None:
        self._locks: dict[int, threading.Lock] = {}
        self._guard = threading.Lock()
        self._applied: dict[int, tuple[int, int]] = {}  # source -> (incarnation, number)

    def apply(self, order: tuple[int, int, int] | None, insert: Callable[[], bool]) -> bool:
        """`insert()`'s answer, or True for an insert dropped as above."""
        if order is None:  # an inserter that is never restarted (the central server)
            return insert()
        source, incarnation, number = order
        with self._guard:
            lock = self._locks.setdefault(source, threading.Lock())
        with lock:
            newest, applied = self._applied.get(source, (incarnation, -1))
            if incarnation < newest or (incarnation == newest and number <= applied):
                return True
            answer = insert()
            self._applied[source] = (incarnation, number)
            return answer


class TableProcess:
    """One table of the run's data path; its methods are called remotely."""

    def __init__(
        self, program: Program, shards: int, index: int, checkpoints: str | None = None
    ) -> None:
        """`checkpoints`: the run's checkpoint folder, absolute (a Ray worker's working
        directory is not the driver's), where a restarted shard finds its snapshot."""
        die_on_sigterm()
        # Replay is what is sharded into processes (Ape-X, --replay-shards): a ReplayTable.
        table = program.data_path().make_table(shards, program.seed + 7919 * (index + 1))
        self.table = cast(ReplayTable, table)
        self.order = InsertOrder()  # actors' inserts: once each, in order
        # A restarted shard: what it came back with (`recovery`). The first start is restored
        # by the driver instead, from the checkpoint being resumed, before any actor inserts.
        self.recovered = (
            self._restore_newest(program, Path(checkpoints), shards, index)
            if checkpoints is not None and _restarted()
            else {"steps": None, "items": 0, "inserted": 0}
        )

    def _restore_newest(
        self, program: Program, checkpoints: Path, shards: int, index: int
    ) -> dict[str, Any]:
        """Restore this shard's file of the newest checkpoint's snapshot: the checkpoint's
        steps (None: none loads), the items restored (or why none were) and the inserts they
        count."""
        try:
            newest = load_latest(checkpoints, program.agent.name)
        except ShoalError as err:
            return {"steps": None, "items": str(user_error(err)), "inserted": 0}
        if newest is None:
            return {"steps": None, "items": "no checkpoint was written yet", "inserted": 0}
        files = (newest.get("replay") or {}).get("files", [])
        if len(files) != shards:
            items: int | str = "the checkpoint holds no replay snapshot"
        else:
            items = self.read_snapshot(str(checkpoints / files[index]))
        return {"steps": int(newest["env_steps"]), "items": items, "inserted": self.inserted()}

    def recovery(self) -> dict[str, Any]:
        return self.recovered

    def inserted(self) -> int:
        return self.table.limiter.inserts

    def watch(self, seconds: float) -> tuple[int, int]:
        """Return after `seconds`: the items inserted so far and the items held. The driver
        keeps one call in flight, so it hears at once when this process dies, and knows about
        what it held then."""
        time.sleep(seconds)
        return self.inserted(), len(self.table.replay)

    def insert(
        self,
        items: Any,
        version: int,
        block: bool = True,
        steps: int = 0,
        order: tuple[int, int, int] | None = None,
    ) -> bool:
        """`order`: see `InsertOrder`."""
        return self.order.apply(order, partial(self.table.insert, items, version, block, steps))

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

    # Replay snapshots: each shard writes and reads its own file (`shoal.runtime.snapshots`).

    def snapshot_bytes(self) -> int | None:
        return self.table.snapshot_bytes()

    def write_snapshot(self, path: str) -> int | str:
        return guarded(partial(self.table.write_snapshot, Path(path)))

    def read_snapshot(self, path: str) -> int | str:
        return guarded(partial(self.table.read_snapshot, Path(path)))

    def where(self) -> tuple[int, str]:
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()


class RemoteShards:
    """Table shards in other processes, as `ReplaySnapshots` sees them: every shard writes or
    reads its file at the same time. Paths are absolute, since a Ray worker's working
    directory is not the driver's; on a cluster the run directory must be on a filesystem the
    replay nodes share."""

    def __init__(self, handles: Sequence[Any]) -> None:
        import ray

        self.ray, self.handles = ray, list(handles)

    def sizes(self) -> list[int | str | None]:
        return self._answers([handle.snapshot_bytes.remote() for handle in self.handles])

    def write(self, paths: Sequence[Path]) -> list[int | str]:
        return self._each("write_snapshot", paths)

    def read(self, paths: Sequence[Path]) -> list[int | str]:
        return self._each("read_snapshot", paths)

    def _each(self, method: str, paths: Sequence[Path]) -> list[int | str]:
        pairs = zip(self.handles, paths, strict=True)
        calls = [getattr(handle, method).remote(str(path.resolve())) for handle, path in pairs]
        return self._answers(calls)

    def _answers(self, calls: list[Any]) -> list[Any]:
        """Each call's answer, or why there is none: a shard whose process died or is
        restarting fails its snapshot, not the run."""
        answers = []
        for call in calls:
            try:
                answers.append(self.ray.get(call))
            except self.ray.exceptions.RayError as err:
                answers.append(f"its process did not answer ({type(err).__name__})")
        return answers


class RemoteTable:
    """A table in another Ray process (a shard, or the learner's), as inserters see it.
    `source`: the inserting actor's index, whose inserts the table then applies once each and
    in order (`InsertOrder`); None for an inserter that is not restarted."""

    def __init__(self, handle: Any, source: int | None = None) -> None:
        self.handle, self.source = handle, source
        self.incarnation, self.inserts = time.time_ns(), 0

    def insert(self, items: Any, version: int, block: bool = True, steps: int = 0) -> bool:
        import ray

        ordered = {}
        if self.source is not None:  # the same number when sent again
            ordered = {"order": (self.source, self.incarnation, self.inserts)}
            self.inserts += 1
        while True:
            try:
                call = self.handle.insert.remote(items, version, block, steps, **ordered)
                return bool(ray.get(call))
            except died(ray):
                # The shard's process died, and these items with it unless sent again: Ray
                # restarts it under the same handle (a run's end kills this process too).
                time.sleep(RETRY_S)


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
        self._status: list[Any] = [None] * len(self.handles)  # each shard's status call out
        self._sent = np.zeros(len(self.handles))  # when it was sent
        self.answering = np.ones(len(self.handles), bool)  # not a status call out too long

    def _answer(self, call: Any, otherwise: Any, within: float | None = None) -> Any:
        """`call`'s answer, or `otherwise` if its shard died or, given `within`, has not
        answered within that many seconds: a call to a shard whose node is gone waits, not
        fails, while Ray has nowhere to restart it. The others go on meanwhile."""
        if within is not None and not self.ray.wait([call], num_returns=1, timeout=within)[0]:
            return otherwise
        try:
            return self.ray.get(call)
        except died(self.ray):
            return otherwise

    def _refresh(self) -> None:
        """Each shard's priority total, from one status call out per shard, taken without
        waiting: a shard whose call has been out for STATUS_WAIT_S weighs 0 (and is not
        waited at) until it answers. A call to a shard whose process or node is gone fails
        only after seconds, or, while Ray has no node to restart it on, waits; the learner
        samples the others meanwhile. A call out for STATUS_RESEND_S is sent again (the
        restarted shard answers that one)."""
        now = time.monotonic()
        if now - self._refreshed <= SIZE_REFRESH_S:
            return
        for i, handle in enumerate(self.handles):
            if self._status[i] is None or now - self._sent[i] > STATUS_RESEND_S:
                self._status[i], self._sent[i] = handle.status.remote(), now
        ready, _ = self.ray.wait(self._status, num_returns=len(self._status), timeout=0)
        for i, call in enumerate(self._status):
            if call in ready:
                self.weights[i] = self._answer(call, 0.0)
                self._status[i], self.answering[i] = None, True
            elif now - self._sent[i] > STATUS_WAIT_S:
                self.weights[i], self.answering[i] = 0.0, False
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
                call = self.handles[shard].sample.remote(progress, 0.0)
                batch = self._answer(call, None, STATUS_WAIT_S)
                if batch is not None:
                    return self._from(shard, batch)
                weights[shard] = self.weights[shard] = 0.0
            answering = np.flatnonzero(self.answering)  # no wait at a shard that is away
            shard = int(self.rng.choice(answering if len(answering) else len(self.handles)))
            wait = min(max(deadline - time.monotonic(), 0.0), SAMPLE_WAIT_S)
            call = self.handles[shard].sample.remote(progress, wait)
            batch = self._answer(call, None, wait + STATUS_WAIT_S)
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
        """The shards' figures merged, asked only of shards that answer their status calls
        (`_refresh`); one that does not answer within STATUS_WAIT_S is left out too. The
        learner asks after every learn call, so a wait here for an absent shard would hold
        learning back as much as one in `sample`."""
        self._refresh()
        asked = [h for h, answering in zip(self.handles, self.answering, strict=True) if answering]
        calls = [handle.stats.remote() for handle in asked]
        ready, _ = self.ray.wait(calls, num_returns=len(calls), timeout=STATUS_WAIT_S)
        return self.merge_stats([row for call in ready if (row := self._answer(call, None))])

    @property
    def sample_weight(self) -> float:
        return float(self.weights.sum())

    def close(self) -> None:
        for handle in self.handles:
            handle.close.remote()
