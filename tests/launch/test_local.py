"""`shoal launch local` without a real engine: the command and mounts it builds, the engine it
picks, its one-paragraph errors, and the Ctrl-C it forwards, against a fake `podman` on PATH.
(tests/launch/test_local_container.py builds and runs the real image.)"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shoal.cli import main
from shoal.errors import ConfigError
from shoal.launch import local

ROOT = Path(__file__).parents[2]


def test_the_runs_dir_is_mounted_at_the_same_absolute_path(tmp_path):
    container = local.container_for(
        ["shoal", "train", "ppo", "--env", "CartPole-v1", "--runs-dir", "out/runs"], tmp_path
    )
    runs = str(tmp_path / "out" / "runs")
    assert container.runs_dir == runs
    assert container.mounts == ((runs, False),)
    assert container.args[container.args.index("--runs-dir") + 1] == runs
    default = local.container_for(["shoal", "train", "ppo", "--env", "CartPole-v1"], tmp_path)
    assert default.runs_dir == str(tmp_path / "runs")  # shoal train's own default, on the host
    assert default.args[-2:] == ("--runs-dir", str(tmp_path / "runs"))


def test_a_config_file_is_mounted_read_only_and_a_bucket_not_at_all(tmp_path):
    (tmp_path / "run.yaml").write_text("algo: ppo\nenv: CartPole-v1\n")
    container = local.container_for(
        ["shoal", "train", "--config", "run.yaml", "--runs-dir=s3://b/runs"], tmp_path
    )
    assert container.mounts == ((str(tmp_path / "run.yaml"), True),)
    assert "--runs-dir=s3://b/runs" in container.args
    with pytest.raises(ConfigError, match=r"--config nope\.yaml: no such file"):
        local.container_for(["shoal", "train", "--config", "nope.yaml"], tmp_path)


def test_a_command_that_is_not_shoal_train_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="runs a training command given after `--`"):
        local.container_for(["python", "train.py"], tmp_path)


def test_podman_gets_this_machines_runtime_limits_and_a_build_only_ca_bundle(tmp_path):
    options = local.LocalOptions(base="localhost/base:1", ca_bundle="/etc/hosts")
    command = local.build_command("podman", tmp_path, options, "wheels/torch.whl")
    assert command[6:8] == ["--build-arg", "BASE=localhost/base:1"]
    assert "TORCH=wheels/torch.whl" in command
    assert "nofile=20000:20000" in command and "nproc=32768:32768" in command
    assert "/etc/hosts:/etc/ssl/certs/ca-certificates.crt:ro" in command
    container = local.container_for(["shoal", "train", "ppo", "--env", "CartPole-v1"], tmp_path)
    run = local.run_command("podman", "shoal:local", "name", container)
    runs = str(tmp_path / "runs")
    assert f"{runs}:{runs}" in run and "nofile=20000:20000" in run
    assert "/etc/hosts" not in " ".join(run)  # the bundle stays out of the running container
    assert run[run.index("shoal:local") + 1 :][:3] == ["shoal", "train", "ppo"]


def _fake_bin(tmp_path: Path, name: str, script: str) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/bash\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return folder


def test_no_engine_is_one_paragraph_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(_fake_bin(tmp_path, "docker", "echo 'no daemon' >&2; exit 1")))
    code = main(["launch", "local", "--", "shoal", "train", "ppo", "--env", "CartPole-v1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "docker: `docker info` fails (no daemon)" in err
    assert "podman: not installed" in err and "apt-get install podman" in err


def test_docker_without_its_daemon_gives_way_to_podman(tmp_path, monkeypatch):
    _fake_bin(tmp_path, "docker", "exit 1")
    monkeypatch.setenv("PATH", str(_fake_bin(tmp_path, "podman", "exit 0")))
    assert local.find_engine(None) == "podman"


def test_a_failed_build_says_why_in_one_paragraph(tmp_path, monkeypatch, capsys):
    fake = _fake_bin(tmp_path, "podman", 'echo "Error: pulling python:3.11 failed"; exit 125\n')
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    argv = ["launch", "local", "--engine", "podman", "--"]
    code = main([*argv, "shoal", "train", "ppo", "--env", "CartPole-v1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "Building the image with podman failed (exit code 125)" in err
    assert "pulling python:3.11 failed" in err and "--base" in err


def test_options_of_other_targets_are_refused(capsys):
    assert main(["launch", "k8s", "--no-build", "--", "shoal", "train", "ppo"]) == 2
    assert "--no-build is an option of local" in capsys.readouterr().err
    argv = ["launch", "local", "--submit", "--", "shoal", "train", "ppo", "--env", "CartPole-v1"]
    assert main(argv) == 2
    assert "leave out --submit" in capsys.readouterr().err


# A fake podman: `run` starts a process that records the signal it gets and exits as shoal does
# (130 for SIGINT, 143 for SIGTERM); `kill --signal SIG NAME` signals it.
FAKE_PODMAN = """
state=$(dirname "$0")/..
case "$1" in
  run)
    python3 -c '
import signal, sys, time
def stop(signum, frame):
    open(sys.argv[1], "w").write(signal.Signals(signum).name)
    sys.exit(128 + signum)
signal.signal(signal.SIGINT, stop); signal.signal(signal.SIGTERM, stop)
print("training", flush=True)
time.sleep(60)
' "$state/got" &
    echo $! > "$state/pid"; wait $! ;;
  kill) kill -s "$3" "$(cat "$state/pid")" ;;
esac
"""


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_and_sigterm_reach_the_container(tmp_path, signum, code):
    fake = _fake_bin(tmp_path, "podman", FAKE_PODMAN)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT / "src")}
    argv = ["launch", "local", "--engine", "podman", "--no-build", "--"]
    argv += ["shoal", "train", "ppo", "--env", "CartPole-v1", "--runs-dir", str(tmp_path / "r")]
    process = subprocess.Popen(
        [sys.executable, "-m", "shoal", *argv], env=env, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("training"):
            break
    time.sleep(0.3)
    process.send_signal(signum)
    process.communicate(timeout=30)
    assert process.returncode == code
    assert (tmp_path / "got").read_text() == signal.Signals(signum).name
    assert (tmp_path / "r").is_dir()  # made on the host before the container started


def test_a_cluster_puts_the_learner_on_the_head_and_the_actors_on_the_workers(tmp_path):
    train = ["shoal", "train", "impala", "--env", "CartPole-v1", "--actors", "4"]
    container, sizes = local.cluster_args([*train, "--runs-dir", str(tmp_path)], nodes=3)
    args = list(container.args)
    assert args[args.index("--runtime") + 1] == "ray"
    assert args[args.index("--learner-resources") + 1] == "shoal_head=1"
    assert args[args.index("--actor-resources") + 1] == "shoal_worker=1"
    assert sizes == {"head_cpus": 2, "worker_cpus": 2, "worker_slots": 2}  # 4 actors, 2 workers
    own = local.cluster_args([*train, "--actor-resources", "big=1"], nodes=2)[0].args
    assert "shoal_worker=1" not in own and "big=1" in own  # the command's own placement stays


def test_a_cluster_needs_ray(capsys):
    argv = ["launch", "local", "--nodes", "3", "--"]
    assert main([*argv, "shoal", "train", "impala", "--env", "CartPole-v1", "--runtime", "inline"])
    assert "Pass --runtime ray" in capsys.readouterr().err


# A fake engine for the cluster's supervisor: `ps` lists the head only (the worker has exited);
# `run` fails while the killed worker's name is still taken (the first two tries), then
# starts it; every call is logged.
FAKE_ENGINE = """
state=$(dirname "$0")/..
echo "$1" >> "$state/calls"
case "$1" in
  ps) echo head ;;
  rm) ;;
  run)
    tries=$(($(cat "$state/tries" 2>/dev/null || echo 0) + 1)); echo $tries > "$state/tries"
    if [ "$tries" -le 2 ]; then
      echo 'the container name "worker1" is already in use' >&2; exit 125
    fi ;;
esac
"""


def test_a_worker_that_fails_to_start_again_is_tried_again_and_only_a_start_counts(
    tmp_path, capsys
):
    engine = _fake_bin(tmp_path, "engine", FAKE_ENGINE) / "engine"
    workers = {"worker1": [str(engine), "run", "worker1"]}
    supervisor = local._Supervisor(
        str(engine), tmp_path / "runs", "head", workers, dict(os.environ)
    )
    for _ in range(3):
        supervisor.revive()
    assert (tmp_path / "tries").read_text().strip() == "3"
    assert supervisor.restarts["worker1"] == 1 and supervisor.failed_starts["worker1"] == 0
    calls = (tmp_path / "calls").read_text().split()
    assert calls.count("rm") == 3  # the lingering container is removed before each start
    assert capsys.readouterr().out.count("worker1 exited; starting it again") == 1


def test_a_worker_that_never_starts_again_is_given_up_on_once_with_the_engines_words(
    tmp_path, capsys, monkeypatch
):
    engine = _fake_bin(tmp_path, "engine", FAKE_ENGINE) / "engine"
    monkeypatch.setattr(local._Supervisor, "START_TRIES", 2)
    workers = {"worker1": [str(engine), "run", "worker1"]}
    supervisor = local._Supervisor(
        str(engine), tmp_path / "runs", "head", workers, dict(os.environ)
    )
    for _ in range(4):
        supervisor.revive()
    assert (tmp_path / "tries").read_text().strip() == "2"  # no tries after giving up
    out = capsys.readouterr().out
    assert "worker1 did not start again in 2 tries" in out and "already in use" in out
    assert supervisor.restarts["worker1"] == 0
