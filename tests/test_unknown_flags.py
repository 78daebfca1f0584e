"""Unknown flags get the shoal flag they may mean, matched on meaning before spelling, in one
paragraph with exit code 2 (the peers' habits: `--total-timesteps`, `--env-id`, `--lr`)."""

from __future__ import annotations

import pytest

from shoal.cli import main


def _fails(capsys, *argv):
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    captured = capsys.readouterr()
    assert exit_info.value.code == 2 and captured.out == ""
    err = captured.err.strip()
    assert err.startswith("shoal: error: ") and "\n" not in err and "Traceback" not in err
    return err


def _refused(capsys, *argv):
    """A setting refused after the line was parsed: exit code 2 from `main`."""
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("shoal: error: ") and "\n" not in err and "Traceback" not in err
    return err


def test_agent_lr_suggests_the_learning_rate_not_anneal_lr(capsys):
    err = _refused(capsys, "train", "ppo", "--env", "CartPole-v1", "--agent.lr", "1e-3")
    hint = err[: err.index("Valid keys")]
    assert "Unknown key agent.lr. Did you mean 'learning_rate' (--agent.learning-rate)?" in hint
    assert "anneal" not in hint


@pytest.mark.parametrize(
    ("algo", "flag", "means"),
    [
        ("ppo", "--agent.ent-coef", "--agent.entropy-coef"),
        ("ppo", "--agent.vf-coef", "--agent.value-coef"),
        ("ppo", "--agent.n-steps", "--agent.unroll-length"),
        ("impala", "--agent.n-steps", "--agent.unroll-length"),
        ("ppo", "--agent.batch-size", "--agent.minibatch-size"),
        ("dqn", "--agent.tau", "--agent.target-tau"),
        ("dqn", "--agent.learning-starts", "--agent.min-replay-size"),
        ("sac", "--agent.min-replay-size", "--agent.learning-starts"),
        ("ppo", "--agent.learning-rat", "--agent.learning-rate"),
    ],
)
def test_agent_flags_are_matched_on_meaning_then_spelling(capsys, algo, flag, means):
    err = _refused(capsys, "train", algo, "--env", "CartPole-v1", flag, "1")
    assert f"Did you mean '{means[8:].replace('-', '_')}' ({means})?" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--total-timesteps", "1000"],
            "--total-timesteps is not an option of `shoal train`: shoal calls it --total-steps, "
            "e.g. --total-steps 1000.",
        ),
        (["--n-envs", "4"], "shoal calls it --num-envs, e.g. --num-envs 4."),
        (
            ["--lr", "3e-4"],
            "--lr is not an option of `shoal train`; it is an agent setting: "
            "--agent.learning-rate 3e-4.",
        ),
        (["--gamma=0.9"], "it is an agent setting: --agent.gamma 0.9."),
        (["--totl-steps", "5"], "did you mean --total-steps?"),
    ],
)
def test_peer_flags_name_the_shoal_flag(capsys, argv, message):
    err = _fails(capsys, "train", "ppo", "--env", "CartPole-v1", *argv)
    assert f"shoal: error: unrecognized arguments: {' '.join(argv)}. " in err
    assert message in err and "See `shoal train --help`." in err


def test_env_id_names_env(capsys):
    err = _fails(capsys, "train", "ppo", "--env-id", "CartPole-v1")
    assert "--env-id is not an option of `shoal train`: shoal calls it --env, e.g. --env " in err


def test_without_an_algorithm_lr_still_names_the_agent_flag(capsys, tmp_path):
    err = _fails(capsys, "train", "--config", str(tmp_path / "c.yaml"), "--lr=1")
    assert "agent settings are --agent.FIELD flags, e.g. --agent.learning-rate 1." in err


def test_a_stray_argument_and_other_commands(capsys, tmp_path):
    err = _fails(capsys, "train", "ppo", "--env", "CartPole-v1", "extra")
    assert "`shoal train` takes no argument 'extra'." in err
    err = _fails(capsys, "report", str(tmp_path), "--ouput", "r.md")
    assert "--ouput is not an option of `shoal report`; did you mean --output?" in err
