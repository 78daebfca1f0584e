"""Learning-quality runs with the presets' default budgets: `pytest -m slow` (kept out of CI)."""

from __future__ import annotations

import pytest

import shoal

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("seed", range(5))
def test_cartpole_preset_solves_within_its_default_budget(quiet_run, seed):
    result = shoal.train("ppo", "CartPole-v1", seed=seed, run=quiet_run)
    assert result.train_return_mean >= 475
    assert result.evaluation.mean_return == 500


def test_pendulum_preset_reaches_minus_250(quiet_run):
    result = shoal.train("ppo", "Pendulum-v1", seed=0, run=quiet_run)
    assert result.train_return_mean >= -250
    assert result.evaluation.mean_return >= -250


def test_acrobot_preset_learns(quiet_run):
    result = shoal.train("ppo", "Acrobot-v1", seed=0, run=quiet_run)
    assert result.evaluation.mean_return >= -100


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_sac_and_td3_swing_up_pendulum_within_20k_steps(quiet_run, algo, seed):
    run = {**quiet_run, "eval_episodes": 10}
    result = shoal.train(algo, "Pendulum-v1", seed=seed, total_steps=20_000, run=run)
    assert result.env_steps == 20_000
    assert result.evaluation.mean_return >= -200
