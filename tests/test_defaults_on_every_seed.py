"""Defaults that learn on every seed (issue 37): the worst cell `benchmarks/defaults_matrix.py`
found, run as a user runs it and judged as a user judges it.

Ape-X's CartPole-v1 preset on Ray with two actors, seed 1, beside a busy process, evaluated ~290
through `shoal.load(run).predict` before its preset was fixed (see presets/apex.yaml). The run
is the command line's (its own local Ray), the evaluation a loop over a fresh Gymnasium env, not
the runtime's evaluator."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import shoal

pytestmark = [pytest.mark.integration, pytest.mark.distributed, pytest.mark.timeout(2400)]

EPISODES = 20
THRESHOLD = 475.0


def greedy_returns(run_dir: Path, env_id: str, episodes: int = EPISODES) -> list[float]:
    """Returns of the run's final policy through the public API on a fresh env."""
    policy = shoal.load(run_dir)
    env = gym.make(env_id)
    returns = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=10_000 + episode)
        state, reward, total, done = None, 0.0, 0.0, False
        while not done:
            action, state = policy.predict(obs, state, reward=reward)
            obs, r, terminated, truncated, _ = env.step(action)
            reward = float(r)
            total += reward
            done = terminated or truncated
        returns.append(total)
    env.close()
    return returns


def test_apex_defaults_solve_cartpole_on_ray_seed_1_beside_a_busy_process(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "shoal", "train", "apex", "--env", "CartPole-v1"]
    command += ["--seed", "1", "--runtime", "ray", "--actors", "2", "--runs-dir", str(tmp_path)]
    command += ["--run-name", "apex", "--progress", "false", "--tensorboard", "false"]
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=2200)
    finally:
        busy.kill()
        busy.wait()
    assert done.returncode == 0, done.stderr[-3000:]
    returns = greedy_returns(tmp_path / "apex", "CartPole-v1")
    mean = sum(returns) / len(returns)
    assert mean >= THRESHOLD, f"greedy returns {returns} (mean {mean:.1f})"
