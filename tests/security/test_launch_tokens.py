"""Issue 35 item 3: every cluster `shoal launch` writes starts Ray with token authentication,
as the Slurm script does, and the token reaches each node without being written into the job's
main file or a command line (Kubernetes, GCP, AWS) or printed."""

from __future__ import annotations

import stat

import pytest
import yaml

from shoal.cli import main

TRAIN = ["shoal", "train", "ppo", "--env", "CartPole-v1", "--runtime", "ray"]
OPTIONS = {"k8s": [], "gcp": ["--project", "p"], "aws": [], "vertex": []}
TOKEN = "a-token-of-this-test-0123456789"


def _launch(capsys, tmp_path, target: str) -> tuple:
    out = tmp_path / target
    code = main(["launch", target, "--out", str(out), *OPTIONS[target], "--", *TRAIN])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    return out, printed.out + printed.err


def _private(path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) == 0o600


def _auth_env(container: dict, secret: str) -> bool:
    env = {e["name"]: e for e in container.get("env", [])}
    return env.get("RAY_AUTH_MODE", {}).get("value") == "token" and env.get(
        "RAY_AUTH_TOKEN", {}
    ).get("valueFrom") == {"secretKeyRef": {"name": secret, "key": "auth_token"}}


def test_the_rayjob_reads_the_token_from_a_secret_in_every_pod(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_TOKEN", TOKEN)
    out, printed = _launch(capsys, tmp_path, "k8s")
    job = yaml.safe_load((out / "rayjob.yaml").read_text())
    secret_file = out / "ray-auth-secret.yaml"
    assert secret_file.exists(), sorted(p.name for p in out.iterdir())
    secret = yaml.safe_load(secret_file.read_text())
    assert secret["kind"] == "Secret" and secret["stringData"] == {"auth_token": TOKEN}
    name = secret["metadata"]["name"]
    spec = job["spec"]
    pods = [spec["rayClusterSpec"]["headGroupSpec"]["template"], spec["submitterPodTemplate"]]
    pods += [g["template"] for g in spec["rayClusterSpec"]["workerGroupSpecs"]]
    for pod in pods:
        assert _auth_env(pod["spec"]["containers"][0], name), pod
    assert TOKEN not in (out / "rayjob.yaml").read_text() and TOKEN not in printed
    assert _private(secret_file)


@pytest.mark.parametrize("target", ["gcp", "aws"])
def test_the_cluster_config_mounts_the_token_file_on_every_node(
    capsys, tmp_path, monkeypatch, target
):
    monkeypatch.setenv("RAY_AUTH_TOKEN", TOKEN)
    out, printed = _launch(capsys, tmp_path, target)
    text = (out / "cluster.yaml").read_text()
    config = yaml.safe_load(text)
    assert "--env RAY_AUTH_MODE=token" in config["docker"]["run_options"]
    token_file = config.get("file_mounts", {}).get("~/.ray/auth_token")
    assert token_file, config.get("file_mounts")
    with open(token_file) as f:
        assert f.read().strip() == TOKEN
    assert _private(out / "ray_auth_token")
    assert TOKEN not in text and TOKEN not in printed


def test_every_vertex_pool_runs_with_the_token(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_TOKEN", TOKEN)
    out, printed = _launch(capsys, tmp_path, "vertex")
    spec = yaml.safe_load((out / "vertex_job.yaml").read_text())
    for pool in spec["workerPoolSpecs"]:
        env = {e["name"]: e["value"] for e in pool["containerSpec"].get("env", [])}
        assert env == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": TOKEN}
    assert _private(out / "vertex_job.yaml") and TOKEN not in printed


def test_without_ray_auth_token_each_launch_makes_a_new_random_one(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    tokens = []
    for n in range(2):
        out, _ = _launch(capsys, tmp_path / str(n), "k8s")
        secret = yaml.safe_load((out / "ray-auth-secret.yaml").read_text())
        tokens.append(secret["stringData"]["auth_token"])
    assert tokens[0] != tokens[1]
    assert all(len(t) == 64 and int(t, 16) >= 0 for t in tokens)  # 32 random bytes, hex


@pytest.mark.parametrize("bad", ["short", "two words and enough", "line\nbreak-0123456789"])
def test_a_token_unfit_for_the_files_is_refused(capsys, tmp_path, monkeypatch, bad):
    monkeypatch.setenv("RAY_AUTH_TOKEN", bad)
    out = tmp_path / "out"
    code = main(["launch", "k8s", "--out", str(out), "--", *TRAIN])
    err = capsys.readouterr().err
    assert code == 2 and "RAY_AUTH_TOKEN" in err and "Traceback" not in err
    assert not out.exists()


def test_a_link_planted_as_the_token_file_is_not_written_through(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_TOKEN", TOKEN)
    out = tmp_path / "aws"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("untouched")
    (out / "ray_auth_token").symlink_to(elsewhere)
    _launch(capsys, tmp_path, "aws")
    assert elsewhere.read_text() == "untouched"
    assert not (out / "ray_auth_token").is_symlink() and _private(out / "ray_auth_token")
