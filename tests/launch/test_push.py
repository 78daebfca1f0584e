"""`shoal launch k8s|gcp|aws|vertex --push REGISTRY`: the image built here and pushed, and the
job files naming the pushed image; `--submit` to a cloud refused without an image it can pull.
The engine here is a fake that records its calls (tests/launch/test_registry.py pushes to a
real registry)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from shoal.cli import main
from shoal.errors import ConfigError
from shoal.launch import push

TRAIN = ["--", "shoal", "train", "ppo", "--env", "CartPole-v1", "--runtime", "ray"]


def test_the_pushed_name_is_the_registry_and_the_images_name_and_tag():
    assert push.pushed_name("localhost:5000", "shoal:latest") == "localhost:5000/shoal:latest"
    assert (
        push.pushed_name("us-docker.pkg.dev/proj/repo/", "shoal:2")
        == "us-docker.pkg.dev/proj/repo/shoal:2"
    )
    # An --image that named a registry of its own is pushed by its name and tag.
    assert push.pushed_name("gcr.io/proj", "ghcr.io/me/shoal:1") == "gcr.io/proj/me/shoal:1"
    with pytest.raises(ConfigError, match="--push"):
        push.pushed_name("https://gcr.io/proj", "shoal:1")


@pytest.mark.parametrize(
    ("image", "named"),
    [
        ("shoal:latest", False),
        ("me/shoal:1", False),  # Docker Hub's user namespace: no registry host
        ("gcr.io/proj/shoal:1", True),
        ("localhost:5000/shoal", True),
        ("localhost/shoal", True),
    ],
)
def test_an_image_names_a_registry_by_dockers_rule(image, named):
    assert push.names_registry(image) is named


def test_submitting_to_a_cloud_needs_an_image_it_can_pull(tmp_path, capsys):
    for target in ("vertex", "gcp", "aws"):
        code = main(["launch", target, "--out", str(tmp_path / target), "--submit", *TRAIN])
        err = capsys.readouterr().err
        assert code == 2, target
        assert "--push REGISTRY" in err and "names no registry" in err
        assert not (tmp_path / target).exists()  # refused before anything was written


def test_build_options_without_push_are_refused(tmp_path, capsys):
    code = main(["launch", "vertex", "--out", str(tmp_path), "--base", "debian:12", *TRAIN])
    assert code == 2
    assert "--base set how the image is built" in capsys.readouterr().err
    assert main(["launch", "slurm", "--push", "localhost:5000", *TRAIN]) == 2
    assert "--push is an option of k8s and gcp and aws and vertex" in capsys.readouterr().err


# Records each call's arguments, one JSON list a line; `push` fails when FAIL_PUSH is set.
FAKE_ENGINE = """
python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >> "$(dirname "$0")/calls"
if [ "$1" = push ] && [ -n "${FAIL_PUSH:-}" ]; then echo "unauthorized: login" >&2; exit 1; fi
exit 0
"""


@pytest.fixture
def engine(tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "podman"
    fake.write_text("#!/bin/bash\n" + FAKE_ENGINE)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    return folder / "calls"


def _calls(path: Path) -> list[list[str]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_push_builds_and_pushes_and_the_job_names_the_pushed_image(tmp_path, engine):
    out = tmp_path / "job"
    argv = ["launch", "vertex", "--out", str(out), "--push", "localhost:5000", "--engine"]
    assert main([*argv, "podman", "--image", "shoal:7", *TRAIN]) == 0
    build, pushed = _calls(engine)
    assert build[0] == "build" and build[build.index("--tag") + 1] == "localhost:5000/shoal:7"
    assert pushed == ["push", "localhost:5000/shoal:7"]
    job = (out / "vertex_job.yaml").read_text()
    assert "localhost:5000/shoal:7" in job and "shoal:latest" not in job


def test_a_learner_on_a_gpu_gets_the_cuda_image(tmp_path, engine, monkeypatch):
    seen: list[str] = []
    real = push.local.images.dockerfile

    def dockerfile(extras, cuda):  # type: ignore[no-untyped-def]
        seen.append("cuda" if cuda else "cpu")
        return real(extras, cuda)

    monkeypatch.setattr(push.local.images, "dockerfile", dockerfile)
    argv = ["launch", "k8s", "--out", str(tmp_path / "job"), "--push", "localhost:5000"]
    assert main([*argv, *TRAIN, "--learner-gpus", "1"]) == 0
    assert seen[0] == "cuda"  # the image built (the job's Dockerfiles are written after)


def test_a_failed_push_is_one_paragraph_and_writes_no_job(tmp_path, engine, monkeypatch, capsys):
    monkeypatch.setenv("FAIL_PUSH", "1")
    out = tmp_path / "job"
    argv = ["launch", "gcp", "--out", str(out), "--project", "proj", "--push", "gcr.io/proj"]
    assert main([*argv, *TRAIN]) == 2
    err = capsys.readouterr().err
    assert "Pushing gcr.io/proj/shoal:latest with podman failed" in err
    assert "unauthorized: login" in err and "podman login gcr.io" in err
    assert not out.exists()
