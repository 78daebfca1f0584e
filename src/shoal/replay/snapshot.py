"""Restoring a replay from a snapshot: the rows in use, checked against the replay they go into.

A replay's `state_dict` gives its storage's first `min(written, capacity)` rows (every row that
was ever written: a ring fills from row 0), so a snapshot of a part-filled replay is as large as
its contents. `load_state_dict` checks everything before it changes anything, so a snapshot that
does not fit leaves the replay empty and usable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = ["restore_rows", "rows_used"]


def rows_used(state: Mapping[str, Any], capacity: int, written_now: int) -> int:
    """The rows a replay of `capacity` restores from `state`; a ValueError if it cannot."""
    if written_now:
        raise ValueError("a snapshot restores into a new, empty replay")
    if int(state["capacity"]) != capacity:
        raise ValueError(
            f"the snapshot is of a replay of capacity {int(state['capacity'])}, this one holds "
            f"{capacity} (was --replay-shards changed?)"
        )
    return min(int(state["written"]), capacity)


def restore_rows(
    targets: Mapping[str, np.ndarray], saved: Mapping[str, Any], used: int
) -> Callable[[], None]:
    """Check that `saved` holds the first `used` rows of each array of `targets` (same names,
    dtypes and row shapes) and return the copy, to run once everything else is checked too."""
    if set(saved) != set(targets):
        raise ValueError(
            f"the snapshot holds {sorted(saved)}; this replay stores {sorted(targets)}"
        )
    for name, target in targets.items():
        source = saved[name]
        if source.dtype != target.dtype or source.shape != (used, *target.shape[1:]):
            raise ValueError(
                f"{name!r} is {source.dtype} {list(source.shape)} in the snapshot; this replay "
                f"stores {target.dtype} {[used, *target.shape[1:]]}"
            )

    def copy() -> None:
        for name, target in targets.items():
            target[:used] = saved[name]

    return copy
