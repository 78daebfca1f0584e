"""Waiting on processes a test did not start (Ray's workers), without relying on timing."""

from __future__ import annotations

import os
import time


def assert_processes_end(pids: list[int], within_s: float = 30.0) -> None:
    """Every process in `pids` ends within `within_s` seconds. Ray ends a finished job's
    workers asynchronously (a worker exits once it sees its raylet or owner gone), later on
    a busy machine; a worker still there after `within_s` was leaked."""
    deadline = time.monotonic() + within_s
    alive = list(pids)
    while alive:
        alive = [pid for pid in alive if _exists(pid)]
        if alive and time.monotonic() > deadline:
            raise AssertionError(f"processes {alive} still run {within_s:.0f} s after the end")
        time.sleep(0.2)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
