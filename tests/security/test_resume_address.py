"""Issue 35, item 4: `--resume` of a downloaded run directory does not join the Ray cluster its
`config.yaml` records (a cluster someone else runs can run code in the driver) unless the user
names the cluster with `--address` or passes `--trust-run`."""

from __future__ import annotations

import socket

import pytest
import yaml

import shoal
from shoal.cli import main


@pytest.fixture
def run_dir(quiet_run):
    """A finished inline run, made here, with nothing to import."""
    return shoal.train("ppo", "CartPole-v1", total_steps=256, run=quiet_run).run_dir


def _record_address(run_dir, address):
    """What a run directory from elsewhere may say: run on ray, at the cluster it names."""
    path = run_dir / "config.yaml"
    config = yaml.safe_load(path.read_text())
    config["run"].update(runtime="ray", address=address)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def test_resume_does_not_join_a_recorded_address_without_trust(capsys, run_dir):
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    try:
        _record_address(run_dir, f"127.0.0.1:{listener.getsockname()[1]}")
        argv = ["train", "--resume", str(run_dir), "--total-steps", "512"]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.count("\n") == 1, err
        assert "records the Ray cluster address" in err
        assert "--trust-run" in err and "--address" in err
        with pytest.raises(TimeoutError):  # nothing connected to the recorded address
            listener.accept()
    finally:
        listener.close()


def test_resume_joins_the_address_the_user_names_or_trusts(capsys, run_dir):
    _record_address(run_dir, "127.0.0.1:1")  # nothing listens there: a refusal, quickly
    base = ["train", "--resume", str(run_dir), "--total-steps", "512"]
    assert main([*base, "--trust-run"]) == 2
    assert "Nothing answers at --address 127.0.0.1:1" in capsys.readouterr().err
    assert main([*base, "--address", "127.0.0.1:2"]) == 2
    assert "Nothing answers at --address 127.0.0.1:2" in capsys.readouterr().err
