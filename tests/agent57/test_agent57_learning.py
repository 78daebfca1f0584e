"""Agent57 learns CartPole with its defaults (the CartPole-v1 preset), inline and on ray with four
actors: `pytest -m slow` (kept out of CI; each run takes 10-20 minutes on 2 cores)."""

from __future__ import annotations

import pytest

import shoal

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


@pytest.mark.parametrize("runtime", ["inline", "ray"])
def test_agent57_defaults_balance_cartpole(quiet_run, runtime):
    run = dict(quiet_run)
    if runtime == "ray":
        run |= {"runtime": "ray", "actors": 4}
    result = shoal.train("agent57", "CartPole-v1", seed=0, run=run)
    # Greedy with the mixture the evaluator's bandit picks; the training mean is lower, as
    # most actors act with exploring mixtures.
    assert result.evaluation.mean_return >= 475
