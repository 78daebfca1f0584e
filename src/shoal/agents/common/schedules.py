"""Typed schedules: a value as a function of the step or of the fraction of the budget used.

`LinearSchedule` (from `shoal.replay`, where it anneals prioritised replay's β) interpolates
between two values over a number of steps. `LearningRateSchedule` is the learning-rate decay
every learner with `anneal_lr` uses: `lr · max(0, 1 - progress)`. It is its own type rather
than a `LinearSchedule` to 0 because that one computes `start + f · (end - start)`, which rounds
differently from `lr · (1 - f)` in the last bit, and the learners' numbers must not move.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shoal.replay import LinearSchedule

__all__ = ["LearningRateSchedule", "LinearSchedule", "apex_spread"]


def apex_spread(base: float, alpha: float, index: np.ndarray, count: int) -> np.ndarray:
    """Ape-X's per-actor exploration, `base^(1 + alpha i / (N - 1))` for actor `i` of `N`
    (Horgan et al. 2018, section 4: epsilon 0.4, alpha 7 for Ape-X DQN's epsilons): actor 0
    explores with `base`, the last with `base^(1 + alpha)`, the others geometrically between;
    one actor (N = 1) explores with `base`. `index [n]` -> `[n]` float64."""
    index = np.asarray(index, np.float64)
    spread = index / (count - 1) if count > 1 else np.zeros_like(index)
    return np.power(float(base), 1.0 + alpha * spread)


@dataclass(frozen=True, kw_only=True)
class LearningRateSchedule:
    """`base` throughout, or (`anneal`) decayed linearly from `base` at progress 0 to 0 at the
    end of the budget (progress 1), as PPO's and IMPALA's reference implementations do."""

    base: float  # the learning rate at the start
    anneal: bool  # decay to 0 over the budget

    def remaining(self, progress: float) -> float:
        """The factor on `base` at `progress` in [0, 1]: `max(0, 1 - progress)` or 1."""
        return max(0.0, 1.0 - progress) if self.anneal else 1.0

    def value(self, progress: float) -> float:
        """The learning rate at `progress` in [0, 1]."""
        return self.base * self.remaining(progress)
