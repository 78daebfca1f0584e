"""Callbacks, periodic evaluation, keeping the best policy, early stopping, and the rows and
evaluations at the end of a run, used as a user would (shoal.train, the command line)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest

import shoal
from shoal.cli import main
from shoal.errors import ConfigError
from shoal.runtime.callbacks import EarlyStopping, Evaluation
from shoal.runtime.evaluate import EvalResult
from shoal.telemetry.metrics import read_metrics


class Recorder(shoal.Callback):
    """Records every call; stops the run at its `stop_after`-th metrics row."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.calls: list[tuple[str, object]] = []
        self.stop_after = stop_after
        self.pids: set[int] = set()

    def _record(self, name: str, value: object) -> None:
        self.calls.append((name, value))
        self.pids.add(os.getpid())

    def on_start(self, run):
        self._record("start", run)

    def on_row(self, row):
        self._record("row", row)
        rows = sum(1 for name, _ in self.calls if name == "row")
        return self.stop_after is None or rows < self.stop_after

    def on_evaluation(self, evaluation):
        self._record("evaluation", evaluation)

    def on_checkpoint(self, path, env_steps):
        self._record("checkpoint", (path, env_steps))

    def on_end(self, summary):
        self._record("end", summary)

    def named(self, name: str) -> list:
        return [value for kind, value in self.calls if kind == name]


def test_a_callback_that_returns_false_stops_the_run_which_still_ends_properly(quiet_run):
    recorder = Recorder(stop_after=2)
    run = {**quiet_run, "log_interval": 512, "eval_episodes": 2}
    result = shoal.train("ppo", "CartPole-v1", total_steps=50_000, run=run, callbacks=[recorder])
    assert result.stop_reason == "callback"
    assert result.env_steps < 2_048  # stopped at its second row, not at the budget
    (start,) = recorder.named("start")
    assert start.run_dir == result.run_dir and start.env_steps == 0 and start.algo == "ppo"
    assert recorder.calls[0][0] == "start" and recorder.calls[-1][0] == "end"
    # The final checkpoint and both final evaluations follow the stop.
    assert recorder.named("checkpoint")[-1][1] == result.env_steps
    finals = [e for e in recorder.named("evaluation") if e.final]
    assert [e.mode for e in finals] == ["greedy", "sample"]
    assert finals[0].result == result.evaluation and finals[1].result == result.sampled_evaluation
    (summary,) = recorder.named("end")
    assert summary["stop_reason"] == "callback" and summary["env_steps"] == result.env_steps
    assert recorder.pids == {os.getpid()}  # in the process that called shoal.train


def test_eval_every_logs_evaluations_and_keeps_the_best_policy(quiet_run, capsys):
    recorder = Recorder()
    run = {**quiet_run, "eval_every": 2_048, "eval_every_episodes": 3, "eval_episodes": 2}
    result = shoal.train("ppo", "CartPole-v1", total_steps=8_192, run=run, callbacks=[recorder])
    periodic = [e for e in recorder.named("evaluation") if not e.final]
    assert [e.env_steps for e in periodic] == [2_048, 4_096, 6_144]
    assert all(e.mode == "greedy" and e.result.episodes == 3 for e in periodic)
    rows = read_metrics(result.run_dir / "metrics.jsonl")
    logged = {r["env_steps"]: r["eval_return_mean"] for r in rows if "eval_return_mean" in r}
    assert logged == {
        **{e.env_steps: e.mean_return for e in periodic},
        result.env_steps: result.evaluation.mean_return,
    }
    assert "evaluation at 2048 steps: mean return" in capsys.readouterr().err
    # best.pt holds the policy of the best greedy evaluation, final one included.
    greedy = [e for e in recorder.named("evaluation") if e.mode == "greedy"]
    best = max(greedy, key=lambda e: e.mean_return)  # the first of equals, as KeepBest keeps
    policy = shoal.load(result.run_dir / "best.pt")
    assert policy.env_steps == best.env_steps
    again = shoal.evaluate(result.run_dir / "best.pt", episodes=3)
    if best.result.episodes == 3:  # the same seeds, weights and greedy actions: the same returns
        assert again.mean_return == best.mean_return


def _evaluation(step: int, mean: float, final: bool = False) -> Evaluation:
    result = EvalResult(5, mean, 0.0, mean, mean, 10.0)
    return Evaluation(step, "greedy", result, final, lambda path: None)


def test_early_stopping_counts_evaluations_without_a_new_best():
    stopper = EarlyStopping(patience=2, min_delta=1.0)
    answers = [
        stopper.on_evaluation(_evaluation(step, mean))
        for step, mean in enumerate([10.0, 10.5, 12.0, 12.9, 12.0], 1)
    ]
    # 10 is a best; 10.5 is not 1 better (1 stale); 12 is (reset); 12.9 (1), 12 (2): stop.
    assert answers == [None, True, None, True, False]
    assert stopper.on_evaluation(_evaluation(6, 0.0, final=True)) is None  # finals don't count
    with pytest.raises(ValueError, match="patience"):
        EarlyStopping(patience=0)


def test_early_stopping_from_the_command_line_stops_a_run_that_does_not_improve(tmp_path, capsys):
    # A learning rate of 1e-12: every evaluation plays the same greedy policy on the same
    # seeds, so none beats the first.
    argv = [
        "train",
        "ppo",
        "--env",
        "CartPole-v1",
        "--total-steps",
        "20000",
        "--eval-every",
        "1024",
        "--eval-every-episodes",
        "2",
        "--early-stop-patience",
        "2",
        "--eval-episodes",
        "1",
        "--agent.learning-rate",
        "1e-12",
        "--runs-dir",
        str(tmp_path),
        "--progress",
        "false",
    ]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "EarlyStopping.on_evaluation stopped the run at 3072 steps." in out.err
    assert "stopped by callback" in out.out
    (run_dir,) = tmp_path.iterdir()
    assert json.loads((run_dir / "summary.json").read_text())["env_steps"] == 3_072


def test_early_stopping_needs_eval_every(tmp_path, capsys):
    argv = ["train", "ppo", "--env", "CartPole-v1", "--early-stop-patience", "3"]
    assert main([*argv, "--runs-dir", str(tmp_path)]) == 2
    assert "set --eval-every N too" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_callbacks_must_be_callback_objects(quiet_run):
    with pytest.raises(ConfigError) as err:
        shoal.train("ppo", "CartPole-v1", run=quiet_run, callbacks=[print])
    assert "Subclass shoal.Callback" in str(err.value)


def test_the_last_row_is_written_at_the_end_with_the_final_evaluations(tmp_path):
    # 1,000 is no multiple of the 512-step rows: the curves used to stop at 512.
    run = {"runs_dir": str(tmp_path), "progress": False, "log_interval": 512, "eval_episodes": 2}
    result = shoal.train("dqn", "CartPole-v1", total_steps=1_000, run=run)
    rows = read_metrics(result.run_dir / "metrics.jsonl")
    last = rows[-1]
    assert last["env_steps"] == result.env_steps >= 1_000
    assert len({r["env_steps"] for r in rows}) == len(rows)  # one row per step count
    assert last["eval_return_mean"] == result.evaluation.mean_return
    assert last["eval_sampled_return_mean"] == result.sampled_evaluation.mean_return
    assert last["episodes"] == result.episodes and "loss" in last
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary["evaluation_sampled"]["episodes"] == 2

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = EventAccumulator(str(result.run_dir / "tb")).Reload().Tags()["scalars"]
    groups = {tag.split("/")[0] for tag in tags}
    assert groups == {"rollout", "train", "data", "perf", "eval"}, tags
    for tag in ("rollout/return_mean", "train/loss", "perf/steps_per_second"):
        assert tag in tags
    assert "eval/return_mean" in tags and "eval/sampled_return_mean" in tags


class _NeverEnds(gym.Env):
    """An episode that lasts until the evaluation's time bound cuts it."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 1.0, False, False, {}


def test_the_final_evaluation_is_bounded_and_says_what_it_cut(quiet_run, capsys):
    run = {**quiet_run, "eval_episodes": 3, "eval_max_time": 1.0}
    result = shoal.train("ppo", _NeverEnds, total_steps=256, run=run)
    for evaluation in (result.evaluation, result.sampled_evaluation):
        assert evaluation.partial and evaluation.episodes == 3
        assert evaluation.mean_return == evaluation.mean_length > 0  # reward 1 per step so far
    assert "no episode ended in its time bound" in result.evaluation.line(True)
    assert math.isfinite(result.summary["evaluation"]["mean_return"])


def test_shoal_eval_acts_greedily_by_default_as_the_api_does(quiet_run, capsys):
    result = shoal.train("ppo", "CartPole-v1", total_steps=512, run={**quiet_run})
    out = capsys.readouterr().out
    assert main(["eval", str(result.run_dir), "--episodes", "2"]) == 0
    assert "evaluation (deterministic, 2 episodes)" in capsys.readouterr().out
    assert main(["eval", str(result.run_dir), "--episodes", "2", "--stochastic"]) == 0
    assert "evaluation (stochastic, 2 episodes)" in capsys.readouterr().out
    assert not out  # shoal.train prints nothing itself


def test_train_prints_the_training_mean_and_both_evaluations(tmp_path, capsys):
    argv = ["train", "ppo", "--env", "CartPole-v1", "--total-steps", "512"]
    assert main([*argv, "--runs-dir", str(tmp_path), "--progress", "false"]) == 0
    out = capsys.readouterr().out
    assert "mean return of the last episodes:" in out
    assert "evaluation (deterministic, 10 episodes)" in out
    assert "evaluation (stochastic, 10 episodes)" in out


@pytest.mark.integration
def test_max_time_bounds_an_atari_command_evaluation_included(tmp_path):
    pytest.importorskip("ale_py")
    command = [sys.executable, "-m", "shoal", "train", "dqn", "--env", "ALE/Breakout-v5"]
    command += ["--max-time", "30", "--runs-dir", str(tmp_path), "--progress", "false"]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    assert "stopped by max_time" in done.stdout
    assert "evaluation (deterministic" in done.stdout
    assert took < 45, f"took {took:.1f} s"


@pytest.mark.distributed
@pytest.mark.timeout(900)
def test_callbacks_and_periodic_evaluation_run_in_the_driver_on_ray(ray_cluster, quiet_run):
    recorder = Recorder(stop_after=3)
    run = {
        **quiet_run,
        "runtime": "ray",
        "actors": 2,
        "num_envs": 4,
        "log_interval": 512,
        "eval_every": 1_024,
        "eval_every_episodes": 2,
        "eval_episodes": 2,
    }
    result = shoal.train("ppo", "CartPole-v1", total_steps=50_000, run=run, callbacks=[recorder])
    assert result.stop_reason == "callback" and result.env_steps < 50_000
    assert recorder.pids == {os.getpid()}
    assert [e.final for e in recorder.named("evaluation")][-2:] == [True, True]
    assert any(not e.final for e in recorder.named("evaluation"))
    assert (result.run_dir / "best.pt").is_file()
