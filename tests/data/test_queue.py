"""UnrollQueue: on-policy batches of one version in actor order, bounded off-policy queues."""

from __future__ import annotations

import threading
import time

import numpy as np

from shoal.data import Unroll, UnrollQueue


def _unroll(version: int, slot: int, value: float = 0.0) -> Unroll:
    """A [2, 1] unroll whose observations hold `value`."""
    return Unroll(
        obs=np.full((3, 1, 1), value, np.float32),
        actions=np.zeros((2, 1), np.int64),
        rewards=np.zeros((2, 1), np.float32),
        terminated=np.zeros((2, 1), bool),
        truncated=np.zeros((2, 1), bool),
        extras={},
        final_obs=np.zeros((0, 1), np.float32),
        final_index=np.zeros((0, 2), np.int64),
        behaviour_version=version,
        env_slot=slot,
    )


def _insert_in_thread(queue, unroll, done):
    def insert():
        done.append(queue.insert(unroll, unroll.behaviour_version, steps=2))

    thread = threading.Thread(target=insert, daemon=True)
    thread.start()
    return thread


def test_on_policy_actors_wait_until_their_unroll_was_learned_from():
    queue = UnrollQueue(batch=2, capacity=2, on_policy=True)
    done: list[bool] = []
    first = _insert_in_thread(queue, _unroll(0, slot=4, value=1.0), done)
    time.sleep(0.1)
    assert first.is_alive() and not queue.can_sample()  # one of two unrolls: no batch yet
    second = _insert_in_thread(queue, _unroll(0, slot=0, value=2.0), done)
    batch = queue.sample(0.0, timeout=5.0)
    # In actor order (env slot 0 before slot 4), whichever arrived first.
    assert batch.data.obs[0, :, 0].tolist() == [2.0, 1.0] and batch.steps == 4
    time.sleep(0.1)
    assert first.is_alive() and second.is_alive()  # learned from only once the learner says so
    queue.after_update(batch, None, version=1)
    first.join(5), second.join(5)
    assert done == [True, True]
    # An unroll acted by weights the learner has moved past is dropped, and nobody waits.
    assert queue.insert(_unroll(0, slot=0), 0, steps=2)
    assert not queue.can_sample() and queue.stats() == {"unrolls_dropped": 1.0}


def test_off_policy_actors_wait_only_when_the_queue_is_full():
    queue = UnrollQueue(batch=1, capacity=2, on_policy=False)
    for version in (0, 1):
        assert queue.insert(_unroll(version, 0), version)  # returns at once
    done: list[bool] = []
    third = _insert_in_thread(queue, _unroll(2, 0), done)
    time.sleep(0.1)
    assert third.is_alive()  # full: bounded staleness
    assert queue.sample(0.0, 1.0).behaviour_version == 0  # oldest first
    third.join(5)
    assert done == [True] and queue.stats() == {}


def test_closing_releases_waiting_actors_and_learners():
    queue = UnrollQueue(batch=2, capacity=2, on_policy=True)
    done: list[bool] = []
    thread = _insert_in_thread(queue, _unroll(0, 0), done)
    time.sleep(0.05)
    queue.close()
    thread.join(5)
    assert not thread.is_alive() and queue.sample(0.0, timeout=None) is None
    assert not queue.insert(_unroll(0, 0), 0)
