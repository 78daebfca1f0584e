"""Tune's population-based training (Jaderberg et al. 2017) as shoal runs it, by subclassing
Tune's classes rather than writing a scheduler of our own (docs/architecture.md,
"Hyperparameter search and PBT"): the scheduler (`pbt_class`, two fixes for members that are
not running side by side, which is the rule on a small machine, where Tune runs as many
members at once as the cluster fits and starts the others later), the explore step kept inside
the search space (`KeepInSpace`), and the search that lets Tune keep each member's actor for
reuse (`keep_actors`).
"""

from __future__ import annotations

import math
from typing import Any

from shoal.tune.space import Space


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


class KeepInSpace:
    """PBT's explore step multiplies a number by 0.8 or 1.2, which can leave the space and
    the setting's range (gamma 0.996 x 1.2); each agent setting is clipped back into its
    distribution's [low, high]."""

    def __init__(self, space: Space) -> None:
        self.bounds = {
            d.name: (d.corners()[0], d.corners()[-1], d.kind == "randint")
            for d in space.section("agent")
            if d.kind != "choice"
        }

    def __call__(self, config: dict[str, Any]) -> dict[str, Any]:
        agent = config.get("agent", {})
        for name, (low, high, integer) in self.bounds.items():
            if name in agent:
                value = min(max(agent[name], low), high)
                agent[name] = round(value) if integer else float(value)
        return config


def _keep_actors_class() -> type:
    from ray.tune.search.basic_variant import BasicVariantGenerator

    class KeepActors(BasicVariantGenerator):
        """Tune's default search, which says it is finished only once every trial is.

        Tune keeps a paused trial's actor for reuse only while the search may still add
        trials; once the population exists, a PBT exploit (pause, then resume from the
        donor's checkpoint) would otherwise end the member's actor and start a new one."""

        def __init__(self) -> None:
            super().__init__()
            self._live: set[str] = set()

        def next_trial(self) -> Any:
            trial = super().next_trial()
            if trial is not None:
                self._live.add(trial.trial_id)
            return trial

        def on_trial_complete(self, trial_id: str, result: Any = None, error: bool = False):
            self._live.discard(trial_id)
            super().on_trial_complete(trial_id, result=result, error=error)

        def is_finished(self) -> bool:
            return super().is_finished() and not self._live

    return KeepActors


def keep_actors() -> Any:
    """Tune's default search that keeps members' actors for reuse (made here, so that
    importing this module imports no Ray)."""
    return _keep_actors_class()()
