"""Replay snapshots: a table written to a file and read into a new one holds the same replay."""

from __future__ import annotations

import numpy as np
import pytest

from shoal.data import ReplayTable
from shoal.errors import CheckpointError
from shoal.replay import NStepAccumulator, SequenceReplay, TransitionReplay, sequence_fields

K, FRAME, ENVS = 4, (6, 6), 3


class StackedFrames:
    """`ENVS` envs of random frames stacked by K (an episode's first frame repeated before it),
    ending at random, fed through n-step assembly as an actor does."""

    def __init__(self, seed: int, n: int = 3) -> None:
        self.rng = np.random.default_rng(seed)
        self.acc = NStepAccumulator(ENVS, n, 0.9)
        self.stacks = np.stack([self._start() for _ in range(ENVS)])
        self.step_count = 0

    def _start(self) -> np.ndarray:
        return np.repeat(self._frame()[None], K, axis=0)

    def _frame(self) -> np.ndarray:
        return self.rng.integers(0, 256, FRAME, dtype=np.uint8)

    def items(self, steps: int) -> dict[str, np.ndarray]:
        parts = []
        for _ in range(steps):
            obs = self.stacks.copy()
            self.stacks = np.concatenate([obs[:, 1:], self._frames()], axis=1)
            ended = self.rng.random(ENVS) < 0.05
            final = {int(e): self.stacks[e].copy() for e in np.flatnonzero(ended)}
            for e in np.flatnonzero(ended):
                self.stacks[e] = self._start()
            action = self.step_count * ENVS + np.arange(ENVS)
            self.step_count += 1
            reward = self.rng.normal(size=ENVS).astype(np.float32)
            parts.append(self.acc.step(obs, action, reward, ended, ~ended & False, obs, final))
        items = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
        items["priority"] = self.rng.random(len(items["reward"])).astype(np.float32)
        return items

    def _frames(self) -> np.ndarray:
        return np.stack([self._frame() for _ in range(ENVS)])[:, None]


def _table(capacity: int = 200, seed: int = 0) -> ReplayTable:
    replay = TransitionReplay(
        capacity, (K, *FRAME), np.uint8, frame_stack=K, prioritized=True, alpha=0.6
    )
    return ReplayTable(replay, batch_size=16, samples_per_insert=2.0, min_size=50, seed=seed)


def _used_table(capacity: int = 200) -> tuple[ReplayTable, StackedFrames]:
    """A table that wrapped around its capacity, was sampled and had priorities updated."""
    table, source = _table(capacity), StackedFrames(seed=1)
    for _ in range(12):
        table.insert(source.items(10), version=3, block=False, steps=10 * ENVS)
        while table.can_sample():
            batch = table.sample(0.5, 0.0)
            new = np.abs(np.random.default_rng(len(batch.key)).normal(size=len(batch.key)))
            table.after_update(batch, new + batch.key % 7, version=4)
    assert table.replay.num_added > capacity and table.limiter.samples > 0
    return table, source


def _assert_same(a, b, where: str = "") -> None:
    if isinstance(a, dict):
        assert set(a) == set(b), where
        for key in a:
            _assert_same(a[key], b[key], f"{where}/{key}")
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=where)


def test_a_restored_table_holds_the_same_replay_priorities_and_counters(tmp_path):
    table, _ = _used_table()
    size = table.write_snapshot(tmp_path / "snap")
    assert size == (tmp_path / "snap").stat().st_size
    restored = _table(seed=99)  # its own sampling generator is replaced by the saved one
    assert restored.read_snapshot(tmp_path / "snap") == len(table.replay) > 0

    # Frames, links, insert ids, the priority trees (so the sampling distribution) and counts.
    _assert_same(restored.replay.state_dict(), table.replay.state_dict())
    assert restored.limiter.snapshot() == table.limiter.snapshot()
    assert not restored.can_sample() and not table.can_sample()  # the ratio line goes on
    # The same inserts (new episodes, as a resumed run's actors start) go in the same way, and
    # the same batches follow.
    fresh = StackedFrames(seed=2)
    for version in (5, 6):
        more = fresh.items(10)
        table.insert(more, version=version, block=False)
        restored.insert(more, version=version, block=False)
        assert restored.can_sample() and table.can_sample()
        first, second = table.sample(0.7, 0.0), restored.sample(0.7, 0.0)
        _assert_same(second.data, first.data)
        assert second.behaviour_version == first.behaviour_version == version
    _assert_same(restored.replay.state_dict(), table.replay.state_dict())


def test_streams_going_on_after_a_restore_start_new_chains(tmp_path):
    """A restarted shard's actors kept acting while it was down: their next steps continue
    episodes whose last steps it never saw. They are taken, and link to nothing before them."""
    table, source = _used_table()
    table.write_snapshot(tmp_path / "snap")
    restored = _table(seed=99)
    restored.read_snapshot(tmp_path / "snap")
    source.items(5)  # inserted into the shard that died: lost
    restored_rows = restored.replay._written
    restored.insert(source.items(10), version=5, block=False)  # mid-episode, not flagged first
    replay = restored.replay
    new = np.arange(restored_rows, replay._written)
    prev = replay._prev[new % replay.capacity]
    assert len(new) > 0 and ((prev == -1) | (prev >= restored_rows)).all()
    assert (prev == -1).sum() >= ENVS  # each stream's first step since the restore
    while restored.can_sample():  # and their frame stacks are whole
        assert restored.sample(0.5, 0.0).data["obs"].shape[1:] == (K, *FRAME)


def test_the_snapshot_stores_each_frame_once():
    table, _ = _used_table()
    stored, rows, frame = table.snapshot_bytes(), table.replay.capacity, int(np.prod(FRAME))
    # One frame per row, 54 bytes of per-row fields and priorities (under 1% of an 84x84
    # frame) and 24 per env stream: not the K frames of an observation, twice (obs, next_obs).
    assert rows * frame < stored <= rows * (frame + 54) + 24 * ENVS < rows * K * frame


def test_a_sequence_replay_round_trips_with_its_stacked_frames(tmp_path):
    length, hidden = 5, 3
    fields = sequence_fields(
        (K, *FRAME), np.uint8, length, start_fields={"core_h": ((hidden,), np.float32)}
    )

    def table() -> ReplayTable:
        replay = SequenceReplay(20, fields, frame_stack=K)
        return ReplayTable(replay, batch_size=4, samples_per_insert=1.0, min_size=4)

    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (30, length + K, *FRAME), dtype=np.uint8)
    stacks = np.stack([frames[:, t : t + K] for t in range(length + 1)], axis=1)
    items = {name: np.zeros((30, *shape), dtype) for name, (shape, dtype) in fields.items()}
    items |= {"obs": stacks, "core_h": rng.normal(size=(30, hidden)).astype(np.float32)}
    items["priority"] = rng.random(30)
    original = table()
    original.insert(items, version=2, block=False)  # 30 into 20 rows: it wraps
    batch = original.sample(0.0, 0.0)
    original.after_update(batch, rng.random(4) + 1, version=3)
    original.write_snapshot(tmp_path / "seq")
    copy = table()
    assert copy.read_snapshot(tmp_path / "seq") == 20
    _assert_same(copy.replay.state_dict(), original.replay.state_dict())
    _assert_same(copy.sample(0.0, 0.0).data, original.sample(0.0, 0.0).data)


def test_a_snapshot_that_does_not_fit_changes_nothing(tmp_path):
    table, _ = _used_table()
    table.write_snapshot(tmp_path / "snap")
    smaller = _table(capacity=100)
    with pytest.raises(ValueError, match="capacity 200, this one holds 100"):
        smaller.read_snapshot(tmp_path / "snap")
    assert len(smaller.replay) == 0 and smaller.limiter.snapshot() == (0, 0)
    smaller.insert(StackedFrames(seed=2).items(30), version=0, block=False)  # works as new
    assert smaller.can_sample()


def test_a_cut_or_foreign_file_is_refused_with_its_reason(tmp_path):
    table, _ = _used_table()
    path = tmp_path / "snap"
    table.write_snapshot(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"not the \d+ its header names"):
        _table().read_snapshot(path)
    path.write_bytes(b"PK\x03\x04 a zip file")
    with pytest.raises(CheckpointError, match="not a shoal replay snapshot"):
        _table().read_snapshot(path)
