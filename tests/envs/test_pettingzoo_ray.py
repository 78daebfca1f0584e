"""PPO and IMPALA on a PettingZoo env on the ray launcher: two actors, each stepping games."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pettingzoo")

import shoal

pytestmark = [pytest.mark.distributed, pytest.mark.integration, pytest.mark.timeout(900)]

TOY = "pettingzoo:shoal.envs.toy_agents"  # random: 5.67 a game summed, 1.89 an agent


@pytest.mark.parametrize(
    ("algo", "agent", "steps"),
    [
        ("ppo", {"unroll_length": 16, "learning_rate": 0.003, "minibatch_size": 64}, 8_000),
        ("impala", {"learning_rate": 0.003, "unroll_length": 8}, 8_000),
    ],
)
def test_ppo_and_impala_learn_the_toy_task_on_ray(ray_cluster, quiet_run, algo, agent, steps):
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 2, "total_steps": steps}
    agent = {**agent, "gamma": 0.5}  # each step's reward depends on that step alone
    result = shoal.train(algo, TOY, seed=0, run={**run, "eval_episodes": 30}, agent=agent)
    rows = [json.loads(r) for r in (result.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["team_return_mean"] >= 12.0
    assert result.evaluation.mean_return >= 4.0
