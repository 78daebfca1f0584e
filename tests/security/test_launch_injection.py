"""Issue 35, items 3 and 9: `shoal launch` renders only validated values (no newline or control
character reaches a script or YAML), from a command `shoal train` would accept."""

from __future__ import annotations

import pytest

from shoal.cli import main

TRAIN = ["shoal", "train", "ppo", "--env", "CartPole-v1"]
NEWLINE = "x\nhead_setup_commands: [touch /tmp/pwned]"


def _refused(capsys, tmp_path, target, options, train=TRAIN):
    out = tmp_path / "out"
    code = main(["launch", target, "--out", str(out), *options, "--", *train])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert not out.exists()  # nothing half-written
    return err


@pytest.mark.parametrize(
    ("target", "options"),
    [
        ("slurm", ["--partition", "cpu\n#SBATCH --uid=0"]),
        ("slurm", ["--time", "01:00:00\ncurl evil | sh"]),
        ("slurm", ["--account", "lab\rrm -rf ~"]),
        ("slurm", ["--container", "shoal.sif\nid"]),
        ("slurm", ["--setup", "true\nid"]),
        ("slurm", ["--name", "job\nid"]),
        ("k8s", ["--image", "shoal:1\nkind: Pod"]),
        ("k8s", ["--namespace", "rl\nx: y"]),
        ("gcp", ["--project", "p\nhead_setup_commands: [id]"]),
        ("gcp", ["--project", "my-project", "--region", "us\u2028x: y"]),
        ("aws", ["--machine", "actors=c5.xlarge\nx: y"]),
        ("vertex", ["--project", "p", "--image", "gcr.io/p/shoal:1\x1b[2J"]),
    ],
)
def test_a_control_character_in_an_option_is_refused(capsys, tmp_path, target, options):
    err = _refused(capsys, tmp_path, target, options)
    assert "control character" in err


@pytest.mark.parametrize("target", ["slurm", "k8s", "gcp", "aws", "vertex"])
def test_a_control_character_in_the_training_command_is_refused(capsys, tmp_path, target):
    options = ["--project", "my-project"] if target in ("gcp", "vertex") else []
    err = _refused(capsys, tmp_path, target, options, [*TRAIN, "--run-name", NEWLINE])
    assert "control character" in err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--time", "forever"], "--time 'forever' is not a Slurm time limit"),
        (["--partition", "cpu;id"], "is not a Slurm partition name"),
        (["--account", "$(id)"], "is not a Slurm account name"),
    ],
)
def test_a_slurm_value_of_the_wrong_form_is_refused(capsys, tmp_path, options, message):
    assert message in _refused(capsys, tmp_path, "slurm", options)


@pytest.mark.parametrize(
    ("train", "message"),
    [
        (["shoal", "train", "ppo", "--env", "CartPol-v1"], "Unknown environment id 'CartPol-v1'"),
        ([*TRAIN, "--agent.learning-rat", "0.1"], "Did you mean 'learning_rate'"),
        ([*TRAIN, "--agent.learning-rate", "fast"], "learning_rate"),
        ([*TRAIN, "--env.frame-skipp", "4"], "frame_skip"),
    ],
)
def test_launch_refuses_a_command_shoal_train_would_refuse(capsys, tmp_path, train, message):
    assert message in _refused(capsys, tmp_path, "slurm", [], train)


def test_valid_values_are_still_written(capsys, tmp_path):
    out = tmp_path / "out"
    options = ["--time", "2-00:00:00", "--partition", "cpu,gpu", "--account", "my-lab.1"]
    assert main(["launch", "slurm", "--out", str(out), *options, "--", *TRAIN]) == 0
    script = (out / "shoal.sbatch").read_text()
    assert "#SBATCH --time=2-00:00:00" in script and "#SBATCH --partition=cpu,gpu" in script
