"""Bad inputs and faults a user meets (issue 14): each is one paragraph, exit code 2, no
traceback, and no half-written run directory or checkpoint; runs that diverge, lose their first
checkpoint or are interrupted stop or continue the way the README says."""

from __future__ import annotations

import errno
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import shoal
from shoal.cli import main
from shoal.errors import ShoalError, ShoalWarning
from shoal.run.checkpoints import list_checkpoints, load_checkpoint
from shoal.telemetry import read_metrics

QUIET = ["--progress", "false", "--tensorboard", "false", "--eval-episodes", "0"]

BAD_ENVS = """
import gymnasium as gym
import numpy as np


class Bad(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, mode):
        self.mode, self.t = mode, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(3, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t >= 5 and self.mode == "raise":
            raise RuntimeError("the simulator crashed")
        obs = ["a", "b", "c"] if self.t >= 5 and self.mode == "text" else np.zeros(3, np.float32)
        return obs, 0.0, False, False, {}


def raising():
    return Bad("raise")


def text():
    return Bad("text")
"""


def _train_fails(capsys, runs: Path, *argv: str) -> str:
    """`shoal train ARGV` exits 2 with one paragraph and leaves no run directory in `runs`."""
    code = main(["train", *argv, "--runs-dir", str(runs), *QUIET])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert err.startswith("shoal: error: ") and err.count("\n") == 1, err
    assert not runs.is_dir() or not any(runs.iterdir()), list(runs.iterdir())
    return err


@pytest.fixture
def bad_envs(tmp_path, monkeypatch) -> str:
    (tmp_path / "shoal_test_bad_envs.py").write_text(BAD_ENVS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "shoal_test_bad_envs"


# ---- item 8: raw tracebacks ----------------------------------------------------------------


def test_a_runs_dir_that_is_a_file(capsys, tmp_path):
    runs = tmp_path / "runs"
    runs.write_text("not a folder")
    code = main(["train", "ppo", "--env", "CartPole-v1", "--runs-dir", str(runs), *QUIET])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "is a file, not a folder" in err
    assert runs.read_text() == "not a folder"


def test_a_read_only_runs_dir(capsys, tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    runs.mkdir()
    real_mkdir = os.mkdir

    def read_only(path, *args, **kwargs):  # what a read-only folder answers (even to root)
        if Path(path).parent == runs:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", read_only)
    err = _train_fails(capsys, runs, "ppo", "--env", "CartPole-v1")
    assert "Permission denied" in err and "--runs-dir you can write to" in err


@pytest.mark.parametrize("name", ["a/b", "../x", "/tmp/shoal-abs", "..", "a\\b"])
def test_run_names_that_are_not_one_folder_inside_runs_dir(capsys, tmp_path, name):
    err = _train_fails(capsys, tmp_path / "runs", "ppo", "--env", "CartPole-v1", "--run-name", name)
    assert "run_name must be one folder name inside --runs-dir" in err
    assert not (tmp_path / "x").exists() and not Path("/tmp/shoal-abs").exists()


def test_a_binary_config_file(capsys, tmp_path):
    config = tmp_path / "weights.yaml"
    config.write_bytes(bytes(range(256)) * 4)
    err = _train_fails(
        capsys, tmp_path / "runs", "ppo", "--env", "CartPole-v1", "--config", str(config)
    )
    assert "is not a text file" in err


def test_an_env_whose_step_raises_is_named_with_its_index_and_step(capsys, tmp_path, bad_envs):
    env = f"{bad_envs}:raising"
    err = _train_fails(capsys, tmp_path / "runs", "ppo", "--env", env, "--total-steps", "512")
    assert f"{env} (env 0) raised RuntimeError in step() at step 5" in err
    assert "the simulator crashed" in err


def test_an_env_returning_non_numeric_observations(capsys, tmp_path, bad_envs):
    env = f"{bad_envs}:text"
    err = _train_fails(capsys, tmp_path / "runs", "ppo", "--env", env, "--total-steps", "512")
    assert f"{env} (env 0) returned an observation that is not numeric at step 5" in err


def _full_disk_for_checkpoints(monkeypatch, after: int) -> None:
    """os.fsync answers ENOSPC for checkpoint temp files once `after` checkpoints are written."""
    real_fsync, written = os.fsync, []

    def fsync(fd: int) -> None:
        if "/.step-" in os.readlink(f"/proc/self/fd/{fd}"):
            if len(written) >= after:
                raise OSError(errno.ENOSPC, "No space left on device")
            written.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds file names in /proc")
def test_a_full_disk_at_the_first_checkpoint_leaves_nothing(capsys, tmp_path, monkeypatch):
    _full_disk_for_checkpoints(monkeypatch, after=0)
    err = _train_fails(
        capsys, tmp_path / "runs", "ppo", "--env", "CartPole-v1", "--total-steps", "512"
    )
    assert "The checkpoint at 512 steps was not written" in err and "The disk is full" in err
    assert "Nothing was kept" in err


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds file names in /proc")
def test_a_full_disk_later_keeps_the_checkpoints_before_it(capsys, tmp_path, monkeypatch):
    _full_disk_for_checkpoints(monkeypatch, after=2)
    runs = tmp_path / "runs"
    flags = ["--total-steps", "4096", "--checkpoint-interval", "512", "--run-name", "full"]
    code = main(["train", "ppo", "--env", "CartPole-v1", *flags, "--runs-dir", str(runs), *QUIET])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1
    assert "The checkpoint at 1536 steps was not written" in err
    assert f"continue with `shoal train --resume {runs / 'full'}`" in err
    checkpoints = runs / "full" / "checkpoints"
    assert [p.name for p in list_checkpoints(checkpoints)][-1] == "step-000000001024.pt"
    assert sorted(os.listdir(checkpoints)) == ["step-000000000512.pt", "step-000000001024.pt"]
    for path in list_checkpoints(checkpoints):
        load_checkpoint(path)


# ---- item 10 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("resources", ["x", "gpu_node", "=1", "a=1,b", "a=-1", "a=nan", "a=1,"])
def test_malformed_actor_resources_are_refused_before_anything_is_written(
    capsys, tmp_path, resources
):
    err = _train_fails(
        capsys, tmp_path / "runs", "ppo", "--env", "CartPole-v1", "--actor-resources", resources
    )
    assert "--actor-resources must look like 'name=1,other=0.5'" in err


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda q: shoal.train(123, "CartPole-v1", run=q), "algo must be an algorithm name"),
        (lambda q: shoal.train("ppo", 123, run=q), "env must be an environment id"),
        (lambda q: shoal.train("ppo", "CartPole-v1", total_steps="x", run=q), "must be an integer"),
        (lambda q: shoal.train("ppo", "CartPole-v1", seed=True, run=q), "seed must be an integer"),
        (lambda q: shoal.train("ppo", "CartPole-v1", agent=[1], run=q), "agent must be a dict"),
        (lambda q: shoal.train("ppo", "CartPole-v1", run="fast"), "run must be a dict"),
        (lambda q: shoal.train("ppo", "CartPole-v1", config=1, run=q), "config must be the path"),
        (lambda q: shoal.train("ppo", "CartPole-v1", agent={1: 2}, run=q), "names must be strings"),
        (lambda q: shoal.train(resume=123), "resume must be the path of a run directory"),
        (lambda q: shoal.evaluate(123), "path must be the path of a run directory"),
        (lambda q: shoal.evaluate("runs/x", episodes="2"), "episodes must be a whole number"),
        (lambda q: shoal.load(None), "path must be the path of a run directory"),
    ],
)
def test_python_arguments_of_the_wrong_type_raise_a_shoal_error(quiet_run, call, message):
    with pytest.raises(ShoalError, match=message):
        call(quiet_run)
    runs = Path(quiet_run["runs_dir"])
    assert not runs.exists() or not any(runs.iterdir())


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A tiny PPO run on CartPole: 512 steps, one checkpoint."""
    runs = tmp_path_factory.mktemp("runs")
    run = {"runs_dir": str(runs), "progress": False, "tensorboard": False, "eval_episodes": 0}
    return shoal.train("ppo", "CartPole-v1", total_steps=512, run=run).run_dir


@pytest.mark.parametrize(
    ("obs", "message"),
    [
        (np.array([0.0, np.nan, 0.0, 0.0]), "holding NaN or inf"),
        (np.full((2, 4), np.inf), "holding NaN or inf"),
        (np.zeros(3), r"shape \(3,\); CartPole-v1 observations have shape \(4,\)"),
        (np.zeros((2, 5)), r"shape \(2, 5\)"),
        (np.zeros((0, 4)), r"shape \(0, 4\)"),
        (["a", "b", "c", "d"], "non-numeric observation"),
        ([[1.0, 2.0], [3.0]], "non-numeric observation"),
        ({"x": np.zeros(4)}, "observations are arrays; act got a dict"),
    ],
)
def test_loaded_policy_refuses_nan_and_misshapen_observations(trained, obs, message):
    policy = shoal.load(trained)
    with pytest.raises(ShoalError, match=message):
        policy.act(obs)
    assert policy.act(np.zeros(4, np.float32)) in (0, 1)  # and still acts on good ones
    assert policy.act(np.zeros((3, 4))).shape == (3,)


def test_sigint_checkpoints_then_exits_130(tmp_path):
    run_dir = tmp_path / "interrupted"
    command = [sys.executable, "-m", "shoal", "train", "ppo", "--env", "CartPole-v1"]
    command += ["--total-steps", "100000000", "--log-interval", "512", "--runs-dir", str(tmp_path)]
    command += ["--run-name", "interrupted", "--checkpoint-interval", "100000000", *QUIET]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while not read_metrics(run_dir / "metrics.jsonl"):  # the driver's handler is installed
            assert time.time() < deadline and process.poll() is None, "no metrics row"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert "Traceback" not in err and "interrupted at" in err
    assert f"shoal train --resume {run_dir}" in err
    (checkpoint,) = list_checkpoints(run_dir / "checkpoints")
    assert load_checkpoint(checkpoint)["env_steps"] >= 512


# ---- eval of a run directory from elsewhere --------------------------------------------------

EVIL = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\ndef make():\n    return None\n"


@pytest.mark.parametrize(
    "config",
    [
        "algo: ppo\nenv: {module}:make\nseed: 0\n",
        "algo: ppo\nenv: CartPole-v1\nseed: 0\nenv_config:\n  import_module: {module}\n",
        "algo: ppo\nenv: CartPole-v1\nseed: 0\nagent:\n  torso: {module}:make\n",
    ],
    ids=["env", "import_module", "torso"],
)
def test_eval_and_resume_do_not_import_what_a_run_directory_names(
    capsys, tmp_path, monkeypatch, config
):
    module = "shoal_test_untrusted_module"
    marker = tmp_path / "imported"
    (tmp_path / f"{module}.py").write_text(EVIL.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(tmp_path))
    run_dir = tmp_path / "downloaded-run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(config.format(module=module))
    for argv in (["eval", str(run_dir)], ["train", "--resume", str(run_dir)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.count("\n") == 1
        assert "names code that loading the run would import" in err and module in err
        assert "pass --trust-run" in err
    with pytest.raises(ShoalError, match="trust_run=True"):
        shoal.load(run_dir)
    assert not marker.exists() and module not in sys.modules
    assert sorted(p.name for p in run_dir.iterdir()) == ["config.yaml"]


def test_trust_run_loads_a_run_with_its_own_torso(capsys, tmp_path, monkeypatch, quiet_run):
    module = "shoal_test_trusted_torso"
    (tmp_path / f"{module}.py").write_text(
        "import torch.nn as nn\n\n\ndef small(space):\n"
        "    return nn.Sequential(nn.Linear(space.shape[0], 8), nn.Tanh())\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    agent = {"torso": f"{module}:small"}
    # Trained here, the run is evaluated at its end without being asked to be trusted.
    run = {**quiet_run, "eval_episodes": 1}
    result = shoal.train("ppo", "CartPole-v1", total_steps=256, run=run, agent=agent)
    assert result.evaluation is not None
    monkeypatch.delitem(sys.modules, module)
    assert main(["eval", str(result.run_dir), "--episodes", "1"]) == 2
    assert module not in sys.modules
    assert main(["eval", str(result.run_dir), "--episodes", "1", "--trust-run"]) == 0
    assert "evaluation (deterministic, 1 episodes)" in capsys.readouterr().out
    resumed = shoal.train(resume=result.run_dir, run={"total_steps": 512}, trust_run=True)
    assert resumed.env_steps >= 512


# ---- item 3: --resume with no complete checkpoint --------------------------------------------


@pytest.mark.parametrize("left", ["nothing", "a temp file"])
def test_resume_without_a_complete_checkpoint_starts_again_with_clean_metrics(
    capsys, tmp_path, left
):
    runs = tmp_path / "runs"
    argv = ["--log-interval", "256", "--checkpoint-interval", "100000", *QUIET]
    common = ["--runs-dir", str(runs), "--run-name", "lost", *argv]
    assert main(["train", "ppo", "--env", "CartPole-v1", "--total-steps", "1024", *common]) == 0
    run_dir = runs / "lost"
    for path in list_checkpoints(run_dir / "checkpoints"):
        path.unlink()  # as if killed before (or while) writing its first checkpoint
    if left == "a temp file":
        (run_dir / "checkpoints" / ".step-000000001024.pt.x1y2.tmp").write_bytes(b"half a che")
    capsys.readouterr()

    assert main(["train", "--resume", str(run_dir), "--total-steps", "1536"]) == 0
    err = capsys.readouterr().err
    assert "shoal: warning:" in err and "has no complete checkpoint" in err
    assert "starts again from step 0" in err and err.count("no complete checkpoint") == 1
    rows = read_metrics(run_dir / "metrics.jsonl")
    steps = [row["env_steps"] for row in rows]
    assert steps == [256, 512, 768, 1024, 1280, 1536], "one row per step count, no repeats"
    # The same run as a fresh one with that budget, under the same seed.
    fresh = ["--runs-dir", str(runs), "--run-name", "fresh", *argv, "--total-steps", "1536"]
    assert main(["train", "ppo", "--env", "CartPole-v1", *fresh]) == 0
    same = ("env_steps", "episodes", "updates", "return_mean", "policy_loss")
    expected = read_metrics(runs / "fresh" / "metrics.jsonl")
    assert [{k: r[k] for k in same} for r in rows] == [{k: r[k] for k in same} for r in expected]
    assert not [p for p in os.listdir(run_dir / "checkpoints") if p.endswith(".tmp")]


# ---- item 6: NaN and inf settings, divergence ----------------------------------------------


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--agent.learning-rate", "nan"], "agent.learning_rate=nan is not a number"),
        (["--agent.learning-rate", "inf"], "agent.learning_rate=inf must be a finite number"),
        (["--agent.learning-rate", "-inf"], "agent.learning_rate=-inf must be a finite number"),
        (["--agent.gamma", "NaN"], "agent.gamma=nan is not a number"),
        (["--max-time", "inf"], "run.max_time=inf must be a finite number"),
        (["--stop-at-return", "nan"], "run.stop_at_return=nan is not a number"),
    ],
)
def test_nan_and_inf_settings_are_refused(capsys, tmp_path, flags, message):
    err = _train_fails(capsys, tmp_path / "runs", "ppo", "--env", "CartPole-v1", *flags)
    assert message in err


def test_inf_is_taken_where_a_setting_documents_it(quiet_run):
    from shoal import experiment

    resolved = experiment.resolve(
        "dqn", "CartPole-v1", agent_overrides={"huber_delta": "inf"}, run_overrides=quiet_run
    )
    assert resolved.agent_config.huber_delta == float("inf")
    with pytest.raises(ShoalError, match="huber_delta=nan is not a number"):
        experiment.resolve("dqn", "CartPole-v1", agent_overrides={"huber_delta": "nan"})


def test_divergence_before_the_first_checkpoint_stops_the_run_naming_the_update(capsys, tmp_path):
    err = _train_fails(
        capsys, tmp_path / "runs", "ppo", "--env", "CartPole-v1", "--agent.learning-rate", "1e30"
    )
    assert "Training diverged at update 1" in err and "=nan" in err
    assert "Lower --agent.learning-rate" in err and "Nothing was kept" in err


def test_divergence_keeps_the_checkpoints_from_before_it(capsys, tmp_path):
    runs = tmp_path / "runs"
    agent = ["--agent.learning-rate", "1e30", "--agent.min-replay-size", "256"]
    run = ["--checkpoint-interval", "64", "--runs-dir", str(runs), "--run-name", "diverged"]
    code = main(["train", "dqn", "--env", "CartPole-v1", *agent, *run, *QUIET])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1
    diverged = int(re.search(r"Training diverged at update (\d+): it gave .*=nan", err).group(1))
    kept = list_checkpoints(runs / "diverged" / "checkpoints")
    assert kept and f"the newest {kept[-1].name}" in err
    for path in kept:
        state = load_checkpoint(path, "dqn")
        assert state["updates"] < diverged
        assert not [k for k, v in state["learner"]["network"].items() if not v.isfinite().all()]


def test_weights_that_are_not_finite_are_never_checkpointed(quiet_run, monkeypatch):
    from shoal.errors import DivergenceError
    from shoal.runtime import learning

    monkeypatch.setattr(learning, "check_update", lambda metrics, update: None)  # losses unseen
    run = {**quiet_run, "eval_episodes": 0, "checkpoint_interval": 256, "run_name": "nan"}
    with pytest.raises(DivergenceError, match=r"by update \d+ \(\d+ steps\): the learner's .*NaN"):
        shoal.train("ppo", "CartPole-v1", total_steps=1024, run=run, agent={"learning_rate": 1e30})
    assert not (Path(quiet_run["runs_dir"]) / "nan").exists()


# ---- item 7: a damaged newest checkpoint on resume -----------------------------------------


def test_resume_past_a_damaged_newest_checkpoint_says_so_once_and_prunes_safely(quiet_run):
    run = {**quiet_run, "eval_episodes": 0, "checkpoint_interval": 256, "keep_checkpoints": 2}
    first = shoal.train("ppo", "CartPole-v1", total_steps=1024, run=run)
    checkpoints = first.run_dir / "checkpoints"
    assert [p.name for p in list_checkpoints(checkpoints)][-1] == "step-000000001024.pt"
    (checkpoints / "step-000000001024.pt").write_bytes(b"torn")
    with pytest.warns(ShoalWarning) as caught:
        shoal.train(resume=first.run_dir, run={"total_steps": 1536, "eval_episodes": 1})
    assert len(caught) == 1, [str(w.message) for w in caught]
    message = str(caught[0].message)
    assert "step-000000001024.pt is not a readable shoal checkpoint" in message
    assert "using step-000000000768.pt (768 steps)" in message and "renamed" in message
    names = sorted(os.listdir(checkpoints))
    assert names == ["step-000000001024.pt.damaged", "step-000000001280.pt", "step-000000001536.pt"]
    for path in list_checkpoints(checkpoints):
        load_checkpoint(path)


# ---- item 4: an --address where no Ray cluster answers -------------------------------------


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("127.0.0.1:1", "Nothing answers at --address 127.0.0.1:1 (Connection refused)"),
        ("ray://127.0.0.1:1", "Nothing answers at --address ray://127.0.0.1:1"),
        ("not an address", "--address 'not an address' is not the address of a Ray cluster"),
        ("head:0", "is not the address of a Ray cluster"),
        ("head:65536", "is not the address of a Ray cluster"),
        ("http://head:6379", "is not the address of a Ray cluster"),
    ],
)
def test_an_address_where_no_ray_cluster_answers_fails_within_seconds(
    capsys, tmp_path, address, message
):
    started = time.monotonic()
    argv = ["ppo", "--env", "CartPole-v1", "--runtime", "ray", "--address", address]
    err = _train_fails(capsys, tmp_path / "runs", *argv)
    assert message in err and "ray start --head" in err
    assert time.monotonic() - started < 10  # it used to retry for minutes


def test_a_port_that_is_not_a_ray_head_is_refused_after_a_bounded_wait(
    capsys, tmp_path, monkeypatch
):
    pytest.importorskip("ray")
    from shoal.runtime import ray_connect

    monkeypatch.setattr(ray_connect, "GCS_TIMEOUT_S", 3.0)
    with socket.create_server(("127.0.0.1", 0)) as listener:  # accepts, never answers
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        started = time.monotonic()
        argv = ["ppo", "--env", "CartPole-v1", "--runtime", "ray", "--address", address]
        err = _train_fails(capsys, tmp_path / "runs", *argv)
    assert f"Something listens at --address {address} but did not answer" in err
    assert time.monotonic() - started < 10


# ---- item 5: --max-time within one long unroll, and settings the machine cannot hold --------


@pytest.mark.parametrize(
    ("algo", "length"),
    [("ppo", "unroll_length"), ("dqn", "unroll_length"), ("impala", "unroll_length")],
    ids=["in turn", "in turn, replay", "overlapped"],
)
def test_max_time_ends_a_long_unroll_with_a_checkpoint(quiet_run, algo, length):
    run = {**quiet_run, "max_time": 2.0, "eval_episodes": 0}
    started = time.monotonic()
    result = shoal.train(algo, "CartPole-v1", agent={length: 1_000_000}, run=run)
    # One unroll of 1M steps x 8 envs takes minutes; the run stops at its deadline instead.
    assert time.monotonic() - started < 20
    assert result.stop_reason == "max_time"
    (checkpoint,) = list_checkpoints(result.run_dir / "checkpoints")
    assert load_checkpoint(checkpoint)["env_steps"] == result.env_steps == 0


def test_an_unroll_larger_than_the_machine_is_refused(capsys, tmp_path):
    flags = ["--agent.unroll-length", "100000000000"]
    err = _train_fails(capsys, tmp_path / "runs", "impala", "--env", "CartPole-v1", *flags)
    assert "One unroll of CartPole-v1 holds 8 envs x 100,000,000,001 observations" in err
    assert "more than this machine's" in err and "Lower --num-envs" in err


def test_envs_that_take_longer_to_build_than_max_time_are_refused(capsys, tmp_path):
    started = time.monotonic()
    flags = ["--num-envs", "200000", "--max-time", "2"]
    err = _train_fails(capsys, tmp_path / "runs", "ppo", "--env", "CartPole-v1", *flags)
    assert "Building 200,000 CartPole-v1 environments in one process takes about" in err
    assert "longer than --max-time 2 s" in err
    assert time.monotonic() - started < 10  # building them takes about 30 s


# ---- item 10: ray and central-inference settings are checked before writing ---------------


@pytest.mark.parametrize(
    "flags",
    [
        ["--runtime", "ray", "--actor-resources", "gpu_node"],
        ["--runtime", "ray", "--learner-resources", "x"],
        ["--runtime", "ray", "--replay-resources", "a=-1"],
        ["--runtime", "ray", "--inference", "central", "--actor-resources", "=1"],
        ["--inference", "centre"],
        ["--inference", "central", "--inference-batch", "0"],
        ["--runtime", "ray", "--inference", "central", "--inference-timeout-ms", "-1"],
    ],
)
def test_ray_and_central_inference_mistakes_are_refused_before_anything_is_written(
    capsys, tmp_path, flags
):
    err = _train_fails(capsys, tmp_path / "runs", "impala", "--env", "CartPole-v1", *flags)
    assert "must look like 'name=1,other=0.5'" in err or "inference" in err
