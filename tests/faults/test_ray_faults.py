"""Faults injected into ray runs (issue 14): a role's process is SIGKILLed mid-run, and each
test asserts what survives and what the run says it lost. The README's table of faults
summarises them. A kill lands once the run has written a checkpoint, so what a restarted role
comes back with is the checkpoint's."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest

import shoal
from shoal.checkpoint import list_checkpoints, load_checkpoint
from shoal.cli import main
from shoal.telemetry import read_metrics

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(300)]

# Small budgets: each run stops on wall time, long enough for a kill and a restart to be seen.
QUIET = ["--progress", "false", "--tensorboard", "false", "--eval-episodes", "0"]
RAY = ["--runtime", "ray", "--actors", "2", "--num-envs", "4"]


def _train_in_thread(argv: list[str]) -> dict:
    """Start `shoal train ARGV` in a thread; the dict gets the exit code (`code`) or the
    error (`error`) and `thread`."""
    outcome: dict = {}

    def train() -> None:
        try:
            outcome["code"] = main(["train", *argv])
        except Exception as err:  # the test says what it expected
            outcome["error"] = err

    outcome["thread"] = threading.Thread(target=train)
    outcome["thread"].start()
    return outcome


def _wait_for(outcome: dict, check, what: str, seconds: float = 120.0):
    """`check()`'s first truthy answer while the run goes on."""
    deadline = time.time() + seconds
    while time.time() < deadline and outcome["thread"].is_alive():
        found = check()
        if found:
            return found
        time.sleep(0.2)
    outcome["thread"].join(timeout=1)
    raise AssertionError(f"the run never {what}: {outcome}")


def _placement(run_dir: Path) -> dict:
    return json.loads((run_dir / "ray_actors.json").read_text())


def _started(outcome: dict, run_dir: Path) -> dict:
    """Where each role runs, once all are placed."""
    _wait_for(outcome, (run_dir / "ray_actors.json").exists, "placed its roles")
    return _placement(run_dir)


def _snapshotted(run_dir: Path) -> dict | None:
    """The newest checkpoint, once one with a replay snapshot exists."""
    saved = list_checkpoints(run_dir / "checkpoints")
    if not saved:
        return None
    newest = load_checkpoint(saved[-1])
    return newest if newest.get("replay") else None


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def _finish(outcome: dict) -> None:
    outcome["thread"].join(timeout=240)
    assert not outcome["thread"].is_alive(), "the run did not end"


def test_an_actor_kill_is_restarted_counted_once_and_the_run_finishes(
    ray_cluster, tmp_path, capsys
):
    runs = tmp_path / "runs"
    argv = ["ppo", "--env", "CartPole-v1", *RAY, *QUIET, "--max-time", "25"]
    outcome = _train_in_thread([*argv, "--runs-dir", str(runs), "--run-name", "actor"])
    run_dir = runs / "actor"
    killed = _started(outcome, run_dir)["actor0"]["pid"]
    time.sleep(2)  # acting and learning
    _kill(killed)
    _finish(outcome)
    assert outcome.get("code") == 0, outcome.get("error")
    summary = json.loads((run_dir / "summary.json").read_text())
    # Both its calls in flight failed (max_inflight 2): one death, counted once.
    assert summary["actor_restarts"] == 1
    assert "replay_restarts" not in summary
    # ray_actors.json names the new process, not the dead one.
    assert _placement(run_dir)["actor0"]["pid"] != killed
    assert "Traceback" not in capsys.readouterr().err


def test_a_replay_shard_kill_comes_back_with_its_snapshot_and_the_run_finishes(
    ray_cluster, tmp_path, capsys
):
    runs = tmp_path / "runs"
    argv = ["apex", "--env", "CartPole-v1", *RAY, *QUIET, "--replay-shards", "2"]
    argv += ["--max-time", "40", "--checkpoint-interval", "2000", "--log-interval", "500"]
    outcome = _train_in_thread([*argv, "--runs-dir", str(runs), "--run-name", "shard"])
    run_dir = runs / "shard"
    killed = _started(outcome, run_dir)["replay1"]["pid"]
    saved = _wait_for(outcome, lambda: _snapshotted(run_dir), "wrote a replay snapshot")
    _kill(killed)
    _finish(outcome)
    assert outcome.get("code") == 0, outcome.get("error")
    err = capsys.readouterr().err
    assert "Traceback" not in err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["replay_restarts"] == 1 and "actor_restarts" not in summary
    assert _placement(run_dir)["replay1"]["pid"] != killed
    # One line says what came back and what was lost; the metrics carry the same figures.
    said = re.search(
        r"replay shard 1 was restarted after its process died: (\d+) items restored from the "
        r"checkpoint at (\d+) steps; about (\d+) items it held are lost\.",
        err,
    )
    assert said, err
    restored, steps, lost = map(int, said.groups())
    assert restored > 0 and steps >= saved["env_steps"]
    assert summary["replay_items_lost"] == lost
    rows = list(read_metrics(run_dir / "metrics.jsonl"))
    after = [row for row in rows if row.get("replay_restarts") == 1]
    assert after, "no metrics row after the restart"
    # The run went on learning from both shards: the replay grew past what was restored.
    assert after[-1]["replay_size"] > restored and rows[-1]["updates"] > after[0]["updates"]


def test_a_learner_kill_stops_the_run_resumable_from_its_checkpoint_and_replay(
    ray_cluster, tmp_path, capsys
):
    runs = tmp_path / "runs"
    argv = ["apex", "--env", "CartPole-v1", *RAY, *QUIET, "--replay-shards", "1"]
    argv += ["--max-time", "60", "--checkpoint-interval", "2000"]
    outcome = _train_in_thread([*argv, "--runs-dir", str(runs), "--run-name", "learner"])
    run_dir = runs / "learner"
    killed = _started(outcome, run_dir)["learner"]["pid"]
    saved = _wait_for(outcome, lambda: _snapshotted(run_dir), "wrote a replay snapshot")
    _kill(killed)
    _finish(outcome)
    # One paragraph (the CLI's exit code 2), naming the checkpoint a resume goes on from.
    assert outcome.get("code") == 2, outcome.get("error")
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("shoal: error:") == 1
    assert "Unhandled error" not in err
    newest = list_checkpoints(run_dir / "checkpoints")[-1]
    assert f"pid {killed}) died at" in err and f"--resume {run_dir}" in err
    assert f"checkpoints/{newest.name}" in err
    # What survives: the newest checkpoint, whole, with its replay snapshot.
    kept = load_checkpoint(newest)
    assert kept["env_steps"] >= saved["env_steps"] and kept["replay"]
    resumed = shoal.train(
        resume=run_dir, run={"total_steps": kept["env_steps"] + 1000, "max_time": 600}
    )
    assert resumed.env_steps >= kept["env_steps"] + 1000
    assert f"replay restored from the checkpoint at {kept['env_steps']} steps" in (
        capsys.readouterr().err
    )
