"""`shoal launch`: its mistakes exit 2 with one paragraph and write nothing; --submit runs the
target's tool."""

from __future__ import annotations

import os
import stat

import pytest
import yaml

from shoal.cli import main

TRAIN = ["shoal", "train", "ppo", "--env", "CartPole-v1", "--runtime", "ray"]


def _fails(capsys, tmp_path, *argv: str) -> str:
    out = tmp_path / "out"
    code = main(["launch", *argv[:1], "--out", str(out), *argv[1:]])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert not out.exists()
    return err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["slurm"], "Give the training command after `--`"),
        (["slurm", "--", "python", "train.py"], "shoal launch runs a training command"),
        (
            ["slurm", "--", *TRAIN, "--address", "10.0.0.1:6379"],
            "Leave --address 10.0.0.1:6379 out",
        ),
        (["slurm", "--", *TRAIN[:-1], "inline"], "--runtime inline would not use it"),
        (
            ["slurm", "--", "shoal", "train", "ppx", "--env", "CartPole-v1"],
            "Unknown algorithm 'ppx'",
        ),
        (
            ["k8s", "--nodes", "2", "--", *TRAIN],
            "--nodes is an option of slurm and local, not of k8s",
        ),
        (["slurm", "--image", "x", "--", *TRAIN], "--image is an option of k8s and gcp"),
        (["gcp", "--", *TRAIN], "needs --project PROJECT_ID"),
        (
            ["aws", "--machine", "actor=c5.xlarge", "--", *TRAIN],
            "--machine 'actor=c5.xlarge' must be ROLE=VALUE",
        ),
        (["vertex", "--machine", "head=n1", "--", *TRAIN], "ROLE one of learner, actors"),
        (
            ["slurm", "--extras", "ray,atary", "--", *TRAIN],
            "--extras 'atary' is not one of shoal's extras",
        ),
        (["slurm", "--nodes", "0", "--", *TRAIN], "--nodes must be >= 1"),
        (["slurm", "--name", "9lives", "--", *TRAIN], "must start with a letter"),
        (["slurm", "--", *TRAIN, "--profile", "/nonexistent.yaml"], "does not exist"),
        (["slurm", "--", *TRAIN, "--actors", "0"], "actors must be > 0"),
        (
            ["k8s", "--node-memory-gb", "4", "--", *TRAIN, "--actor-memory-mb", "4000"],
            "One actors process reserves 4000 MB, more than Ray offers on a node of 4 GB",
        ),
    ],
)
def test_launch_mistakes_exit_2_and_write_nothing(capsys, tmp_path, argv, message):
    assert message in _fails(capsys, tmp_path, *argv)


def test_a_profile_and_a_flag_for_the_same_setting_conflict(capsys, tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("actors: {count: 4}\n")
    err = _fails(capsys, tmp_path, "k8s", "--", *TRAIN, "--profile", str(profile), "--actors", "2")
    assert "--actors 2 and --profile" in err


def test_the_command_is_kept_and_the_profile_written_out(capsys, tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("actors: {count: 4, cpus: 0.5}\n")
    out = tmp_path / "job"
    argv = ["shoal", "train", "ppo", "--env", "CartPole-v1", "--profile", str(profile)]
    assert (
        main(["launch", "k8s", "--out", str(out), "--", *argv, "--agent.learning-rate", "1e-3"])
        == 0
    )
    entry = yaml.safe_load((out / "rayjob.yaml").read_text())["spec"]["entrypoint"]
    assert entry == (
        "shoal train ppo --env CartPole-v1 --agent.learning-rate 1e-3 --runtime ray --actors 4 "
        "--actor-cpus 0.5 --address auto"
    )
    assert str(profile) not in entry  # the job needs no file from this machine


def _fake_tool(tmp_path, name: str, exit_code: int = 0) -> str:
    """A `name` on PATH that records its arguments; returns the record's path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    record = tmp_path / f"{name}.args"
    tool = bin_dir / name
    tool.write_text(
        f'#!/bin/sh\necho "$@" >> {record}\necho "{name} says hello"\n'
        f'[ {exit_code} -eq 0 ] || echo "{name} broke" >&2\nexit {exit_code}\n'
    )
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return str(record)


@pytest.mark.parametrize(
    ("target", "options", "tool", "expected"),
    [
        ("slurm", [], "sbatch", ["{out}/shoal.sbatch"]),
        ("k8s", [], "kubectl", ["apply -f {out}/ray-auth-secret.yaml -f {out}/rayjob.yaml"]),
        (
            "vertex",
            # A cloud's machines pull the image: one in a registry (tests/launch/test_push.py).
            ["--region", "europe-west4", "--image", "gcr.io/proj/shoal:1"],
            "gcloud",
            [
                "ai custom-jobs create --region=europe-west4 --display-name=shoal-ppo "
                "--config={out}/vertex_job.yaml"
            ],
        ),
        (
            "aws",
            ["--image", "gcr.io/proj/shoal:1"],
            "ray",
            [
                "up -y {out}/cluster.yaml",
                "exec {out}/cluster.yaml shoal train ppo --env CartPole-v1 --runtime ray "
                "--address auto",
            ],
        ),
    ],
)
def test_submit_runs_the_targets_tool(
    capsys, tmp_path, monkeypatch, target, options, tool, expected
):
    record = _fake_tool(tmp_path, tool)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "out"
    assert main(["launch", target, "--out", str(out), "--submit", *options, "--", *TRAIN]) == 0
    with open(record) as f:
        assert f.read().splitlines() == [line.format(out=out) for line in expected]
    assert f"{tool} says hello" in capsys.readouterr().out


def test_submit_without_the_tool_is_a_clear_error(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    err = _fails(capsys, tmp_path, "slurm", "--submit", "--", *TRAIN)
    assert "--submit runs `sbatch`, which is not installed here" in err


def test_a_failing_tool_is_reported_with_its_message(capsys, tmp_path, monkeypatch):
    _fake_tool(tmp_path, "kubectl", exit_code=1)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    code = main(["launch", "k8s", "--out", str(tmp_path / "o"), "--submit", "--", *TRAIN])
    err = capsys.readouterr().err
    assert code == 2 and "failed with exit code 1: kubectl broke" in err
    assert (tmp_path / "o" / "rayjob.yaml").exists()  # written before the tool ran


def test_out_that_is_a_file_is_refused(capsys, tmp_path):
    path = tmp_path / "file"
    path.write_text("")
    code = main(["launch", "slurm", "--out", str(path), "--", *TRAIN])
    assert code == 2 and "is a file" in capsys.readouterr().err


def test_launch_help_lists_the_targets(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["launch", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert all(t in out for t in ("slurm", "k8s", "gcp", "aws", "vertex"))


@pytest.mark.parametrize("target", ["k8s", "vertex"])
def test_a_run_directory_on_a_pods_disk_is_warned_about_in_one_line(capsys, tmp_path, target):
    extra = ["--project", "p"] if target == "vertex" else []
    assert main(["launch", target, "--out", str(tmp_path / "a"), *extra, "--", *TRAIN]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "shoal: warning: the run directory (--runs-dir runs)" in err
    argv = ["launch", target, "--out", str(tmp_path / "b"), *extra, "--", *TRAIN]
    assert main([*argv, "--runs-dir", "gs://bucket/runs"]) == 0
    assert "warning" not in capsys.readouterr().err
