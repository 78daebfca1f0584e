"""One short `shoal train` run, shared by the run-directory tests that read what it wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

import shoal
from shoal.api import TrainResult


@pytest.fixture(scope="package")
def trained(tmp_path_factory: pytest.TempPathFactory) -> TrainResult:
    """PPO on CartPole for 2,048 steps, with TensorBoard, evaluations every 1,024 steps (so it
    keeps a best policy) and a final evaluation of two episodes."""
    runs = tmp_path_factory.mktemp("runs")
    run = {
        "runs_dir": str(runs),
        "run_name": "layout",
        "progress": False,
        "tensorboard": True,
        "eval_every": 1024,
        "eval_episodes": 2,
        "checkpoint_interval": 1024,
    }
    result = shoal.train("ppo", "CartPole-v1", total_steps=2048, run=run)
    assert Path(result.run_dir).is_dir()
    return result
