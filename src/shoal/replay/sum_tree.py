"""Sum and min segment trees over float64 priorities, updated and searched a batch at a time.

The trees of prioritised replay (Schaul et al. 2016, "Prioritized Experience Replay", appendix
B.2.1): a complete binary tree whose leaves hold the priorities and whose inner nodes hold the sum
(or minimum) of their children, so sampling proportionally to priority and finding the smallest
priority take O(log N).

Layout: `2P` float64 nodes with `P` the smallest power of two >= capacity; the root is node 1 and
leaf `i` is node `P + i`. Leaves past `capacity` stay at the neutral value (0 for sums, +inf for
minima). Every operation takes a batch: one numpy step per tree level, no Python loop over the
batch. Inner nodes are recomputed from their children rather than shifted by deltas, so the total
does not drift however many updates it sees.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MinTree", "SumTree"]


class _SegmentTree:
    """A complete binary tree of float64 leaves whose inner nodes combine their two children."""

    _neutral: float = 0.0

    def __init__(self, capacity: int) -> None:
        if int(capacity) < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}.")
        self.capacity = int(capacity)
        self._depth = max(0, (self.capacity - 1).bit_length())
        self._leaf0 = 1 << self._depth  # P, the node number of leaf 0
        self._nodes = np.full(2 * self._leaf0, self._neutral, dtype=np.float64)

    def _combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _check_indices(self, indices: np.ndarray) -> np.ndarray:
        idx = np.asarray(indices)
        if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"indices must be a 1-D integer array, got {idx.dtype} {idx.shape}.")
        if idx.size and (idx.min() < 0 or idx.max() >= self.capacity):
            raise ValueError(
                f"indices must lie in [0, {self.capacity}), got [{idx.min()}, {idx.max()}]."
            )
        return idx.astype(np.int64, copy=False)

    def _check_values(self, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
        vals = np.asarray(values, dtype=np.float64)
        if vals.shape != indices.shape:
            raise ValueError(
                f"priorities {vals.shape} must match indices {indices.shape} one to one."
            )
        return vals

    def update(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Set leaves `indices [K]` to `priorities [K]`; for a repeated index the last one wins."""
        idx = self._check_indices(indices)
        vals = self._check_values(idx, priorities)
        if idx.size == 0:
            return
        # np.unique on the reversed batch keeps each index's first hit there: its last one here.
        idx, keep = np.unique(idx[::-1], return_index=True)
        nodes = idx + self._leaf0
        self._nodes[nodes] = vals[::-1][keep]
        for _ in range(self._depth):
            nodes = nodes >> 1  # still sorted: drop the repeats next to each other
            nodes = nodes[np.concatenate(([True], nodes[1:] != nodes[:-1]))]
            self._nodes[nodes] = self._combine(self._nodes[2 * nodes], self._nodes[2 * nodes + 1])

    def get(self, indices: np.ndarray) -> np.ndarray:
        """Leaf values `[K]` float64 at `indices [K]`."""
        return np.asarray(self._nodes[self._check_indices(indices) + self._leaf0])

    @property
    def leaves(self) -> np.ndarray:
        """A read-only view of all `capacity` leaf values."""
        view: np.ndarray = self._nodes[self._leaf0 : self._leaf0 + self.capacity]
        view.flags.writeable = False
        return view

    @property
    def nbytes(self) -> int:
        return int(self._nodes.nbytes)


class SumTree(_SegmentTree):
    """Leaves are non-negative priorities; the root is their sum.

    `find_prefix_sum` maps uniform draws in `[0, total)` to leaves with probability
    `p_i / Σ_j p_j`, the proportional sampling of Schaul et al. 2016 (section 3.3).
    """

    _neutral = 0.0

    def _combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        out: np.ndarray = left + right
        return out

    def _check_values(self, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
        vals = super()._check_values(indices, values)
        if vals.size and not (np.isfinite(vals).all() and vals.min() >= 0):
            raise ValueError("priorities must be finite and >= 0.")
        return vals

    @property
    def total(self) -> float:
        """Σ of all leaves."""
        return float(self._nodes[1])

    def find_prefix_sum(self, values: np.ndarray) -> np.ndarray:
        """Leaf indices `[K]` int64: for each `v` in `values [K]`, the `i` with
        `Σ_{j<i} p_j <= v < Σ_{j<=i} p_j`.

        The descent never enters a subtree whose sum is zero, so every returned leaf has a
        positive priority, even for `v >= total` (rounding) which lands on the last such leaf.
        """
        vals = np.array(values, dtype=np.float64)  # a copy: the descent subtracts in place
        if vals.ndim != 1:
            raise ValueError(f"values must be a 1-D array, got shape {vals.shape}.")
        if not np.isfinite(vals).all():
            raise ValueError("values must be finite.")
        if self.total <= 0.0:
            raise ValueError("find_prefix_sum needs a positive total; every priority is zero.")
        nodes = np.ones(vals.shape, dtype=np.int64)
        for _ in range(self._depth):
            left = self._nodes[2 * nodes]
            right = self._nodes[2 * nodes + 1]
            go_right = (right > 0.0) & ((vals >= left) | (left <= 0.0))
            vals = np.where(go_right, vals - left, vals)
            nodes = 2 * nodes + go_right
        return np.asarray(nodes - self._leaf0)


class MinTree(_SegmentTree):
    """Leaves are priorities or +inf for empty slots; the root is their minimum."""

    _neutral = float("inf")

    def _combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.minimum(left, right)
        return out

    def _check_values(self, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
        vals = super()._check_values(indices, values)
        if np.isnan(vals).any():
            raise ValueError("priorities must not be NaN.")
        return vals

    @property
    def min(self) -> float:
        """The smallest leaf (+inf when every leaf is empty)."""
        return float(self._nodes[1])
