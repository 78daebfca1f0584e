"""The learner's view of replay shards: shard choice, id encoding and priority routing."""

from __future__ import annotations

import numpy as np
import pytest

from shoal.replay import TransitionReplay

pytest.importorskip("ray")
from shoal.runtime.replay_service import ShardedReplay


class Call:
    """Stands in for a Ray method: `.remote(...)` runs it at once and returns the result."""

    def __init__(self, method):
        self.method = method

    def remote(self, *args):
        return self.method(*args)


class LocalShard:
    """A replay shard in this process, with the methods `ReplayShard` has."""

    def __init__(self, size: int, seed: int):
        self.replay = TransitionReplay(100, (2,), np.float32, prioritized=True)
        rng = np.random.default_rng(seed)
        obs = rng.normal(size=(size, 2)).astype(np.float32)
        first = np.zeros(size, bool)
        first[0] = True
        self.replay.add(
            {
                "obs": obs,
                "next_obs": obs,
                "action": np.zeros(size, np.int64),
                "reward": np.zeros(size, np.float32),
                "discount": np.ones(size, np.float32),
                "first": first,
                "last": np.zeros(size, bool),
                "stream": np.zeros(size, np.int64),
            }
        )
        self.updates, self.sampled = [], []
        for name in ("status", "sample", "update_priorities"):
            setattr(self, name, Call(getattr(self, f"_{name}")))

    def _status(self):
        return len(self.replay), self.replay.priority_total

    def _sample(self, batch_size, beta, seed):
        batch = self.replay.sample(batch_size, beta, np.random.default_rng(seed))
        self.sampled.append(batch["indices"].copy())
        return batch, len(self.replay), self.replay.priority_total

    def _update_priorities(self, ids, priorities):
        self.updates.append((ids.copy(), priorities.copy()))
        self.replay.update_priorities(ids, priorities)


class InlineRay:
    @staticmethod
    def get(x):
        return x

    @staticmethod
    def wait(refs, num_returns):
        return refs[:num_returns], refs[num_returns:]


def test_batches_come_from_shards_with_priority_mass_and_priorities_go_back_to_them():
    shards = [LocalShard(10, 0), LocalShard(40, 1), LocalShard(1, 2)]  # the last: nothing to sample
    replay = ShardedReplay(shards)
    replay.ray = InlineRay
    assert len(replay) == 9 + 39 + 0  # a stream's newest transition waits for its next_obs
    rng = np.random.default_rng(0)
    drawn = np.zeros(3)
    for _ in range(400):
        batch = replay.sample(4, 0.4, rng)
        shard = batch["indices"] % 3
        assert len(set(shard)) == 1  # one shard per batch
        drawn[shard[0]] += 1
        replay.update_priorities(batch["indices"], np.full(4, 2.0))
    # Priority totals start at 9 : 39 : 0 (one per transition), so about a fifth from shard 0.
    assert drawn[2] == 0 and 0.1 < drawn[0] / drawn.sum() < 0.35
    for shard in shards:  # each shard gets back exactly the ids it handed out, decoded
        assert len(shard.updates) == len(shard.sampled)
        for (ids, _), sampled in zip(shard.updates, shard.sampled, strict=True):
            np.testing.assert_array_equal(ids, sampled)
    assert sum(len(s.updates) for s in shards) == 400
