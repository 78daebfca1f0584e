"""The command line: one clear message and exit code 2 for every user mistake, nothing written."""

from __future__ import annotations

import subprocess
import sys

import pytest

from shoal.cli import main


def _fails(capsys, tmp_path, *argv: str) -> str:
    code = main(["train", *argv, "--runs-dir", str(tmp_path / "runs"), "--progress", "false"])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    return err


def test_unknown_algorithm(capsys, tmp_path):
    err = _fails(capsys, tmp_path, "ppp", "--env", "CartPole-v1")
    assert "Unknown algorithm 'ppp'" in err and "'ppo'" in err


def test_unknown_env_suggests_close_matches(capsys, tmp_path):
    err = _fails(capsys, tmp_path, "ppo", "--env", "CartPol-v1")
    assert "Unknown environment id 'CartPol-v1'" in err and "'CartPole-v1'" in err


def test_unknown_config_key_lists_the_valid_ones(capsys, tmp_path):
    err = _fails(capsys, tmp_path, "ppo", "--env", "CartPole-v1", "--agent.learning-rat", "0.1")
    assert "Unknown key agent.learning_rat" in err
    assert "'learning_rate'" in err and "minibatch_size" in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--agent.learning-rate", "-0.1"], "learning_rate must be > 0"),
        (["--agent.minibatch-size", "100000"], "minibatch_size=100000 is larger than a rollout"),
        (["--num-envs", "0"], "num_envs must be > 0"),
        (["--agent.gamma", "abc"], "agent.gamma='abc' must be a number"),
        (["--agent.activation", "gelu"], "is not one of 'tanh', 'relu'"),
    ],
)
def test_invalid_values(capsys, tmp_path, flags, message):
    err = _fails(capsys, tmp_path, "ppo", "--env", "CartPole-v1", *flags)
    assert message in err


def test_unknown_flag_is_a_usage_error(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "ppo", "--env", "CartPole-v1", "--bogus", "1"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_bad_config_file_keys(capsys, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("agent:\n  learning_rate: 0.01\nrunn:\n  num_envs: 2\n")
    err = _fails(capsys, tmp_path, "ppo", "--env", "CartPole-v1", "--config", str(config))
    assert "Unknown key 'runn'" in err and "'run'" in err


def test_resume_of_something_that_is_not_a_run(capsys, tmp_path):
    code = main(["train", "--resume", str(tmp_path)])
    assert code == 2
    assert "not a shoal run directory" in capsys.readouterr().err


def test_config_file_layers_under_flags(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(
        "algo: ppo\nenv: CartPole-v1\nseed: 5\nrun:\n  total_steps: 256\n"
        "  num_envs: 2\nagent:\n  rollout_length: 64\n  minibatch_size: 64\n"
    )
    runs = tmp_path / "runs"
    code = main(
        [
            "train",
            "--config",
            str(config),
            "--agent.rollout-length",  # PPO's old name for unroll_length, in both layers
            "128",
            "--runs-dir",
            str(runs),
            "--progress",
            "false",
            "--tensorboard",
            "false",
            "--eval-episodes",
            "1",
        ]
    )
    assert code == 0
    (run_dir,) = runs.iterdir()
    written = (run_dir / "config.yaml").read_text()
    assert "seed: 5" in written and "unroll_length: 128" in written and "num_envs: 2" in written
    out, err = capsys.readouterr()
    assert "evaluation (deterministic" in out
    assert "rollout_length is now called unroll_length" in err


def test_list_shows_algorithms_presets_and_settings(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "ppo" in out and "CartPole-v1" in out and "Pendulum-v1" in out
    assert main(["list", "ppo"]) == 0
    assert "learning_rate" in capsys.readouterr().out


def test_python_dash_m_train_then_eval(tmp_path):
    runs = tmp_path / "runs"
    train = subprocess.run(
        [
            sys.executable,
            "-m",
            "shoal",
            "train",
            "ppo",
            "--env",
            "CartPole-v1",
            "--total-steps",
            "512",
            "--runs-dir",
            str(runs),
            "--progress",
            "false",
            "--eval-episodes",
            "0",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "run directory:" in train.stdout
    (run_dir,) = runs.iterdir()
    evaluation = subprocess.run(
        [sys.executable, "-m", "shoal", "eval", str(run_dir), "--episodes", "2", "--deterministic"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "evaluation (deterministic, 2 episodes)" in evaluation.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "shoal", "eval", str(tmp_path)], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_envs_per_actor_is_num_envs(capsys, tmp_path):
    err = _fails(capsys, tmp_path, "ppo", "--env", "CartPole-v1", "--envs-per-actor", "0")
    assert "num_envs must be > 0" in err


def test_max_time_counts_from_the_commands_own_start_not_an_import_long_before(
    tmp_path, monkeypatch, capsys
):
    # The first command in a process counts its imports in --max-time; a later one (a test
    # suite, a Python caller) counts from its own start. Counted from the import, a fault test
    # an hour into the suite once stopped by max_time at step 0.
    import json
    import time

    from shoal import cli

    monkeypatch.setattr(cli, "_IMPORTED", [time.time() - 3600])  # imported an hour ago
    argv = ["train", "ppo", "--env", "CartPole-v1", "--total-steps", "2000", "--max-time", "120"]
    argv += ["--runs-dir", str(tmp_path), "--progress", "false", "--tensorboard", "false"]
    argv += ["--eval-episodes", "0"]
    stops = []
    for name in ("first", "later"):
        assert main([*argv, "--run-name", name]) == 0
        stops.append(json.loads((tmp_path / name / "summary.json").read_text())["stop_reason"])
    capsys.readouterr()
    assert stops == ["max_time", "total_steps"]
