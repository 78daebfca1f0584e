"""Agent57 on the ray launcher: killed with SIGKILL mid-run and resumed, its counters, bandits and
novelty statistics continue from the checkpoint written before the kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

import shoal
from shoal.run.checkpoints import list_checkpoints, load_checkpoint

pytestmark = [pytest.mark.distributed, pytest.mark.integration, pytest.mark.timeout(900)]

AGENT = {"num_mixtures": 4, "lstm_size": 16, "dueling_hidden": 16, "hidden_sizes": "16"}
AGENT |= {"embedding_size": 8, "rnd_size": 16, "episodic_capacity": 500}
AGENT |= {"min_replay_size": 20, "samples_per_insert": 1.0, "bandit_window": 100_000}
AGENT |= {"distance_mean": "lifelong"}  # d_m^2 outlives episodes, so its count must go on


def test_a_killed_ray_run_resumes_its_counters_bandits_and_novelty(ray_cluster, tmp_path):
    cluster, _ = ray_cluster
    run_dir = tmp_path / "killed"
    command = [sys.executable, "-m", "shoal", "train", "agent57", "--env", "CartPole-v1"]
    command += ["--runtime", "ray", "--address", cluster.address, "--actors", "4"]
    command += ["--actor-cpus", "0.5", "--replay-shards", "1", "--num-envs", "2"]
    command += ["--total-steps", "10000000", "--checkpoint-interval", "1000"]
    command += ["--runs-dir", str(tmp_path), "--run-name", "killed", "--progress", "false"]
    command += ["--tensorboard", "false", "--eval-episodes", "0"]
    for key, value in AGENT.items():
        command += [f"--agent.{key.replace('_', '-')}", str(value)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 400
    while len(list_checkpoints(run_dir / "checkpoints")) < 3:
        assert time.time() < deadline and process.poll() is None, process.stderr.read()
        time.sleep(0.5)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    saved = load_checkpoint(list_checkpoints(run_dir / "checkpoints")[-1])
    before = saved["policies"]
    actors = [f"actor{i}" for i in range(4)]
    assert {f"{a}/bandit" for a in actors} | {"evaluator/bandit"} <= set(before)

    extra = 3000
    resumed = shoal.train(
        resume=run_dir, run={"total_steps": saved["env_steps"] + extra, "address": cluster.address}
    )
    final = load_checkpoint(list_checkpoints(run_dir / "checkpoints")[-1])
    after = final["policies"]
    # Counters go on from the checkpoint, not from zero.
    assert resumed.env_steps == final["env_steps"] >= saved["env_steps"] + extra
    assert final["episodes"] > saved["episodes"] and final["updates"] > saved["updates"]
    assert final["resume_count"] == saved["resume_count"] + 1
    for name in [*actors, "evaluator"]:
        old, new = before[f"{name}/bandit"], after[f"{name}/bandit"]
        assert new["arms"][: len(old["arms"])] == old["arms"], name  # same window, extended
        assert new["rewards"][: len(old["rewards"])] == old["rewards"], name
        assert new["num_selections"] >= old["num_selections"], name
    # A fresh start would have counted fewer RND errors than the checkpoint already had.
    for name in actors:
        assert after[f"{name}/rnd"]["count"] > before[f"{name}/rnd"]["count"], name
    slots = [key for key in before if key.endswith("/episodic")]
    assert len(slots) == 8  # 4 actors x 2 envs
    for key in slots:
        assert after[key][1] > before[key][1], key
