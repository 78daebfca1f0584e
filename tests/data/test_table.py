"""ReplayTable: the exact replay ratio on the learner's side, bounded lead on the actors'."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from shoal.data import ReplayTable
from shoal.replay import TransitionReplay


def _items(count: int, start: int = 0) -> dict[str, np.ndarray]:
    """`count` one-step transitions of one stream, continuing at step `start`."""
    obs = np.arange(start, start + count, dtype=np.float32)[:, None].repeat(2, 1)
    first = np.zeros(count, bool)
    first[0] = start == 0
    return {
        "obs": obs,
        "next_obs": obs + 1,
        "action": np.zeros(count, np.int64),
        "reward": np.ones(count, np.float32),
        "discount": np.full(count, 0.9, np.float32),
        "first": first,
        "last": np.zeros(count, bool),
        "stream": np.zeros(count, np.int64),
    }


def _table(spi: float = 4.0, min_size: int = 100, batch: int = 10) -> ReplayTable:
    replay = TransitionReplay(10_000, (2,), np.float32, prioritized=True)
    return ReplayTable(replay, batch_size=batch, samples_per_insert=spi, min_size=min_size)


def test_the_learner_never_samples_past_the_ratio_line():
    table = _table()
    inserted = 0
    for count in (60, 60, 37, 51, 80):
        table.insert(_items(count, inserted), 0, block=False, steps=count)
        inserted += count
        while table.can_sample():
            assert table.sample(0.0, 0.0) is not None
        sampled = table.limiter.samples
        # sampled <= 4 (inserted - 100) < sampled + one batch, from the first 100 inserts on.
        assert sampled <= 4 * max(inserted - 100, 0) < sampled + 10 or inserted < 100
    assert table.stats()["replay_sampled"] == table.limiter.samples > 0
    assert table.sample(0.0, timeout=0.05) is None  # waits for the actors, then gives up


def test_actors_wait_when_ahead_by_more_than_the_tolerance():
    table = _table(spi=4.0, min_size=100, batch=10)
    # Tolerance: 10% of 4 over 100 items = 40 samples' worth, at least a chunk plus a batch.
    assert table.limiter.insert_lead == 40 and table.chunk == 7
    table.insert(_items(100), 0)  # filling never waits
    done: list[bool] = []
    thread = threading.Thread(target=lambda: done.append(table.insert(_items(30, 100), 0)))
    thread.start()
    time.sleep(0.2)
    # 7 items (28 samples' worth) went in; the next chunk would put the actors 56 ahead.
    assert thread.is_alive() and table.limiter.inserts == 107
    for _ in range(20):  # the learner catches up; the actor goes on chunk by chunk
        if not thread.is_alive():
            break
        batch = table.sample(0.0, timeout=5.0)
        table.after_update(batch, np.full(10, 2.0), 1)
        inserts, samples = table.limiter.snapshot()
        assert samples <= 4 * (inserts - 100) <= samples + 40  # the learner never ahead
    thread.join(5)
    assert done == [True] and table.limiter.inserts == 130


def test_beta_follows_progress_and_stats_merge_over_shards():
    table = _table(min_size=10)
    table.insert(_items(50), 0, block=False, steps=50)
    table.sample(0.5, 0.0)
    stats = table.stats()
    assert stats["priority_beta"] == pytest.approx(0.4 + 0.5 * 0.6)
    assert stats["replay_ratio"] == pytest.approx(10 / 50)
    merged = ReplayTable.merge_stats([stats, {**stats, "replay_sampled": 30.0}])
    assert merged["replay_inserted"] == 100 and merged["replay_ratio"] == pytest.approx(40 / 100)
    batch = table.sample(0.0, 0.0)
    assert batch.steps == 50 and batch.key.shape == (10,)


def test_closing_releases_a_waiting_actor():
    table = _table(min_size=10)
    table.insert(_items(10), 0)
    done: list[bool] = []
    thread = threading.Thread(target=lambda: done.append(table.insert(_items(40, 10), 0)))
    thread.start()
    time.sleep(0.1)
    table.close()
    thread.join(5)
    assert done == [False]
