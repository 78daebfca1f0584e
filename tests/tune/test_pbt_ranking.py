"""Which members PBT ranks (`shoal.tune.pbt`): a member that finished is still a donor, so a
member started after it is compared with it; a member that failed or has not reported is not
ranked."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("ray.tune")

from ray.tune.experiment import Trial
from ray.tune.schedulers.pbt import _PBTTrialState

from shoal.tune.pbt import pbt_class


class FakeTrial:
    def __init__(self, name: str, status: str) -> None:
        self.experiment_tag = name
        self.status = status

    def is_finished(self) -> bool:
        return self.status in (Trial.TERMINATED, Trial.ERROR)


def scheduler_with(scores: dict[FakeTrial, float | None]):
    scheduler = pbt_class()(
        time_attr="env_steps",
        metric="return_mean",
        mode="max",
        perturbation_interval=512,
        hyperparam_mutations={"agent": {"learning_rate": [1e-3, 2e-3]}},
        quantile_fraction=0.25,
    )
    for trial, score in scores.items():
        state = _PBTTrialState(trial)
        state.last_score = score
        scheduler._trial_state[trial] = state
    return scheduler


def test_a_finished_member_is_ranked_and_the_late_one_below_it_copies_it():
    finished, late = FakeTrial("a", Trial.TERMINATED), FakeTrial("b", Trial.RUNNING)
    lower, upper = scheduler_with({finished: 40.0, late: 20.0})._quantiles()
    assert lower == [late] and upper == [finished]


def test_members_that_failed_or_have_not_reported_are_not_ranked():
    failed, silent = FakeTrial("a", Trial.ERROR), FakeTrial("b", Trial.PENDING)
    running, nan = FakeTrial("c", Trial.RUNNING), FakeTrial("d", Trial.RUNNING)
    scores = {failed: 90.0, silent: None, running: 30.0, nan: math.nan}
    assert scheduler_with(scores)._quantiles() == ([], [])
    other = FakeTrial("e", Trial.PAUSED)
    lower, upper = scheduler_with({**scores, other: 10.0})._quantiles()
    assert lower == [other] and upper == [running]


def test_a_quarter_of_a_larger_population_copies_the_best_quarter():
    trials = {FakeTrial(str(i), Trial.RUNNING): float(i) for i in range(8)}
    lower, upper = scheduler_with(trials)._quantiles()
    names = [[t.experiment_tag for t in side] for side in (lower, upper)]
    assert names == [["0", "1"], ["6", "7"]]
