"""Faults and silent no-ops of issue 35 (items 7, 8, 9 and 11), inline: each case gets one
clear paragraph and exit 2 (or a clear line up front), no traceback, and loses no data."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import shoal
from shoal.cli import main

QUIET = ["--progress", "false", "--tensorboard", "false"]

LATE_ENVS = """
import gymnasium as gym

calls = 0


def make():
    global calls
    calls += 1
    if calls > 2:  # the spec's env and the first env of the vector are made
        raise RuntimeError("license server unreachable")
    return gym.make("CartPole-v1")
"""


def _train(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["train", *argv, *QUIET])
    out, err = capsys.readouterr()
    return code, out, err


# ---- item 8: raw tracebacks ----------------------------------------------------------------


def test_an_env_factory_that_fails_on_a_later_call_is_one_paragraph(capsys, tmp_path, monkeypatch):
    (tmp_path / "shoal_test_late_env.py").write_text(LATE_ENVS)
    monkeypatch.syspath_prepend(str(tmp_path))
    runs = tmp_path / "runs"
    code, _, err = _train(
        capsys, "ppo", "--env", "shoal_test_late_env:make", "--runs-dir", str(runs)
    )
    assert code == 2 and "Traceback" not in err
    assert "Making env 1 of" in err and "license server unreachable" in err
    assert not any(runs.iterdir())  # the new run had no checkpoint: nothing is left half-made


@pytest.fixture
def finished_run(tmp_path) -> Path:
    result = shoal.train(
        "ppo",
        "CartPole-v1",
        total_steps=1024,
        run={"runs_dir": str(tmp_path / "runs"), "progress": False, "eval_episodes": 1},
    )
    return Path(result.run_dir)


def test_a_metrics_file_that_is_not_utf8_under_plot_and_resume(capsys, finished_run, tmp_path):
    metrics = finished_run / "metrics.jsonl"
    damaged = metrics.read_bytes() + b"\xff\xfe not text\n"
    metrics.write_bytes(damaged)
    code = main(["plot", str(finished_run), "--out", str(tmp_path / "p.png")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "is not UTF-8 text" in err
    code, _, err = _train(capsys, "--resume", str(finished_run), "--total-steps", "4096")
    assert code == 2 and "Traceback" not in err and "is not UTF-8 text" in err
    assert metrics.read_bytes() == damaged  # nothing rewritten


def test_play_video_into_a_read_only_folder(finished_run, tmp_path):
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs unshare and root to mount a read-only folder")
    folder = tmp_path / "ro"
    folder.mkdir()
    python = f"{sys.executable} -m shoal play {finished_run} --episodes 1 --video {folder}/v.mp4"
    script = (
        f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} && {python}; "
        "echo rc=$?"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        ["unshare", "-m", "bash", "-c", script], capture_output=True, text=True, env=env
    )
    if "mount" in done.stderr and "rc=" not in done.stdout:
        pytest.skip(f"cannot mount here: {done.stderr[:200]}")
    assert "rc=2" in done.stdout, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "cannot be written here" in done.stderr
    assert not list(folder.iterdir())


@pytest.mark.parametrize("inside", ["", "/job"])  # --out the read-only folder, or a new one in it
def test_launch_out_into_a_read_only_folder(tmp_path, inside):
    if shutil.which("unshare") is None or os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run this: it needs unshare and root to mount a read-only folder")
        pytest.skip("needs unshare and root to mount a read-only folder")
    folder = tmp_path / "ro"
    folder.mkdir()
    train = "shoal train ppo --env CartPole-v1 --runtime ray"
    launch = f"{sys.executable} -m shoal launch slurm --out {folder}{inside} -- {train}"
    script = (
        f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} && {launch}; "
        "echo rc=$?"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        ["unshare", "-m", "bash", "-c", script], capture_output=True, text=True, env=env
    )
    if "mount" in done.stderr and "rc=" not in done.stdout:
        if os.environ.get("CI") == "true":
            pytest.fail(f"cannot mount in CI: {done.stderr[:200]}")
        pytest.skip(f"cannot mount here: {done.stderr[:200]}")
    assert "rc=2" in done.stdout, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "cannot be written here" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1  # one paragraph
    assert not list(folder.iterdir())


# ---- item 7: Ctrl-C during the final evaluation --------------------------------------------


class _CtrlCAtTheFinalCheckpoint(shoal.Callback):
    """Presses Ctrl-C a second after the first checkpoint at the end of the budget: during the
    final evaluation, which follows the final checkpoint at once."""

    def __init__(self, total: int) -> None:
        self.total, self.timer = total, None

    def on_checkpoint(self, path, env_steps):
        if env_steps >= self.total and self.timer is None:
            self.timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
            self.timer.start()


def test_ctrl_c_during_the_final_evaluation_stops_it(tmp_path):
    run = {"runs_dir": str(tmp_path / "runs"), "progress": False, "tensorboard": False}
    run |= {"eval_episodes": 100_000}  # hours of episodes, unless Ctrl-C stops them
    result = shoal.train(
        "ppo",
        "CartPole-v1",
        total_steps=1024,
        run=run,
        callbacks=[_CtrlCAtTheFinalCheckpoint(1024)],
    )
    evaluation = result.evaluation
    assert evaluation is not None and evaluation.stopped_by == "interrupted"
    assert evaluation.episodes < 100_000
    assert result.sampled_evaluation is None  # not started after the Ctrl-C
    summary = json.loads((Path(result.run_dir) / "summary.json").read_text())
    assert summary["evaluation"]["stopped_by"] == "interrupted"


# ---- item 9: budgets the learner never learns within ---------------------------------------


def test_an_unroll_longer_than_the_budget_is_said_up_front(capsys, tmp_path):
    argv = ["impala", "--env", "CartPole-v1", "--total-steps", "64", "--num-envs", "2"]
    argv += ["--agent.unroll-length", "100", "--runs-dir", str(tmp_path), "--eval-episodes", "0"]
    code, out, _ = _train(capsys, *argv)
    assert code == 0
    assert "will not update before --total-steps 64" in out and "one unroll is 200" in out


def test_a_replay_warmup_longer_than_the_budget_is_said_up_front(capsys, tmp_path):
    argv = ["dqn", "--env", "CartPole-v1", "--total-steps", "500", "--eval-episodes", "0"]
    argv += ["--agent.min-replay-size", "1000", "--runs-dir", str(tmp_path)]
    code, out, _ = _train(capsys, *argv)
    assert code == 0
    assert "its replay's warm-up holds 1,000 steps" in out


# ---- item 11: --resume of a run that used its --max-time -----------------------------------


def test_resume_of_a_run_stopped_by_max_time_says_so_and_a_larger_budget_trains(capsys, tmp_path):
    runs = tmp_path / "runs"
    argv = ["ppo", "--env", "CartPole-v1", "--total-steps", "10000000", "--max-time", "6"]
    argv += ["--runs-dir", str(runs), "--run-name", "r", "--eval-episodes", "1"]
    assert _train(capsys, *argv)[0] == 0
    run_dir = runs / "r"
    first = json.loads((run_dir / "summary.json").read_text())
    assert first["stop_reason"] == "max_time"
    code, _, err = _train(capsys, "--resume", str(run_dir))
    assert code == 2 and "Traceback" not in err
    assert "already used its time budget" in err and "--max-time 12" in err
    assert json.loads((run_dir / "summary.json").read_text()) == first  # untouched
    code, _, err = _train(capsys, "--resume", str(run_dir), "--max-time", "12")
    assert code == 0, err
    assert json.loads((run_dir / "summary.json").read_text())["env_steps"] > first["env_steps"]


def test_resume_auto_of_a_run_that_used_its_max_time_still_does_nothing(capsys, tmp_path):
    # benchmarks/atari_learning.py runs the same command until the budget is used.
    argv = ["ppo", "--env", "CartPole-v1", "--total-steps", "10000000", "--max-time", "6"]
    argv += ["--runs-dir", str(tmp_path), "--run-name", "r", "--eval-episodes", "1"]
    argv += ["--resume", "auto"]
    assert _train(capsys, *argv)[0] == 0
    code, out, _ = _train(capsys, *argv)
    assert code == 0 and "already complete" in out


# ---- item 9: memory:// run directories ------------------------------------------------------


def test_a_memory_runs_dir_is_refused_by_the_command_whose_exit_would_erase_it(tmp_path):
    # fsspec's memory:// lives inside one process: `shoal train` used to train into it, print
    # its run directory and exit 0, and the run was gone.
    argv = [sys.executable, "-m", "shoal", "train", "ppo", "--env", "CartPole-v1"]
    argv += ["--total-steps", "64", "--runs-dir", "memory://runs", *QUIET]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env["SHOAL_STAGING_DIR"] = str(tmp_path / "staging")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "vanishes when the command exits" in done.stderr
    assert not (tmp_path / "staging").exists() or not any((tmp_path / "staging").iterdir())


def test_a_launched_command_with_a_memory_runs_dir_is_refused(capsys, tmp_path):
    out = tmp_path / "job"
    argv = ["launch", "slurm", "--out", str(out), "--", "shoal", "train", "ppo"]
    code = main([*argv, "--env", "CartPole-v1", "--runs-dir", "memory://runs"])
    err = capsys.readouterr().err
    assert code == 2 and "vanishes when the command exits" in err
    assert not out.exists()


# ---- item 9: shoal tune --metric --------------------------------------------------------------


def test_a_tune_metric_typo_is_refused_before_the_search(capsys, tmp_path):
    space = Path(__file__).parents[2] / "examples" / "tune" / "ppo_cartpole_space.yaml"
    argv = ["tune", "ppo", "--env", "CartPole-v1", "--space", str(space)]
    code = main([*argv, "--metric", "retrun_mean", "--runs-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "did you mean return_mean?" in err
    assert not any(tmp_path.iterdir())


# ---- item 14: --max-time on a busy machine -------------------------------------------------


def test_a_run_with_no_step_at_the_end_of_training_time_takes_the_evaluations_share():
    """A local Ray placing its roles on a busy machine used to spend training's share of
    --max-time 40 before the first unroll came back: 0 steps trained."""
    from shoal.runtime.config import RunConfig
    from shoal.runtime.counter import Counter

    run = RunConfig(max_time=40.0)  # 30 s of training, 10 s of final evaluations
    assert run.train_time == 30.0
    counter = Counter(run, started=time.time() - 31.0)
    assert counter.stop_reason() is None  # nothing trained yet: it goes on
    counter.env_steps = 256  # the first unroll came back: still no update, it goes on
    assert counter.stop_reason() is None
    counter.updates = 1
    assert counter.stop_reason() == "max_time"
    starved = Counter(run, started=time.time() - 37.5)
    assert starved.stop_reason() == "max_time"  # 3 s are left for the evaluations and exit


class _SlowTraining(shoal.Callback):
    """Holds the first metrics row until `until` seconds after `t0`: training overruns its
    share of --max-time, as on a busy machine."""

    def __init__(self, t0: float, until: float) -> None:
        self.t0, self.until, self.done = t0, until, False

    def on_row(self, row):
        if not self.done:
            self.done = True
            time.sleep(max(0.0, self.until - (time.time() - self.t0)))


def test_the_final_evaluation_shrinks_when_training_overran_max_time(tmp_path):
    t0 = time.time()
    run = {"runs_dir": str(tmp_path), "progress": False, "tensorboard": False}
    run |= {"max_time": 8.0, "eval_episodes": 100_000, "log_interval": 256}
    result = shoal.train(
        "ppo", "CartPole-v1", run=run, started=t0, callbacks=[_SlowTraining(t0, 7.0)]
    )
    summary = json.loads((Path(result.run_dir) / "summary.json").read_text())
    assert summary["stop_reason"] == "max_time"
    # Training ended past 7 s of its 5.3: the evaluations used to take their whole 2.7 s
    # share anyway (9.7 s).
    assert summary["wall_time"] <= 8.0 * 1.1, summary["wall_time"]
