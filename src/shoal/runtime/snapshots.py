"""Replay snapshots: a run's replay written with each checkpoint and read back on resume.

A launcher's tables live in its own process (inline, and the learner's tables on ray) or in
replay-shard processes (ray); `Tables` is the same three calls for both. `ReplaySnapshots`
decides whether a checkpoint takes a snapshot: `--checkpoint-replay` is on, the tables keep
snapshots (replays do; unroll queues do not), the snapshot fits `--replay-snapshot-budget` and
the disk has room for it. A snapshot that is not written is reported in one line and never
stops the run: the learner's checkpoint is what a resume cannot do without, and it is written
either way. Restoring happens before any actor inserts; a checkpoint without a snapshot (an old
one, or one over the budget) resumes with an empty replay and says so.

Each shard writes its own file, in parallel on ray; the checkpoint names them, and is written
after them (`shoal.run.checkpoints`), so the snapshot is complete whenever the checkpoint exists.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from shoal.data import Table
from shoal.errors import ShoalError, user_error
from shoal.run.checkpoints import snapshot_paths
from shoal.runtime.config import CheckpointSettings

__all__ = ["GB", "LocalTables", "ReplaySnapshots", "Tables", "guarded"]

GB = 1e9  # the budget's unit, as disks are sold
DISK_HEADROOM = 1e9  # bytes a snapshot leaves free: the checkpoint and the system need some


class Tables(Protocol):
    """A run's tables, wherever they live; a failure comes back as a one-line reason."""

    def sizes(self) -> list[int | str | None]:
        """Each table's `snapshot_bytes()` (None: it keeps no snapshot), or why it has none."""
        ...

    def write(self, paths: Sequence[Path]) -> list[int | str]:
        """Table i written to `paths[i]`: its size in bytes, or why it was not."""
        ...

    def read(self, paths: Sequence[Path]) -> list[int | str]:
        """Table i restored from `paths[i]`: the items it holds, or why it was not."""
        ...


def guarded(call: Callable[[], int]) -> int | str:
    """`call()`, or why it failed, in one line: one shard's failure is reported, not raised."""
    try:
        return call()
    except ShoalError as err:
        return str(user_error(err))
    except (OSError, ValueError, KeyError) as err:
        return f"{type(err).__name__}: {err}"


class LocalTables:
    """Tables in this process."""

    def __init__(self, tables: Sequence[Table]) -> None:
        self.tables = list(tables)

    def sizes(self) -> list[int | str | None]:
        return [table.snapshot_bytes() for table in self.tables]

    def write(self, paths: Sequence[Path]) -> list[int | str]:
        pairs = zip(self.tables, paths, strict=True)
        return [guarded(partial(table.write_snapshot, path)) for table, path in pairs]

    def read(self, paths: Sequence[Path]) -> list[int | str]:
        pairs = zip(self.tables, paths, strict=True)
        return [guarded(partial(table.read_snapshot, path)) for table, path in pairs]


class ReplaySnapshots:
    """Snapshots of `tables` for the driver's checkpoints; `say` prints one line."""

    def __init__(self, tables: Tables, run: CheckpointSettings, say: Callable[[str], None]) -> None:
        self.tables, self.run, self.say = tables, run, say
        self._skipped: str | None = None  # why the last snapshot was skipped, said once
        self.kept: list[Path] = []  # each shard's newest snapshot file
        self._absent: set[int] = set()  # shards whose files were carried, said once

    def save(self, directory: Path, env_steps: int) -> dict[str, Any] | None:
        """Write a snapshot for the checkpoint at `env_steps` into `directory`; return the
        checkpoint's `replay` entry (the files), or None when none is written."""
        run = self.run
        if not run.checkpoint_replay or run.replay_snapshot_budget <= 0:
            return None
        sizes = self.tables.sizes()
        if None in sizes:
            return None  # tables that keep no snapshot (unroll queues)
        # A shard that does not answer (its process or node died, and it is not back yet)
        # keeps the file of its newest snapshot: what it held then is all that exists of it,
        # and what it restores from when it comes back.
        absent = {i: why for i, why in enumerate(sizes) if isinstance(why, str) and self._has(i)}
        sizes = [
            self.kept[i].stat().st_size if i in absent else size for i, size in enumerate(sizes)
        ]
        failed = _failures(sizes)
        if failed:
            self._skip("failed", f"its size is unknown ({failed})")
            return None
        total = sum(size for size in sizes if isinstance(size, int))
        if total > run.replay_snapshot_budget * GB:
            self._skip(
                "budget",
                f"the replay takes {total / GB:.2f} GB, over --replay-snapshot-budget "
                f"{run.replay_snapshot_budget:g} (GB)",
            )
            return None
        free = shutil.disk_usage(directory).free
        if free < total + DISK_HEADROOM:
            self._skip(
                "disk", f"it takes {total / GB:.2f} GB and the disk has {free / GB:.2f} GB free"
            )
            return None
        paths = snapshot_paths(directory, env_steps, len(sizes))
        results = self.tables.write(paths)
        for i in absent:
            results[i] = _carry(self.kept[i], paths[i])
        failed = _failures(results)
        if failed:
            for path in paths:
                path.unlink(missing_ok=True)
            self._skip("failed", f"it could not be written ({failed})")
            return None
        self._skipped = None
        if absent.keys() != self._absent:
            for i, why in absent.items():
                self.say(
                    f"replay shard {i} is away ({why}): checkpoints keep its newest "
                    "snapshot until it is back."
                )
        self._absent = set(absent)
        self.kept = list(paths)
        return {"files": [path.name for path in paths], "bytes": results}

    def _has(self, shard: int) -> bool:
        return shard < len(self.kept) and self.kept[shard].exists()

    def _skip(self, kind: str, reason: str) -> None:
        if kind != self._skipped:
            self.say(
                f"replay snapshot skipped: {reason}. Checkpoints hold the learner only while this "
                "lasts; a run resumed from one refills its replay before learning goes on."
            )
        self._skipped = kind

    def restore(self, resume: dict[str, Any] | None, directory: Path) -> None:
        """Restore the snapshot of the checkpoint `resume` into the tables (new and empty)."""
        if resume is None:
            return
        sizes = self.tables.sizes()
        if None in sizes:
            return  # tables that keep no snapshot: nothing was lost
        where = f"the checkpoint at {resume['env_steps']} steps"
        empty = "the replay starts empty and refills before learning goes on"
        entry = resume.get("replay")
        if entry is None:
            self.say(
                f"{where} holds no replay snapshot (written without --checkpoint-replay, over "
                f"its budget, or by an older shoal): {empty}."
            )
            return
        files = list(entry["files"])
        if len(files) != len(sizes):
            self.say(
                f"the replay snapshot of {where} has {len(files)} shards and this run "
                f"{len(sizes)} (--replay-shards): {empty}."
            )
            return
        self.kept = [directory / name for name in files]
        results = self.tables.read(self.kept)
        counts = [result for result in results if isinstance(result, int)]
        shards = f" (shards: {', '.join(map(str, counts))})" if len(files) > 1 else ""
        failed = _failures(results)
        self.say(
            f"replay restored from {where}: {sum(counts)} items{shards}"
            + (f"; not restored, so starting empty: {failed}" if failed else "")
            + "."
        )


def _carry(kept: Path, path: Path) -> int | str:
    """`kept`'s content under the new name `path` (a hard link where the filesystem has them):
    its size, or why it could not be carried."""
    try:
        try:
            os.link(kept, path)
        except OSError:
            shutil.copyfile(kept, path)
        return path.stat().st_size
    except OSError as err:
        return f"its newest snapshot could not be kept ({type(err).__name__}: {err})"


def _failures(results: Sequence[int | str | None]) -> str:
    """'shard 1: reason; ...' for the results that are reasons, '' if none."""
    return "; ".join(
        f"shard {i}: {result}" for i, result in enumerate(results) if isinstance(result, str)
    )
