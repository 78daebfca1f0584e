"""The search space file: what it accepts, and the one-paragraph errors of what it refuses,
before anything is written or Ray is started."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoal import catalog
from shoal.cli import main
from shoal.errors import ConfigError
from shoal.tune.space import parse_space

PPO = catalog.get_agent("ppo").config_cls
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tune"


def parse(data: dict):
    return parse_space(data, PPO, "ppo", "space.yaml")


def test_flat_and_nested_keys_and_every_distribution():
    space = parse(
        {
            "agent.learning_rate": {"loguniform": [1.0e-4, "1e-2"]},
            "agent": {"entropy_coef": {"choice": [0.0, 0.01]}, "num_epochs": {"randint": [2, 9]}},
            "run.num_envs": {"choice": [8, 16]},
            "agent.gamma": {"uniform": [0.9, 0.999]},
        }
    )
    kinds = {d.key: (d.kind, d.args) for d in space.dimensions}
    assert kinds == {
        "agent.learning_rate": ("loguniform", (1.0e-4, 1.0e-2)),
        "agent.entropy_coef": ("choice", (0.0, 0.01)),
        "agent.num_epochs": ("randint", (2, 9)),
        "run.num_envs": ("choice", (8, 16)),
        "agent.gamma": ("uniform", (0.9, 0.999)),
    }
    assert space.dimensions[2].corners() == [2, 8]  # randint's high is excluded


def test_the_shipped_example_spaces_parse():
    for name in ("ppo_cartpole_space.yaml", "ppo_minatar_space.yaml"):
        from shoal.tune.space import load_space

        assert load_space(EXAMPLES / name, PPO, "ppo").dimensions


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"agent.learning_rat": {"uniform": [0.1, 0.2]}}, ["unknown key", "learning_rate"]),
        ({"run.num_env": {"choice": [8]}}, ["unknown key run.num_env", "num_envs"]),
        ({"learner.lr": {"uniform": [0.1, 0.2]}}, ["agent.FIELD or run.FIELD"]),
        ({"agent.learning_rate": {"loguniform": [0.0, 0.01]}}, ["low > 0"]),
        ({"agent.learning_rate": {"uniform": [0.01, 0.001]}}, ["low < high"]),
        ({"agent.learning_rate": {"normal": [0.0, 1.0]}}, ["unknown distribution"]),
        ({"agent.learning_rate": {"uniform": [0.1]}}, ["[low, high]"]),
        ({"agent.learning_rate": 0.001}, ["must be one distribution"]),
        ({"agent.num_epochs": {"uniform": [1, 4]}}, ["randint"]),
        ({"agent.learning_rate": {"randint": [1, 4]}}, ["uniform or loguniform"]),
        ({"agent.num_epochs": {"randint": [3, 4]}}, ["at least 2"]),
        ({"agent.num_epochs": {"choice": ["four"]}}, ["agent.num_epochs"]),
        ({"agent.entropy_coef": {"choice": [0.1, 0.1]}}, ["repeat"]),
        ({"run.total_steps": {"choice": [1000, 2000]}}, ["--total-steps"]),
        ({}, ["names no setting"]),
    ],
)
def test_mistakes_are_one_paragraph_config_errors(data, words):
    with pytest.raises(ConfigError) as caught:
        parse(data)
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def _tune(tmp_path: Path, capsys, space: str, *flags: str) -> tuple[int, str]:
    path = tmp_path / "space.yaml"
    path.write_text(space)
    runs = tmp_path / "runs"
    code = main(
        [
            "tune",
            "ppo",
            "--env",
            "CartPole-v1",
            "--space",
            str(path),
            "--runs-dir",
            str(runs),
            *list(flags),
        ]
    )
    return code, capsys.readouterr().err


def test_the_cli_refuses_before_writing_anything(tmp_path, capsys):
    code, err = _tune(tmp_path, capsys, "agent.learning_rat: {uniform: [0.1, 0.2]}\n")
    assert code == 2 and err.startswith("shoal: error:") and "Traceback" not in err
    assert not (tmp_path / "runs").exists()


def test_values_the_agent_refuses_are_found_at_the_ends_of_the_space(tmp_path, capsys):
    # CartPole's preset: rollouts of 32 x 8 envs = 256 steps, so a minibatch of 512 cannot be.
    code, err = _tune(tmp_path, capsys, "agent.minibatch_size: {choice: [128, 512]}\n")
    assert code == 2 and "minibatch_size=512" in err
    # The preset itself now fits any number of envs (issue 35, item 12): an explicit minibatch
    # of 256 does not fit 4 envs (32 x 4 = 128).
    code, err = _tune(
        tmp_path, capsys, "run.num_envs: {choice: [4, 8]}\n", "--agent.minibatch-size", "256"
    )
    assert code == 2 and "run.num_envs=4" in err
    assert not (tmp_path / "runs").exists()


def test_pbt_refuses_settings_a_live_learner_cannot_take(tmp_path, capsys):
    code, err = _tune(
        tmp_path, capsys, "agent.unroll_length: {choice: [32, 64]}\n", "--scheduler", "pbt"
    )
    assert code == 2 and "cannot mutate agent.unroll_length" in err
    code, err = _tune(tmp_path, capsys, "run.num_envs: {choice: [8, 16]}\n", "--scheduler", "pbt")
    assert code == 2 and "cannot mutate run.num_envs" in err
    code, err = _tune(
        tmp_path, capsys, "agent.learning_rate: {uniform: [0.001, 0.01]}\n", "--scheduler", "nope"
    )
    assert code == 2 and "fifo, asha, pbt" in err
    assert not (tmp_path / "runs").exists()


def test_agents_without_live_settings_refuse_pbt(tmp_path, capsys):
    path = tmp_path / "space.yaml"
    path.write_text("agent.learning_rate: {loguniform: [1.0e-4, 1.0e-3]}\n")
    code = main(
        [
            "tune",
            "sac",
            "--env",
            "Pendulum-v1",
            "--space",
            str(path),
            "--scheduler",
            "pbt",
            "--runs-dir",
            str(tmp_path / "runs"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "sac's learner takes no new settings" in err


def test_pbt_perturbations_stay_inside_the_space():
    from shoal.tune.pbt import KeepInSpace

    space = parse(
        {
            "agent.gamma": {"uniform": [0.99, 0.999]},
            "agent.num_epochs": {"randint": [2, 9]},
            "agent.entropy_coef": {"choice": [0.0, 0.01]},
        }
    )
    explored = KeepInSpace(space)({"agent": {"gamma": 0.999 * 1.2, "num_epochs": 10.8}})
    assert explored["agent"] == {"gamma": 0.999, "num_epochs": 8}
