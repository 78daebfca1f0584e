"""ES and ARS on the ray launcher with two actors: only scalars travel, CartPole is solved."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

import shoal

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(900)]


class _StopAt500(shoal.Callback):
    def on_evaluation(self, evaluation):
        return evaluation.final or evaluation.mean_return < 500


@pytest.mark.integration
@pytest.mark.parametrize("algo", ["es", "ars"])
def test_solves_cartpole_on_ray_with_two_actors(algo, ray_cluster, quiet_run):
    run = {
        **quiet_run,
        "runtime": "ray",
        "actors": 2,
        "num_envs": 8,
        "eval_every": 20_000,
        "eval_every_episodes": 10,
    }
    result = shoal.train(algo, "CartPole-v1", seed=0, run=run, callbacks=[_StopAt500()])
    assert result.stop_reason == "callback"
    assert result.evaluation.mean_return >= 475


@pytest.mark.integration
def test_es_goes_on_when_an_actor_is_killed_mid_iteration(ray_cluster, quiet_run):
    # The pair table waits for no particular actor: the iteration the dead actor was part of
    # is completed by the other (and the restarted one), and the run still solves CartPole.
    run = {
        **quiet_run,
        "runtime": "ray",
        "actors": 2,
        "num_envs": 8,
        "eval_every": 20_000,
        "eval_every_episodes": 10,
        "run_name": "es-killed",
    }
    outcome = {}

    def train():
        outcome["result"] = shoal.train(
            "es", "CartPole-v1", seed=0, run=run, callbacks=[_StopAt500()]
        )

    thread = threading.Thread(target=train)
    thread.start()
    placement = Path(quiet_run["runs_dir"]) / "es-killed" / "ray_actors.json"
    deadline = time.time() + 120
    while not placement.exists() and time.time() < deadline:
        time.sleep(0.2)
    assert placement.exists(), "the ray run did not start"
    metrics = placement.parent / "metrics.jsonl"
    while not metrics.exists() and time.time() < deadline:  # an iteration under way
        time.sleep(0.2)
    os.kill(json.loads(placement.read_text())["actor0"]["pid"], signal.SIGKILL)
    thread.join(timeout=600)
    result = outcome["result"]
    assert result.summary["actor_restarts"] == 1
    assert result.stop_reason == "callback" and result.evaluation.mean_return >= 475
