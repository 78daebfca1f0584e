"""Tune's population-based training (Jaderberg et al. 2017) with two fixes, by subclassing
Tune's scheduler rather than writing one of our own (docs/architecture.md, "Hyperparameter
search and PBT").

Both fixes concern members that are not running side by side, which is the rule on a small
machine: Tune runs as many members at once as the cluster fits and starts the others later.
"""

from __future__ import annotations

import math
from typing import Any


def pbt_class() -> type:
    """The scheduler class (Ray is imported only when a search starts)."""
    from ray.tune.experiment import Trial
    from ray.tune.schedulers import PopulationBasedTraining

    class NewestCheckpointPBT(PopulationBasedTraining):
        """Tune's PBT, in which
        - a member in the top quantile can be copied before its own perturbation time: Tune
          takes a top member's checkpoint only when that member reaches the interval itself,
          so a bottom member arriving first found none and skipped its exploit
          (ray-project/ray#27170). Every trial checkpoints each row here, so the newest
          checkpoint (at most one row old) stands in;
        - a member that has finished is still ranked, and can be copied from its final
          checkpoint: Tune ranks running members only, so a member started after the others
          had finished (or one that reported first when the rest had not yet) was compared
          with no one and never exploited (a CI run: two members, no exploit)."""

        def _quantiles(self) -> tuple[list[Any], list[Any]]:
            ranked = [
                trial
                for trial, state in self._trial_state.items()
                if state.last_score is not None
                and not math.isnan(state.last_score)
                and trial.status != Trial.ERROR
            ]
            ranked.sort(key=lambda trial: self._trial_state[trial].last_score)
            if len(ranked) <= 1:
                return [], []
            count = min(math.ceil(len(ranked) * self._quantile_fraction), len(ranked) // 2)
            return ranked[:count], ranked[-count:]

        def _checkpoint_or_exploit(self, trial, tune_controller, upper_quantile, lower_quantile):
            for top in upper_quantile:
                if top is trial or not top.checkpoint:
                    continue
                state = self._trial_state[top]
                if top.status == Trial.TERMINATED:
                    # Its final checkpoint; the one kept at its last perturbation may be gone
                    # (Tune keeps a trial's newest few).
                    state.last_checkpoint = top.checkpoint
                    state.last_result = top.last_result or state.last_result
                elif state.last_checkpoint is None:
                    state.last_checkpoint = top.checkpoint
                    state.last_result = state.last_result or top.last_result
            super()._checkpoint_or_exploit(trial, tune_controller, upper_quantile, lower_quantile)

    return NewestCheckpointPBT
