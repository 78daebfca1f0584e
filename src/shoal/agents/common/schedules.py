"""Typed schedules: a value as a function of the step or of the fraction of the budget used.

`LinearSchedule` (from `shoal.replay`, where it anneals prioritised replay's β) interpolates
between two values over a number of steps. `LearningRateSchedule` is the learning-rate decay
every learner with `anneal_lr` uses: `lr · max(0, 1 - progress)`. It is its own type rather
than a `LinearSchedule` to 0 because that one computes `start + f · (end - start)`, which rounds
differently from `lr · (1 - f)` in the last bit, and the learners' numbers must not move.
"""

from __future__ import annotations

from dataclasses import dataclass

from shoal.replay import LinearSchedule

__all__ = ["LearningRateSchedule", "LinearSchedule"]


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
