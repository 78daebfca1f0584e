"""Inline runtime: reproducible under a seed, resumable after SIGKILL, atomic run directories."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import shoal
from shoal.run.checkpoints import list_checkpoints, load_checkpoint
from shoal.runtime.inline import TIMING_KEYS
from shoal.telemetry import read_metrics


def _rows(run_dir: Path) -> list[dict]:
    rows = read_metrics(run_dir / "metrics.jsonl")
    return [{k: v for k, v in row.items() if k not in TIMING_KEYS} for row in rows]


def test_same_seed_writes_identical_metrics_and_another_seed_does_not(quiet_run):
    run = {**quiet_run, "log_interval": 512, "eval_episodes": 0}
    first = shoal.train("ppo", "CartPole-v1", seed=3, total_steps=4096, run=run)
    second = shoal.train("ppo", "CartPole-v1", seed=3, total_steps=4096, run=run)
    other = shoal.train("ppo", "CartPole-v1", seed=4, total_steps=4096, run=run)
    assert len(_rows(first.run_dir)) == 8
    assert _rows(first.run_dir) == _rows(second.run_dir)
    assert _rows(first.run_dir) != _rows(other.run_dir)


def test_run_directory_holds_config_metrics_events_checkpoints_and_summary(tmp_path):
    run = {
        "runs_dir": str(tmp_path),
        "progress": False,
        "checkpoint_interval": 1024,
        "keep_checkpoints": 2,
        "log_interval": 512,
        "eval_episodes": 2,
    }
    result = shoal.train("ppo", "CartPole-v1", total_steps=4096, run=run)
    run_dir = result.run_dir
    assert run_dir.parent == tmp_path and run_dir.name.startswith("ppo-CartPole-v1-")
    assert (run_dir / "config.yaml").read_text().startswith("algo: ppo\nenv: CartPole-v1\n")
    rows = read_metrics(run_dir / "metrics.jsonl")
    for key in (
        "env_steps",
        "episodes",
        "return_mean",
        "policy_loss",
        "value_loss",
        "steps_per_second",
    ):
        assert key in rows[-1], key
    assert list((run_dir / "tb").glob("events.out.tfevents.*"))
    assert len(list_checkpoints(run_dir / "checkpoints")) == 2
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["env_steps"] == 4096 and summary["evaluation"]["episodes"] == 2


def _wait_for(predicate, timeout: float) -> None:
    deadline = time.time() + timeout
    while not predicate():
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.integration
def test_sigkilled_run_resumes_from_its_last_checkpoint(tmp_path):
    run_dir = tmp_path / "killed"
    command = [
        sys.executable,
        "-m",
        "shoal",
        "train",
        "ppo",
        "--env",
        "CartPole-v1",
        "--total-steps",
        "1000000",
        "--checkpoint-interval",
        "1024",
        "--log-interval",
        "512",
        "--runs-dir",
        str(tmp_path),
        "--run-name",
        "killed",
        "--progress",
        "false",
        "--tensorboard",
        "false",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: len(list_checkpoints(run_dir / "checkpoints")) >= 2, timeout=60)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        process.kill()
    saved = load_checkpoint(list_checkpoints(run_dir / "checkpoints")[-1])
    before = read_metrics(run_dir / "metrics.jsonl")
    assert saved["env_steps"] >= 2048 and before

    target = saved["env_steps"] + 2048
    result = shoal.train(resume=run_dir, run={"total_steps": target, "progress": False})
    assert result.env_steps >= target
    after = read_metrics(run_dir / "metrics.jsonl")
    steps = [row["env_steps"] for row in after]
    assert steps == sorted(set(steps)), "rows are appended in order with no repeats"
    kept = [row for row in before if row["env_steps"] <= saved["env_steps"]]
    assert after[: len(kept)] == kept, "rows up to the checkpoint are kept as they were"
    assert steps[-1] >= target and steps[len(kept)] > saved["env_steps"]
    assert result.summary["episodes"] > saved["episodes"]
    for path in list_checkpoints(run_dir / "checkpoints"):
        load_checkpoint(path)  # every checkpoint left is complete
    assert not [p for p in os.listdir(run_dir / "checkpoints") if p.endswith(".tmp")]


def test_resume_eval_and_load_rebuild_the_env_settings_the_run_was_saved_with(
    quiet_run, monkeypatch
):
    from shoal import api, experiment
    from shoal.envs.config import EnvConfig
    from shoal.runtime import inline

    saved = {"vector": "subprocess", "num_workers": 1, "noop_max": 7, "sticky_actions": True}
    run = {**quiet_run, "eval_episodes": 0, "checkpoint_interval": 256}
    first = shoal.train("ppo", "CartPole-v1", total_steps=256, run=run, env_config=saved)
    expected = EnvConfig(**saved)
    assert experiment.read_run_dir(first.run_dir).env_config == expected

    built = []
    real_run_inline, real_source_of = inline.run_inline, experiment.source_of

    def recording_run_inline(program, resume=None, *args):
        built.append(("resume", program.env_config))
        return real_run_inline(program, resume, *args)

    def recording_source_of(env, config=None):  # every command resolves its env here
        built.append(("env", config))
        return real_source_of(env, config)

    monkeypatch.setattr(api, "run_inline", recording_run_inline)
    monkeypatch.setattr(experiment, "source_of", recording_source_of)
    shoal.train(resume=first.run_dir, run={"total_steps": 512})
    resumed = len(built)
    shoal.evaluate(first.run_dir, episodes=1)
    assert [kind for kind, _ in built[:resumed]] == ["env", "resume"]
    assert [kind for kind, _ in built[resumed:]] == ["env"]  # the evaluation's env
    assert all(config == expected for _, config in built)
    assert shoal.load(first.run_dir).env_config == expected
