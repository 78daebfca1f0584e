"""The launch tests' fixture: run `shoal launch` for one of the cases in cases.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from shoal.cli import main

from .cases import CASES, TOKEN, target_of
from .slurm_cluster import SlurmCluster, missing


@pytest.fixture
def launched(tmp_path, capsys, monkeypatch):
    """launched(case) -> the folder `shoal launch` wrote for that case, with the Ray token
    pinned (RAY_AUTH_TOKEN), so that what is written is the same every time."""
    monkeypatch.setenv("RAY_AUTH_TOKEN", TOKEN)

    def run(case: str, *extra: str) -> Path:
        options, train = CASES[case]
        out = tmp_path / case
        code = main(
            [
                "launch",
                target_of(case),
                "--out",
                str(out),
                "--extras",
                "ray,atari",
                *options,
                *extra,
                "--",
                *train,
            ]
        )
        assert code == 0, capsys.readouterr().err
        return out

    return run


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A one-machine Slurm (munged, slurmctld, slurmd) for the session, or a skip saying why."""
    reason = missing()
    if reason:
        pytest.skip(f"no Slurm here: {reason}")
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
    except (RuntimeError, subprocess.CalledProcessError, OSError) as err:
        cluster.stop()
        pytest.skip(f"slurmctld or slurmd could not start on this machine: {err}")
    yield cluster
    cluster.stop()
