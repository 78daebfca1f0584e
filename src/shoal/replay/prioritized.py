"""Proportional prioritised sampling with importance weights, and a linear schedule for beta.

Schaul et al. 2016, "Prioritized Experience Replay": item `i` is drawn with probability
`P(i) = p_i^α / Σ_k p_k^α` where `p_i = |δ_i| + ε` (section 3.3, proportional variant) and its
update is corrected by the importance weight `w_i = (N · P(i))^-β / max_j w_j` (section 3.4), with
β annealed to 1 over training (`LinearSchedule`). Ape-X (Horgan et al. 2018) uses the same
sampler with priorities computed by the actors; pass those to `insert`.

Decisions:
- Stratified draws: the total is split into `batch_size` equal segments and one uniform value is
  drawn in each (Schaul et al., appendix B.2.1), which lowers the variance of a batch.
- Weights are normalised by the largest weight over the whole buffer, i.e. by the smallest stored
  priority (kept in a `MinTree`), as in the paper, not by the batch maximum. Then
  `w_i = (P(i) / P_min)^-β`: N cancels, every weight is in (0, 1], and a batch's scale does not
  depend on which items it happened to draw.
- New items get the largest priority `|δ| + ε` seen so far (1.0 before any), so each is sampled
  at least once soon after insertion (Schaul et al., algorithm 1, line 6).
- α = 0 gives uniform sampling with all weights 1; the uniform replay uses exactly that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from shoal.replay.sum_tree import MinTree, SumTree

__all__ = ["LinearSchedule", "PrioritizedSampler"]


@dataclass(frozen=True, kw_only=True)
class LinearSchedule:
    """`start` at step 0, moving linearly to `end` at `steps`, then held at `end`.

    Used for the importance-sampling exponent β (Schaul et al. 2016 anneal it from β0 to 1).
    """

    start: float  # value at step 0
    end: float  # value from `steps` on
    steps: int  # number of steps to go from `start` to `end`

    def __post_init__(self) -> None:
        if self.steps < 0:
            raise ValueError(f"LinearSchedule steps must be >= 0, got {self.steps}.")

    def value(self, step: int) -> float:
        """The scheduled value at `step` (clamped to `[0, steps]`)."""
        if self.steps == 0:
            return float(self.end)
        frac = min(max(step / self.steps, 0.0), 1.0)
        return float(self.start + frac * (self.end - self.start))


class PrioritizedSampler:
    """Priorities `p_i^α` of `capacity` slots and proportional, stratified sampling over them.

    A slot is active from `insert` (or `set_priorities`) until `remove`; only active slots are
    drawn and counted in the minimum used to normalise the weights.
    """

    def __init__(self, capacity: int, alpha: float, eps: float = 1e-6) -> None:
        if not alpha >= 0.0:
            raise ValueError(f"alpha must be >= 0 (0 samples uniformly), got {alpha}.")
        if not eps > 0.0:
            raise ValueError(f"eps must be > 0 so no item gets priority 0, got {eps}.")
        self.capacity = int(capacity)
        self.alpha = float(alpha)
        self.eps = float(eps)
        self._sum = SumTree(capacity)
        self._min = MinTree(capacity)
        self._max_priority = 1.0  # largest |δ| + ε seen so far, before the exponent α

    @property
    def max_priority(self) -> float:
        """The largest priority `|δ| + ε` ever set (1.0 before any): what new items get."""
        return self._max_priority

    @property
    def total(self) -> float:
        """`Σ_k p_k^α` over active slots."""
        return self._sum.total

    @property
    def nbytes(self) -> int:
        return self._sum.nbytes + self._min.nbytes

    def state_dict(self, used: int) -> dict[str, Any]:
        """The priorities `p^α` of slots `[0, used)` in both trees (views; the slots after them
        are empty) and the largest priority so far."""
        sums, mins = self._sum.leaves[:used], self._min.leaves[:used]
        return {"sum": sums, "min": mins, "max_priority": self._max_priority}

    def load_state_dict(self, state: Mapping[str, Any], used: int) -> None:
        """Priorities as `state_dict(used)` gave them, into a sampler with none set yet. The
        trees' inner nodes are recomputed from the leaves, so they equal the saved ones."""
        sums, mins = (np.asarray(state[key], np.float64) for key in ("sum", "min"))
        if sums.shape != (used,) or mins.shape != (used,):
            raise ValueError(
                f"the snapshot holds {sums.shape} and {mins.shape} priorities for {used} rows"
            )
        slots = np.arange(used)
        self._sum.update(slots, sums)
        self._min.update(slots, mins)
        self._max_priority = float(state["max_priority"])

    def insert(self, indices: np.ndarray, priorities: np.ndarray | None = None) -> None:
        """Activate slots `indices [K]` with `priorities [K]` (`|δ|` values, e.g. from Ape-X
        actors; NaN entries and `None` mean the largest priority seen so far)."""
        idx = np.asarray(indices, dtype=np.int64)
        raw = np.full(idx.shape, np.nan) if priorities is None else np.asarray(priorities, float)
        if raw.shape != idx.shape:
            raise ValueError(f"priorities {raw.shape} must match indices {idx.shape}.")
        fresh = np.isnan(raw)
        if np.isinf(raw).any():
            raise ValueError("insert priorities must be finite (or NaN for the maximum).")
        if fresh.all():
            self._set(idx, np.full(idx.shape, self._max_priority))
            return
        self._set(idx[~fresh], np.abs(raw[~fresh]) + self.eps)
        self._set(idx[fresh], np.full(int(fresh.sum()), self._max_priority))

    def set_priorities(self, indices: np.ndarray, td_abs: np.ndarray) -> None:
        """Set the priorities of slots `indices [K]` to `(|td_abs| + ε)^α` (activating them)."""
        td = np.asarray(td_abs, dtype=np.float64)
        idx = np.asarray(indices, dtype=np.int64)
        if td.shape != idx.shape:
            raise ValueError(f"td_abs {td.shape} must match indices {idx.shape} one to one.")
        if not np.isfinite(td).all():
            raise ValueError(
                "td_abs must be finite; a NaN or inf TD error means the loss diverged."
            )
        self._set(idx, np.abs(td) + self.eps)

    def remove(self, indices: np.ndarray) -> None:
        """Deactivate slots `indices [K]`: they are no longer drawn."""
        idx = np.asarray(indices, dtype=np.int64)
        self._sum.update(idx, np.zeros(idx.shape))
        self._min.update(idx, np.full(idx.shape, np.inf))

    def _set(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        if priorities.size:
            self._max_priority = max(self._max_priority, float(priorities.max()))
        scaled = priorities**self.alpha
        self._sum.update(indices, scaled)
        self._min.update(indices, scaled)

    def probabilities(self, indices: np.ndarray) -> np.ndarray:
        """`P(i) = p_i^α / Σ_k p_k^α` for slots `indices [K]`, float64."""
        return self._sum.get(np.asarray(indices, dtype=np.int64)) / self._sum.total

    def sample(
        self, batch_size: int, beta: float, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw `batch_size` active slots, one per equal segment of the total.

        Returns:
            `(indices [B] int64, weights [B] float32)` with
            `weights = (N · P(i))^-β / max_j (N · P(j))^-β = (P(i) / P_min)^-β`, the max (min)
            over all active slots.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
        if not beta >= 0.0:
            raise ValueError(f"beta must be >= 0, got {beta}.")
        total = self._sum.total
        if total <= 0.0:
            raise ValueError("Cannot sample: no slot is active (insert items first).")
        segment = total / batch_size
        values = (np.arange(batch_size) + rng.random(batch_size)) * segment
        indices = self._sum.find_prefix_sum(values)
        ratio = self._sum.get(indices) / self._min.min  # P(i) / P_min, >= 1
        weights = np.minimum(ratio ** (-beta), 1.0)
        return indices, weights.astype(np.float32)
