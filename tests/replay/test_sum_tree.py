"""SumTree and MinTree against brute-force numpy references (cumsum + searchsorted, min)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shoal.replay import MinTree, SumTree

CAPACITIES = [1, 2, 3, 5, 7, 64, 100, 1000, 1025]


def reference_prefix_search(priorities: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The i with cumsum[i-1] <= v < cumsum[i]: the proportional draw of Schaul et al. 2016."""
    return np.searchsorted(np.cumsum(priorities), values, side="right")


@pytest.mark.parametrize("capacity", CAPACITIES)
def test_prefix_sum_matches_cumsum_search_on_random_priorities(capacity: int) -> None:
    rng = np.random.default_rng(capacity)
    priorities = rng.exponential(size=capacity)
    priorities[rng.random(capacity) < 0.2] = 0.0  # empty slots must never be found
    priorities[0] = max(priorities[0], 0.5)
    tree = SumTree(capacity)
    tree.update(np.arange(capacity), priorities)
    values = rng.random(5000) * priorities.sum()
    found = tree.find_prefix_sum(values)
    np.testing.assert_array_equal(found, reference_prefix_search(priorities, values))
    assert (priorities[found] > 0).all()


@pytest.mark.parametrize("capacity", [3, 7, 64, 100])
def test_prefix_sum_exact_at_segment_boundaries(capacity: int) -> None:
    # Integer priorities keep every partial sum exact, so boundaries can be hit on purpose.
    rng = np.random.default_rng(1)
    priorities = rng.integers(0, 4, size=capacity).astype(np.float64)
    priorities[-1] = 0.0  # a zero at the end: v >= total must not land on it
    priorities[0] = 2.0
    tree = SumTree(capacity)
    tree.update(np.arange(capacity), priorities)
    total = priorities.sum()
    cumsum = np.cumsum(priorities)
    values = np.r_[cumsum[cumsum < total], 0.0, total - 0.5]  # every boundary inside [0, total)
    np.testing.assert_array_equal(
        tree.find_prefix_sum(values), reference_prefix_search(priorities, values)
    )
    beyond = tree.find_prefix_sum(np.array([total, total * 1.5]))
    np.testing.assert_array_equal(beyond, np.flatnonzero(priorities)[[-1, -1]])
    assert tree.total == total


def test_update_duplicates_last_wins_and_get() -> None:
    tree = SumTree(6)
    tree.update(np.array([1, 4, 1, 1, 4]), np.array([5.0, 1.0, 2.0, 7.0, 3.0]))
    np.testing.assert_array_equal(tree.get(np.array([0, 1, 4, 5])), [0.0, 7.0, 3.0, 0.0])
    assert tree.total == 10.0
    np.testing.assert_array_equal(tree.leaves, [0, 7, 0, 0, 3, 0])


def test_ring_writes_wrap_around_and_keep_the_latest_round() -> None:
    capacity, rng = 37, np.random.default_rng(2)
    tree = SumTree(capacity)
    latest = np.zeros(capacity)
    cursor = 0
    for _ in range(50):  # batches of 11 written round the ring, as a replay writes its rows
        batch = rng.random(11)
        slots = (cursor + np.arange(11)) % capacity
        tree.update(slots, batch)
        latest[slots] = batch
        cursor += 11
    np.testing.assert_array_equal(tree.leaves, latest)
    assert tree.total == pytest.approx(latest.sum(), rel=1e-12)
    values = rng.random(1000) * latest.sum()
    np.testing.assert_array_equal(
        tree.find_prefix_sum(values), reference_prefix_search(latest, values)
    )


def test_total_does_not_drift_over_many_updates() -> None:
    capacity, rng = 1000, np.random.default_rng(3)
    tree = SumTree(capacity)
    leaves = np.zeros(capacity)
    for _ in range(3000):
        idx = rng.integers(0, capacity, size=32)
        pri = rng.exponential(size=32) * 10.0 ** rng.integers(-6, 6)
        tree.update(idx, pri)
        _, last = np.unique(idx[::-1], return_index=True)
        leaves[np.unique(idx)] = pri[::-1][last]
    exact = math.fsum(leaves)
    assert abs(tree.total - exact) <= 1e-12 * exact
    np.testing.assert_array_equal(tree.leaves, leaves)


def test_min_tree_tracks_the_smallest_set_leaf() -> None:
    tree = MinTree(10)
    assert tree.min == math.inf
    tree.update(np.array([3, 7, 9]), np.array([2.0, 0.5, 4.0]))
    assert tree.min == 0.5
    tree.update(np.array([7]), np.array([math.inf]))  # emptied
    assert tree.min == 2.0


def test_bad_inputs_are_rejected() -> None:
    tree = SumTree(4)
    with pytest.raises(ValueError, match="finite and >= 0"):
        tree.update(np.array([0]), np.array([-1.0]))
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        tree.update(np.array([4]), np.array([1.0]))
    with pytest.raises(ValueError, match="positive total"):
        tree.find_prefix_sum(np.array([0.0]))
    with pytest.raises(ValueError, match="capacity"):
        SumTree(0)
