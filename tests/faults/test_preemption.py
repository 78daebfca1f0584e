"""Preemption (issue 14): a job stopped by its scheduler (SIGTERM, or SIGKILL after the grace
period) and requeued with the same command line (`--resume auto`) goes on where it stopped;
a requeued job whose run already finished exits 0; a command that does not fit its run is
refused before anything is touched."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import shoal
from shoal.cli import EXIT_TERMINATED, main
from shoal.run.checkpoints import list_checkpoints, load_checkpoint
from shoal.telemetry import read_metrics

QUIET = ["--progress", "false", "--tensorboard", "false"]


def _job(runs: Path, name: str, *flags: str) -> list[str]:
    """A job's command line: PPO on CartPole under `runs/name`, started or continued."""
    return [
        "train",
        "ppo",
        "--env",
        "CartPole-v1",
        "--runs-dir",
        str(runs),
        "--run-name",
        name,
        "--resume",
        "auto",
        *QUIET,
        *flags,
    ]


def _start(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "shoal", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _newest_step(run_dir: Path) -> int:
    saved = list_checkpoints(run_dir / "checkpoints")
    return load_checkpoint(saved[-1])["env_steps"] if saved else -1


def _wait_until(process: subprocess.Popen, check, seconds: float = 120.0) -> None:
    deadline = time.time() + seconds
    while not check():
        assert process.poll() is None, process.communicate()
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


def _terminate(process: subprocess.Popen) -> tuple[int, str, float]:
    """SIGTERM, as a scheduler preempts: the exit code, stderr and seconds until it exited."""
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    return process.returncode, err, time.monotonic() - sent


@pytest.mark.integration
def test_sigterm_checkpoints_and_the_same_command_continues_the_run(tmp_path):
    runs = tmp_path / "runs"
    # A budget no attempt reaches: each is stopped by SIGTERM once it has written a checkpoint
    # past the last one, whenever that happens.
    argv = _job(runs, "job42", "--total-steps", "10000000", "--checkpoint-interval", "1024")
    argv += ["--log-interval", "512"]
    run_dir = runs / "job42"
    first = _start(argv)
    _wait_until(first, lambda: _newest_step(run_dir) >= 1024)
    code, err, seconds = _terminate(first)
    assert code == EXIT_TERMINATED, err
    assert seconds < 30, f"took {seconds:.1f} s to stop after SIGTERM"  # Kubernetes' grace
    assert "Traceback" not in err and "stopped by SIGTERM after writing a checkpoint" in err
    summary = json.loads((run_dir / "summary.json").read_text())
    # The stop wrote a checkpoint at the very step the run stopped.
    assert summary["stop_reason"] == "terminated"
    stopped = _newest_step(run_dir)
    assert stopped == summary["env_steps"] >= 1024
    rows = read_metrics(run_dir / "metrics.jsonl")

    second = _start(argv)  # the requeued job: the same command
    _wait_until(second, lambda: _newest_step(run_dir) > stopped)
    code, err, _ = _terminate(second)
    assert code == EXIT_TERMINATED, err
    resumed = load_checkpoint(list_checkpoints(run_dir / "checkpoints")[-1])
    # Counters went on from the stop rather than from 0 ...
    assert resumed["env_steps"] > stopped and resumed["resume_count"] == 1
    assert resumed["episodes"] > summary["episodes"] and resumed["updates"] > summary["updates"]
    # ... and the metrics were appended to: the first attempt's rows kept, no step twice.
    after = read_metrics(run_dir / "metrics.jsonl")
    steps = [row["env_steps"] for row in after]
    assert steps == sorted(set(steps)) and after[: len(rows)] == rows and len(after) > len(rows)


def test_a_requeued_finished_run_exits_0_and_touches_nothing(tmp_path, capsys):
    runs = tmp_path / "runs"
    argv = _job(runs, "done", "--total-steps", "1024", "--eval-episodes", "1")
    assert main(argv) == 0
    run_dir = runs / "done"
    files = {p: p.stat().st_mtime_ns for p in run_dir.rglob("*")}
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out == (
        f"shoal: {run_dir} is already complete (stopped by total_steps at 1024 steps); "
        "nothing to do.\n"
    )
    assert {p: p.stat().st_mtime_ns for p in run_dir.rglob("*")} == files
    # From Python too; the result is the run's summary.
    again = shoal.train(
        "ppo",
        "CartPole-v1",
        total_steps=1024,
        run={"runs_dir": str(runs), "run_name": "done", "progress": False, "tensorboard": False},
        resume="auto",
    )
    assert again.already_complete and again.env_steps == 1024 and again.evaluation.episodes == 1
    # A requeue that raises the budget trains on to it.
    assert main([*argv, "--total-steps", "2048"]) == 0
    assert _newest_step(run_dir) == 2048


def test_a_run_killed_after_its_final_checkpoint_is_evaluated_and_summarised(tmp_path):
    runs = tmp_path / "runs"
    argv = _job(runs, "late", "--total-steps", "1024", "--eval-episodes", "1")
    assert main(argv) == 0
    run_dir = runs / "late"
    (run_dir / "summary.json").unlink()  # killed during the final evaluation
    assert main(argv) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["env_steps"] == 1024 and summary["stop_reason"] == "total_steps"
    assert summary["evaluation"]["episodes"] == 1 and _newest_step(run_dir) == 1024


def test_resume_auto_starts_in_the_empty_folder_a_kill_left(tmp_path):
    runs = tmp_path / "runs"
    (runs / "early").mkdir(parents=True)
    (runs / "early" / ".config.yaml.x1y2.tmp").write_text("algo: pp")  # its config's temp file
    assert main(_job(runs, "early", "--total-steps", "512", "--eval-episodes", "0")) == 0
    assert _newest_step(runs / "early") == 512
    assert not list((runs / "early").glob(".config.yaml.*"))


def _refused(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("shoal: error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_resume_auto_refuses_a_command_that_does_not_fit_its_run(tmp_path, capsys):
    runs = tmp_path / "runs"
    argv = _job(runs, "job", "--total-steps", "512", "--eval-episodes", "0")
    assert main(argv) == 0
    run_dir = runs / "job"
    files = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}

    def differs(*flags: str) -> str:
        err = _refused(capsys, [*argv, *flags])
        assert f"--resume auto found {run_dir}, started with other settings" in err
        assert f"`shoal train --resume {run_dir}`" in err
        return err

    err = _refused(capsys, [a if a != "ppo" else "dqn" for a in argv])
    assert "names: algo 'dqn' (stored: 'ppo'). Run" in err
    err = _refused(capsys, [a if a != "CartPole-v1" else "Acrobot-v1" for a in argv])
    assert "names: env 'Acrobot-v1' (stored: 'CartPole-v1'). Run" in err
    err = differs("--seed", "3", "--agent.learning-rate", "0.1")
    assert "seed 3 (stored: 0); agent.learning_rate 0.1 (stored: 0.002)." in err
    err = differs("--env.noop-max", "7")
    assert "names: env_config.noop_max 7 (stored: 30). Run" in err
    # The run is untouched.
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == files


def test_resume_auto_without_a_run_name_is_refused_before_anything_is_written(tmp_path, capsys):
    runs = tmp_path / "runs"
    argv = [a for a in _job(runs, "x", "--total-steps", "512") if a not in ("--run-name", "x")]
    err = _refused(capsys, argv)
    assert "--resume auto continues the run named by --run-name" in err
    assert not runs.exists()
    (runs / "taken").mkdir(parents=True)
    (runs / "taken" / "notes.txt").write_text("mine")
    err = _refused(capsys, _job(runs, "taken", "--total-steps", "512"))
    assert "that path exists and is not a shoal run directory" in err
    assert os.listdir(runs / "taken") == ["notes.txt"]


@pytest.mark.slow
def test_sigkills_at_random_moments_each_leave_a_run_the_same_command_continues(tmp_path):
    """A job SIGKILLed at any moment (starting, acting, learning, writing a checkpoint or a
    metrics row) and requeued: after each kill every checkpoint left loads and the newest never
    goes back; the requeued command finishes the run with its metrics in order, no step twice."""
    runs = tmp_path / "runs"
    # About ten times what one attempt trains in 4 s on an idle 2-core machine, so the kills
    # land before the end.
    argv = _job(runs, "killed", "--total-steps", "100000", "--checkpoint-interval", "1024")
    argv += ["--log-interval", "512", "--eval-episodes", "0"]
    run_dir = runs / "killed"
    moments = random.Random(14).sample([x / 10 for x in range(5, 40)], 4)  # seconds after start
    print("kills at", moments, "s")
    newest = -1
    for delay in moments:
        process = _start(argv)
        time.sleep(delay)  # whatever the run reached by then
        process.kill()
        _, err = process.communicate(timeout=30)
        if process.returncode == 0:  # a machine far faster than this one finished the run
            break
        assert process.returncode == -signal.SIGKILL, err
        assert "Traceback" not in err
        for path in list_checkpoints(run_dir / "checkpoints"):
            load_checkpoint(path)
        assert _newest_step(run_dir) >= newest, f"the newest checkpoint went back at {delay} s"
        newest = _newest_step(run_dir)
        print(f"killed at {delay} s: newest checkpoint at {newest} steps")
        rows = [row["env_steps"] for row in read_metrics(run_dir / "metrics.jsonl")]
        assert rows == sorted(set(rows)), f"metrics rows repeated after the kill at {delay} s"
    final = _start(argv)
    _, err = final.communicate(timeout=120)
    assert final.returncode == 0, err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "total_steps" and summary["env_steps"] >= 100000
    rows = [row["env_steps"] for row in read_metrics(run_dir / "metrics.jsonl")]
    assert rows == sorted(set(rows)) and rows[-1] > newest
    assert not list((run_dir / "checkpoints").glob(".*.tmp"))
