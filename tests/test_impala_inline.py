"""IMPALA on the inline launcher: acting in a thread while learning, and in turn."""

from __future__ import annotations

import json

import pytest

import shoal


@pytest.mark.parametrize("overlap", [True, False])
def test_impala_solves_cartpole_inline(quiet_run, overlap):
    run = {**quiet_run, "stop_at_return": 475, "overlap": overlap}
    result = shoal.train("impala", "CartPole-v1", seed=0, run=run)
    assert result.stop_reason == "stop_at_return" and result.train_return_mean >= 475
    # In turn, the evaluated snapshot is the policy that acted; overlapped, the learner is a
    # version or two ahead and its greedy policy may score a little lower (thread timing).
    assert result.evaluation.mean_return >= (475 if not overlap else 100)
    lags = [json.loads(r)["policy_lag"] for r in (result.run_dir / "metrics.jsonl").open()]
    # Overlapped, the actor thread acts while the learner learns, so it runs behind by a version
    # or more; in turn, it never does.
    assert (max(lags) >= 1) if overlap else (max(lags) == 0)


def test_lstm_impala_runs_and_evaluates_with_per_episode_state(quiet_run):
    result = shoal.train(
        "impala",
        "CartPole-v1",
        total_steps=4000,
        agent={"use_lstm": True, "lstm_size": 32},
        run={**quiet_run, "eval_episodes": 2},
    )
    assert result.evaluation.episodes == 2
