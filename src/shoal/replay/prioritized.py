"""Proportional prioritised sampling with importance weights, and a linear schedule for beta.

Schaul et al. 2016, "Prioritized Experience Replay": item `i` is drawn with probability
`P(i) = p_i^α / Σ_k p_k^α` where `p_i = |δ_i| + ε` (section 3.3, proportional variant) and its
update is corrected by the importance weight `w_i = (N · P(i))^-β / max_j w_j` (section 3.4), with
β annealed to 1 over training (`LinearSchedule`). Ape-X (Horgan et al. 2018) uses the same
sampler with priorities computed by the actors; pass those to `insert`.

Decisions:
- Stratified draws: the total is split into `batch_size` equal segments and one uniform value is
  drawn in each (Schaul et al., appendix B.2.1), which lowers the variance of a batch.
- Weights are normalised by the batch's largest weight (as Dopamine's and Acme's prioritised
  agents do), not by the largest over the whole buffer (the paper's `max_j`, with the buffer's
  smallest priority). Both give the items of a batch the same relative weights; they differ in
  the batch's scale. Over the buffer, one item whose TD error reaches ~0 (priority ε) scales
  every other weight by `(ε / p)^(αβ)`: on CartPole, Ape-X's mean weight fell from 0.1 to 7e-4
  over 150k steps, the loss's gradients fell below Adam's ε (1.5e-4 in the value agents) and
  learning all but stopped, freezing whatever greedy policy the run had then (181 to 500 by
  seed). Over the batch, the largest weight is 1 and the mean stayed 0.06 to 0.4.
- New items get the largest priority `|δ| + ε` seen so far (1.0 before any), so each is sampled
  at least once soon after insertion (Schaul et al., algorithm 1, line 6).
- α = 0 gives uniform sampling with all weights 1; the uniform replay uses exactly that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from shoal.replay.sum_tree import SumTree

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
    drawn.
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
        return self._sum.nbytes

    def state_dict(self, used: int) -> dict[str, Any]:
        """The priorities `p^α` of slots `[0, used)` (a view; the slots after them are empty)
        and the largest priority so far."""
        return {"sum": self._sum.leaves[:used], "max_priority": self._max_priority}

    def load_state_dict(self, state: Mapping[str, Any], used: int) -> None:
        """Priorities as `state_dict(used)` gave them, into a sampler with none set yet (a
        snapshot's "min" leaves, written before weights were normalised per batch, are not
        needed). The tree's inner nodes are recomputed from the leaves, so they equal the saved
        ones."""
        sums = np.asarray(state["sum"], np.float64)
        if sums.shape != (used,):
            raise ValueError(f"the snapshot holds {sums.shape} priorities for {used} rows")
        self._sum.update(np.arange(used), sums)
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

    def _set(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        if priorities.size:
            self._max_priority = max(self._max_priority, float(priorities.max()))
        scaled = priorities**self.alpha
        self._sum.update(indices, scaled)

    def probabilities(self, indices: np.ndarray) -> np.ndarray:
        """`P(i) = p_i^α / Σ_k p_k^α` for slots `indices [K]`, float64."""
        return self._sum.get(np.asarray(indices, dtype=np.int64)) / self._sum.total

    def sample(
        self, batch_size: int, beta: float, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw `batch_size` active slots, one per equal segment of the total.

        Returns:
            `(indices [B] int64, weights [B] float32)` with
            `weights = (N · P(i))^-β / max_j (N · P(j))^-β = (P(i) / P_max)^-β`, the max over
            the batch (P_max: the batch's least likely item), so the largest weight is 1.
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
        scaled = self._sum.get(indices)  # p_i^α, proportional to P(i)
        weights = (scaled / scaled.min()) ** (-beta)
        return indices, weights.astype(np.float32)
