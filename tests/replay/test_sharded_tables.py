"""The learner's view of table shards: shard choice and where new priorities go."""

from __future__ import annotations

import numpy as np
import pytest

from shoal.data import ReplayTable
from shoal.replay import TransitionReplay

pytest.importorskip("ray")
from shoal.runtime.tables import ShardedTables


class Call:
    """Stands in for a Ray method: `.remote(...)` runs it at once and returns the result."""

    def __init__(self, method):
        self.method = method

    def remote(self, *args):
        return self.method(*args)


class LocalShard:
    """A table shard in this process, with the methods `TableProcess` has."""

    def __init__(self, size: int, seed: int):
        replay = TransitionReplay(100, (2,), np.float32, prioritized=True)
        # A ratio the 400 batches below never reach: this test is about shard choice.
        self.table = ReplayTable(replay, batch_size=4, samples_per_insert=1000.0, min_size=1)
        rng = np.random.default_rng(seed)
        obs = rng.normal(size=(size, 2)).astype(np.float32)
        first = np.zeros(size, bool)
        first[0] = True
        items = {
            "obs": obs,
            "next_obs": obs,
            "action": np.zeros(size, np.int64),
            "reward": np.zeros(size, np.float32),
            "discount": np.ones(size, np.float32),
            "first": first,
            "last": np.zeros(size, bool),
            "stream": np.zeros(size, np.int64),
        }
        self.table.insert(items, version=0, block=False)
        self.updates, self.sampled = [], []
        for name in ("status", "sample", "after_update", "stats"):
            setattr(self, name, Call(getattr(self, f"_{name}")))

    def _status(self):
        return self.table.sample_weight

    def _sample(self, progress, timeout):
        batch = self.table.sample(progress, timeout)
        if batch is not None:
            self.sampled.append(batch.key.copy())
        return batch

    def _after_update(self, key, priorities, version):
        self.updates.append((key.copy(), priorities.copy()))
        self.table.replay.update_priorities(key, priorities)

    def _stats(self):
        return self.table.stats()


class InlineRay:
    @staticmethod
    def get(x):
        return x

    @staticmethod
    def wait(refs, num_returns, timeout=None):
        return refs[:num_returns], refs[num_returns:]


GONE = object()  # what a call to a shard whose host is gone returns: an answer never ready


class GoneShard:
    """A shard whose host is off the network: no call to it is ever answered."""

    def __init__(self):
        self.calls = 0
        for name in ("status", "sample", "after_update", "stats"):
            setattr(self, name, Call(self._call))

    def _call(self, *args):
        self.calls += 1
        return GONE


class RayWithAGoneShard(InlineRay):
    @staticmethod
    def wait(refs, num_returns, timeout=None):
        assert timeout is not None, "a wait for a shard that never answers must time out"
        return [r for r in refs if r is not GONE], [r for r in refs if r is GONE]


def test_the_learner_samples_the_other_shards_while_one_never_answers(monkeypatch):
    from shoal.runtime import tables

    gone = GoneShard()
    shards = [LocalShard(10, 0), gone, LocalShard(20, 1)]
    monkeypatch.setattr(tables, "SIZE_REFRESH_S", 0.0)
    view = ShardedTables(shards, ReplayTable.merge_stats)
    view.ray = RayWithAGoneShard
    drawn = np.zeros(3)
    for _ in range(100):
        batch = view.sample(0.0, 0.0)
        drawn[batch.shard] += 1
    assert drawn[1] == 0 and drawn[0] > 0 and drawn[2] > 0
    # One status call stays out to the gone shard, not one per refresh.
    assert gone.calls == 1
    assert view.stats()["replay_size"] == 9 + 19  # its figures are left out


def test_batches_come_from_shards_with_priority_mass_and_priorities_go_back_to_them(monkeypatch):
    from shoal.runtime import tables

    shards = [LocalShard(10, 0), LocalShard(40, 1), LocalShard(1, 2)]  # the last: nothing to sample
    monkeypatch.setattr(tables, "SIZE_REFRESH_S", 0.0)  # no time passes here
    view = ShardedTables(shards, ReplayTable.merge_stats)
    view.ray = InlineRay
    assert view.stats()["replay_size"] == 9 + 39 + 0  # a stream's newest waits for its next_obs
    drawn = np.zeros(3)
    for _ in range(400):
        batch = view.sample(0.0, 0.0)
        drawn[batch.shard] += 1  # one shard per batch
        view.after_update(batch, np.full(4, 2.0), 1)
    # Priority totals start at 9 : 39 : 0 (one per transition), so about a fifth from shard 0.
    assert drawn[2] == 0 and 0.1 < drawn[0] / drawn.sum() < 0.35
    for shard in shards:  # each shard gets back priorities for exactly the ids it handed out
        assert len(shard.updates) == len(shard.sampled)
        for (ids, _), sampled in zip(shard.updates, shard.sampled, strict=True):
            np.testing.assert_array_equal(ids, sampled)
    assert sum(len(s.updates) for s in shards) == 400
