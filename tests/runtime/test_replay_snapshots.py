"""Replay snapshots with checkpoints (issue 14, item 2): written with the learner's checkpoint,
restored on resume on either launcher, pruned with it, never torn by a kill, and a replay over
its budget or a checkpoint from before snapshots said in one line."""

from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import shoal
from shoal import experiment
from shoal.agents.base import Policy, PolicyStep
from shoal.cli import main
from shoal.envs.spec import EnvSpec
from shoal.run.checkpoints import list_checkpoints, load_checkpoint, load_latest
from shoal.runtime.actor import build_acting
from shoal.runtime.rows import Acting
from shoal.telemetry import read_metrics

QUIET = ["--progress", "false", "--tensorboard", "false", "--eval-episodes", "0"]
DQN = {"min_replay_size": 500, "samples_per_insert": 4}
SPEC = EnvSpec("test", gym.spaces.Box(-1.0, 1.0, (1,), np.float32), gym.spaces.Discrete(3))


def _run(quiet_run) -> dict:
    return {**quiet_run, "checkpoint_interval": 1000, "log_interval": 500, "eval_episodes": 0}


def _snapshots(run_dir: Path) -> list[str]:
    return sorted(p.name for p in (run_dir / "checkpoints").iterdir() if ".replay" in p.name)


def _newest(run_dir: Path) -> dict:
    return load_checkpoint(list_checkpoints(run_dir / "checkpoints")[-1])


def _rows_after(run_dir: Path, steps: int) -> list[dict]:
    return [row for row in read_metrics(run_dir / "metrics.jsonl") if row["env_steps"] > steps]


def test_a_resumed_dqn_run_goes_on_with_its_replay_and_its_ratio(quiet_run, capsys):
    first = shoal.train(
        "dqn", "CartPole-v1", seed=0, total_steps=3000, agent=DQN, run=_run(quiet_run)
    )
    saved = _newest(first.run_dir)
    # Only the newest of the three checkpoints keeps a snapshot: the files it names.
    assert len(list_checkpoints(first.run_dir / "checkpoints")) == 3
    assert (
        _snapshots(first.run_dir) == saved["replay"]["files"] and len(saved["replay"]["files"]) == 1
    )
    before = read_metrics(first.run_dir / "metrics.jsonl")[-1]
    capsys.readouterr()

    shoal.train(resume=first.run_dir, run={"total_steps": 4000})
    err = capsys.readouterr().err
    size = int(before["replay_size"])
    assert (
        f"replay restored from the checkpoint at {saved['env_steps']} steps: {size} items." in err
    )
    after = _rows_after(first.run_dir, saved["env_steps"])[0]
    steps = after["env_steps"] - saved["env_steps"]
    # The replay and its counters continue from the saved ones (an empty replay would hold
    # fewer than `steps` items, and could not sample before 500 new ones).
    assert size < after["replay_size"] <= size + steps
    assert after["replay_inserted"] > before["replay_inserted"]
    assert after["replay_sampled"] > before["replay_sampled"]
    assert 3.5 <= after["replay_sampled"] / (after["replay_inserted"] - 500) <= 4
    # Pruning took the older snapshot with its checkpoint.
    assert _snapshots(first.run_dir) == _newest(first.run_dir)["replay"]["files"]
    assert _snapshots(first.run_dir) != saved["replay"]["files"]


def test_a_checkpoint_without_a_snapshot_resumes_with_an_empty_replay(quiet_run, capsys):
    run = _run(quiet_run) | {"checkpoint_replay": False}  # as checkpoints from before snapshots
    first = shoal.train("dqn", "CartPole-v1", seed=0, total_steps=2000, agent=DQN, run=run)
    saved = _newest(first.run_dir)
    assert "replay" not in saved and _snapshots(first.run_dir) == []
    capsys.readouterr()
    shoal.train(resume=first.run_dir, run={"total_steps": 2600})
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "replay" in line]
    assert line.startswith(f"the checkpoint at {saved['env_steps']} steps holds no replay snapshot")
    assert "the replay starts empty" in line
    after = _rows_after(first.run_dir, saved["env_steps"])[0]
    assert after["replay_size"] < after["env_steps"] - saved["env_steps"]


def test_a_replay_over_its_budget_is_not_snapshotted_and_the_log_says_so_once(quiet_run, capsys):
    run = _run(quiet_run) | {"replay_snapshot_budget": 1e-5}  # 10 kB
    first = shoal.train("dqn", "CartPole-v1", seed=0, total_steps=3000, agent=DQN, run=run)
    lines = [line for line in capsys.readouterr().err.splitlines() if "snapshot" in line]
    assert len(lines) == 1 and lines[0].startswith("replay snapshot skipped: the replay takes")
    assert "over --replay-snapshot-budget 1e-05 (GB)" in lines[0]
    assert _snapshots(first.run_dir) == [] and "replay" not in _newest(first.run_dir)
    assert len(list_checkpoints(first.run_dir / "checkpoints")) == 3  # the learner's, still


def test_a_snapshot_that_cannot_be_written_never_stops_the_run(quiet_run, capsys, monkeypatch):
    from shoal.data import table

    def full_disk(path, tree):
        path.write_bytes(b"part of it")  # what a failed write may leave behind
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(table, "write_arrays", full_disk)
    first = shoal.train(
        "dqn", "CartPole-v1", seed=0, total_steps=2000, agent=DQN, run=_run(quiet_run)
    )
    lines = [line for line in capsys.readouterr().err.splitlines() if "snapshot" in line]
    assert lines == [
        "replay snapshot skipped: it could not be written (shard 0: OSError: [Errno 28] No space "
        "left on device). Checkpoints hold the learner only while this lasts; a run resumed from "
        "one refills its replay before learning goes on."
    ]
    assert first.env_steps >= 2000 and _snapshots(first.run_dir) == []
    assert "replay" not in _newest(first.run_dir)


SMALL_R2D2 = {"sequence_length": 8, "sequence_period": 4, "burn_in": 2, "lstm_size": 8}
SMALL_R2D2 |= {"min_replay_size": 20, "batch_size": 8}
SMALL_AGENT57 = SMALL_R2D2 | {"num_mixtures": 2, "dueling_hidden": 16, "hidden_sizes": (16,)}
SMALL_AGENT57 |= {"embedding_size": 8, "rnd_size": 16, "episodic_capacity": 200}
SMALL_AGENT57 |= {"samples_per_insert": 1.0}


@pytest.mark.parametrize(
    ("algo", "env", "agent"),
    [
        ("apex", "CartPole-v1", {"min_replay_size": 500}),
        ("r2d2", "shoal.envs.toy:repeat_first", SMALL_R2D2),
        ("agent57", "CartPole-v1", SMALL_AGENT57),
        (
            "sac",
            "Pendulum-v1",
            {"hidden_sizes": (32, 32), "batch_size": 32, "learning_starts": 200},
        ),
    ],
)
def test_every_replay_agent_resumes_with_its_replay(quiet_run, capsys, algo, env, agent):
    run = _run(quiet_run) | {"num_envs": 2}
    first = shoal.train(algo, env, seed=0, total_steps=1200, agent=agent, run=run)
    saved = _newest(first.run_dir)
    logged = read_metrics(first.run_dir / "metrics.jsonl")[-1]["replay_size"]  # at 1000 steps
    capsys.readouterr()
    shoal.train(resume=first.run_dir, run={"total_steps": 1700})
    err = capsys.readouterr().err
    restored = re.search(rf"checkpoint at {saved['env_steps']} steps: (\d+) items\.", err)
    assert restored and int(restored.group(1)) >= logged > 0, err
    assert _rows_after(first.run_dir, saved["env_steps"])[0]["replay_size"] > int(restored[1])


# A `shoal train --resume` that is SIGKILLed while it writes a replay snapshot: the writer
# stops halfway through the file and says so, and the test kills the process there.
KILLED_MID_WRITE = """
import sys, time
import shoal.run.arrays as checkpoint
from shoal.cli import main

atomic = checkpoint.write_atomically

def halfway(path, data):
    if ".replay" not in path.name:
        return atomic(path, data)

    def stalled(f):
        f.write(b"x" * 4096)
        f.flush()
        print("writing", flush=True)
        time.sleep(600)

    return atomic(path, stalled)

checkpoint.write_atomically = halfway
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.integration
def test_a_kill_while_the_snapshot_is_written_leaves_the_previous_checkpoint_whole(
    quiet_run, tmp_path, capsys
):
    first = shoal.train(
        "dqn", "CartPole-v1", seed=0, total_steps=2000, agent=DQN, run=_run(quiet_run)
    )
    saved = _newest(first.run_dir)
    script = tmp_path / "killed_mid_write.py"
    script.write_text(textwrap.dedent(KILLED_MID_WRITE))
    argv = [sys.executable, str(script), "train", "--resume", str(first.run_dir)]
    process = subprocess.Popen(
        [*argv, "--total-steps", "4000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout.readline().strip() == "writing", process.stderr.read()
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    checkpoints = first.run_dir / "checkpoints"
    assert [p.name for p in checkpoints.iterdir() if p.name.endswith(".tmp")]  # the torn part
    # The newest checkpoint is the one from before, with its whole snapshot.
    latest = load_latest(checkpoints, "dqn")
    assert latest["env_steps"] == saved["env_steps"] and latest["replay"] == saved["replay"]
    assert set(saved["replay"]["files"]) <= set(_snapshots(first.run_dir))
    capsys.readouterr()
    shoal.train(resume=first.run_dir, run={"total_steps": 2600})
    assert f"replay restored from the checkpoint at {saved['env_steps']} steps" in (
        capsys.readouterr().err
    )
    assert not [p for p in checkpoints.iterdir() if p.name.endswith(".tmp")]  # cleared
    assert _snapshots(first.run_dir) == _newest(first.run_dir)["replay"]["files"]


class Recording(Policy):
    """Acts 0 and records each step's `inputs.steps` (the actions each row has taken)."""

    def __init__(self) -> None:
        self.steps: list[list[int]] = []

    def step(self, obs, state, inputs, mode):
        self.steps.append(inputs.steps.tolist())
        return PolicyStep(np.zeros(len(obs), np.int64))


def test_a_resumed_runs_rows_go_on_from_their_share_of_its_steps():
    # So schedules over a row's steps continue: DQN's epsilon does not decay from 1 again.
    policy = Recording()
    acting = Acting(policy, SPEC, start_steps=750)
    obs = np.zeros((2, 1), np.float32)
    acting.act(obs)
    acting.act(obs)
    assert policy.steps == [[750, 750], [751, 751]]
    # A DQN actor of 200 envs resumed at 30k steps explores at epsilon_end (0.02), not 1.
    resolved = experiment.resolve("dqn", "CartPole-v1", run_overrides={"num_envs": 200})
    program = experiment.program(resolved, Path(), experiment.spec_of(resolved))
    net = program.agent.make_networks(program.spec, program.agent_config)

    def off_greedy(run_steps: int) -> float:
        acting = build_acting(program, net, seed=0, actor=0, run_steps=run_steps)
        actions = acting.act(np.zeros((200, 4), np.float32))[0]
        return float(np.mean(actions != np.bincount(actions).argmax()))

    assert off_greedy(30_000) < 0.05 and off_greedy(0) > 0.3


@pytest.mark.parametrize(
    ("value", "says"),
    [("lots", "run.replay_snapshot_budget='lots' must be a number"), ("-1", "must be >= 0 GB")],
)
def test_a_budget_that_is_not_a_size_is_one_clear_paragraph(capsys, tmp_path, value, says):
    runs = tmp_path / "runs"
    argv = ["train", "dqn", "--env", "CartPole-v1", "--replay-snapshot-budget", value]
    code = main([*argv, "--runs-dir", str(runs), *QUIET])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert err.startswith("shoal: error: ") and err.count("\n") == 1 and says in err, err
    assert not runs.exists()


@pytest.mark.integration
@pytest.mark.distributed
@pytest.mark.timeout(900)
def test_the_ray_launcher_snapshots_and_restores_each_shard(ray_cluster, quiet_run, capsys):
    run = _run(quiet_run) | {"runtime": "ray", "actors": 2, "num_envs": 2, "replay_shards": 2}
    first = shoal.train("apex", "CartPole-v1", seed=0, total_steps=3000, agent=DQN, run=run)
    saved = _newest(first.run_dir)
    files = saved["replay"]["files"]
    assert len(files) == 2 and _snapshots(first.run_dir) == sorted(files)
    capsys.readouterr()
    shoal.train(resume=first.run_dir, run={"total_steps": 4000})
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "replay" in line]
    assert line.startswith(f"replay restored from the checkpoint at {saved['env_steps']} steps")
    shards = [int(n) for n in line.split("(shards: ")[1].rstrip(").").split(", ")]
    assert len(shards) == 2 and min(shards) > 0, line
    after = _rows_after(first.run_dir, saved["env_steps"])[0]
    assert after["replay_size"] > sum(shards) * 0.9  # both shards' contents went on
    assert len(_newest(first.run_dir)["replay"]["files"]) == 2
