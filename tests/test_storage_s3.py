"""Run directories in S3, against moto's S3 server on 127.0.0.1 (no other traffic: the
credentials are fixed and the instance-metadata lookup is off): a job killed mid-run is
continued by the same command from the bucket, every checkpoint the bucket lists loads, and the
result is evaluated from its URL; an unreachable endpoint, missing credentials and a missing
bucket each stop the command with one exit-2 paragraph."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time

import pytest

moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")
pytest.importorskip("s3fs")

import shoal  # noqa: E402
from shoal.cli import main  # noqa: E402
from shoal.run import storage  # noqa: E402
from shoal.run.checkpoints import load_checkpoint  # noqa: E402

# Credentials and settings of the local S3; no config file or instance metadata is consulted.
OFFLINE = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_MAX_ATTEMPTS": "2",
}


@pytest.fixture(scope="module")
def s3_endpoint():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3(s3_endpoint, monkeypatch, tmp_path):
    """The environment of a job that writes to the local S3, with a bucket made for it."""
    env = {**OFFLINE, "AWS_ENDPOINT_URL": s3_endpoint, storage.STAGING_ENV: str(tmp_path)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    bucket = f"runs-{os.getpid()}-{time.monotonic_ns() % 10**9}"
    client = boto3.client("s3")
    client.create_bucket(Bucket=bucket)
    return bucket, client, {**os.environ, **env}


def _checkpoints(client, bucket: str, prefix: str) -> list[str]:
    listed = client.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/checkpoints/")
    return sorted(o["Key"] for o in listed.get("Contents", []) if o["Key"].endswith(".pt"))


@pytest.mark.integration
def test_a_killed_job_goes_on_from_the_bucket_and_is_evaluated_from_its_url(s3, tmp_path, capsys):
    bucket, client, env = s3
    url = f"s3://{bucket}/runs/job"
    argv = ["train", "ppo", "--env", "CartPole-v1", "--runs-dir", f"s3://{bucket}/runs"]
    argv += ["--run-name", "job", "--resume", "auto", "--checkpoint-interval", "1024"]
    argv += ["--log-interval", "512", "--progress", "false", "--eval-episodes", "0"]
    job = subprocess.Popen(
        [sys.executable, "-m", "shoal", *argv, "--total-steps", "1000000"],
        # A killed job cannot remove its staging folder: it gets one of its own here.
        env={**env, storage.STAGING_ENV: str(tmp_path / "killed")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 120
        while not _checkpoints(client, bucket, "runs/job"):
            assert job.poll() is None, job.communicate()
            assert time.time() < deadline, "timed out"
            time.sleep(0.1)
        job.send_signal(signal.SIGKILL)  # no chance to upload anything more
        job.wait(timeout=10)
    finally:
        job.kill()
    listed = _checkpoints(client, bucket, "runs/job")
    for key in listed:  # whatever the kill cut, what the bucket lists as checkpoints loads
        path = tmp_path / key.rsplit("/", 1)[-1]
        client.download_file(bucket, key, str(path))
        saved = load_checkpoint(path)
    target = saved["env_steps"] + 1024

    # The requeued job: the same command (with the budget it now has).
    result = shoal.train(
        "ppo",
        "CartPole-v1",
        total_steps=target,
        resume="auto",
        run={
            "runs_dir": f"s3://{bucket}/runs",
            "run_name": "job",
            "progress": False,
            "checkpoint_interval": 1024,
            "log_interval": 512,
            "eval_episodes": 2,
        },
    )
    assert result.run_dir == url and result.env_steps == target
    assert result.summary["stop_reason"] == "total_steps"
    capsys.readouterr()
    assert main(["eval", url, "--episodes", "2"]) == 0  # shoal.load of the URL, then 2 episodes
    assert "mean return" in capsys.readouterr().out
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]]
    assert "runs/job/summary.json" in keys and not [k for k in keys if ".tmp-" in k]
    assert list(tmp_path.glob("shoal-staging-*")) == []


def _fails(capsys, runs_dir: str) -> str:
    argv = ["train", "ppo", "--env", "CartPole-v1", "--progress", "false", "--runs-dir", runs_dir]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    return err


def test_an_unreachable_endpoint_a_missing_bucket_and_missing_credentials_are_exit_2(
    s3, capsys, monkeypatch, tmp_path
):
    bucket, _, env = s3
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    err = _fails(capsys, f"s3://{bucket}/runs")
    assert "cannot be reached or read (EndpointConnectionError" in err
    monkeypatch.setenv("AWS_ENDPOINT_URL", env["AWS_ENDPOINT_URL"])
    err = _fails(capsys, "s3://no-such-bucket/runs")
    assert "the bucket 'no-such-bucket' does not exist" in err
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    err = _fails(capsys, f"s3://{bucket}/runs")
    assert "NoCredentialsError" in err and "AWS_ACCESS_KEY_ID" in err
    assert list(tmp_path.glob("shoal-staging-*")) == []
