"""Replay snapshot of 1M Atari transitions: time to write it, its size on disk, time to read it.

Fills a prioritised `TransitionReplay` (84x84 uint8 frames stacked by 4, 3-step transitions)
behind a `ReplayTable` with `--transitions` synthetic transitions through the buffer's own
`add` (`replay_memory.fill`, as actors send them), sets new priorities for a sampled part,
then writes the table's snapshot with `ReplayTable.write_snapshot` (what a checkpoint does:
temp file, fsync, rename) into `--dir` and reads it back into a new table. Target (issue 14):
written in under 60 s and at most 8 GB on disk.

    python benchmarks/replay_snapshot_atari.py [--transitions 1000000] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from pathlib import Path

import numpy as np
from replay_memory import SIZE, STACK, fill

from shoal.data import ReplayTable
from shoal.replay import TransitionReplay

GB = 1e9


def make_table(capacity: int) -> ReplayTable:
    replay = TransitionReplay(
        capacity, (STACK, SIZE, SIZE), np.uint8, frame_stack=STACK, prioritized=True
    )
    return ReplayTable(replay, batch_size=32, samples_per_insert=8.0, min_size=50_000)


def reprioritise(table: ReplayTable, batches: int) -> None:
    """Sample and re-prioritise like a learner, so the sum tree holds varied priorities."""
    rng = np.random.default_rng(1)
    for _ in range(batches):
        sample = table.replay.sample(32, 0.4, table.rng)
        table.replay.update_priorities(sample["indices"], rng.random(32) * 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transitions", type=int, default=1_000_000)
    parser.add_argument("--episode-length", type=int, default=1_000)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where to write it")
    args = parser.parse_args()
    capacity = args.transitions + args.transitions // args.episode_length + args.envs
    table = make_table(capacity)
    started = time.perf_counter()
    fill(table.replay, args.transitions, args.episode_length, args.envs)
    reprioritise(table, 2_000)
    print(f"filled {len(table.replay):,} transitions in {time.perf_counter() - started:.0f} s")
    expected = table.snapshot_bytes()

    path = Path(args.dir) / f"replay-snapshot-bench-{time.time_ns()}"
    try:
        started = time.perf_counter()
        size = table.write_snapshot(path)
        written = time.perf_counter() - started
        print(
            f"snapshot written in {written:.1f} s: {size / GB:.2f} GB on disk "
            f"({size / len(table.replay):,.0f} bytes per transition; estimated "
            f"{expected / GB:.2f} GB), {size / GB / written:.2f} GB/s including fsync"
        )
        items = len(table.replay)
        del table
        gc.collect()  # one replay in memory at a time
        copy = make_table(capacity)
        started = time.perf_counter()
        restored = copy.read_snapshot(path)
        print(
            f"snapshot read into a new table in {time.perf_counter() - started:.1f} s: "
            f"{restored:,} transitions (written: {items:,})"
        )
        copy.replay.sample(32, 0.4, copy.rng)
    finally:
        path.unlink(missing_ok=True)
    verdict = "meets" if written < 60 and size <= 8 * GB else "misses"
    print(f"target: written in under 60 s and at most 8 GB -> {verdict}")


if __name__ == "__main__":
    main()
