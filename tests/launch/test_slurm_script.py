"""The generated batch script under a real Slurm (the session's one-machine cluster), with
stand-ins for `ray` and `shoal` that record what they were given: fast, so it runs in CI, and
independent of how long Ray takes to start on a loaded machine (tests/launch/test_slurm_real.py
runs the real ones)."""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

import pytest

from shoal.cli import main

from .slurm_cluster import SlurmCluster

pytestmark = pytest.mark.timeout(180)

# `ray start --block` says it started and stays up until stopped (as the real one does);
# `ray status` shows one live node; `shoal` records its arguments and RAY_ADDRESS.
FAKE_RAY = """#!/bin/bash
echo "$SLURM_JOB_ID ray $*" >> "{record}"
if [ "$1" = status ]; then printf 'Active:\\n 1 node_0123\\n'; exit 0; fi
echo "Ray runtime started."
trap 'echo "$SLURM_JOB_ID ray stopped" >> "{record}"; exit 0' TERM
while true; do sleep 0.2; done
"""
FAKE_SHOAL = """#!/bin/bash
echo "$SLURM_JOB_ID shoal $* RAY_ADDRESS=$RAY_ADDRESS" >> "{record}"
sleep 3
exit {code}
"""


def _tools(root: Path, code: int) -> tuple[Path, Path]:
    bin_dir = root / "bin"
    bin_dir.mkdir()
    record = root / "calls.txt"
    for name, text in (("ray", FAKE_RAY), ("shoal", FAKE_SHOAL)):
        tool = bin_dir / name
        tool.write_text(text.format(record=record, code=code))
        tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return bin_dir, record


def _run_jobs(slurm: SlurmCluster, root: Path, names: list[str], code: int = 0) -> dict:
    bin_dir, record = _tools(root, code)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    jobs = {}
    for name in names:
        out = root / name
        train = ["shoal", "train", "ppo", "--env", "CartPole-v1", "--run-name", name]
        assert main(["launch", "slurm", "--out", str(out), "--name", name, "--", *train]) == 0
        jobs[name] = (slurm.sbatch(out / "shoal.sbatch", out, env), out)
    deadline = time.monotonic() + 120
    while any(slurm.state(job) for job, _ in jobs.values()):
        assert time.monotonic() < deadline, slurm.logs()
        time.sleep(0.5)
    calls = record.read_text().splitlines()
    return {
        name: {
            "calls": [c.split(" ", 1)[1] for c in calls if c.split(" ")[0] == str(job)],
            "log": (out / f"{name}-{job}.out").read_text(),
            "job": job,
        }
        for name, (job, out) in jobs.items()
    }


def test_two_jobs_at_once_get_their_own_ports_temp_dirs_and_address(slurm, tmp_path):
    runs = _run_jobs(slurm, tmp_path, ["jobs-a", "jobs-b"])
    seen = {}
    for name, run in runs.items():
        head = next(c for c in run["calls"] if c.startswith("ray start --head"))
        port = re.search(r"--port=(\d+)", head).group(1)
        temp = re.search(r"--temp-dir=(\S+)", head).group(1)
        assert f"--node-manager-port={int(port) + 1}" in head and "--block" in head
        train = next(c for c in run["calls"] if c.startswith("shoal train"))
        address = re.search(r"--address (\S+)", train).group(1)
        assert address.endswith(f":{port}") and train.endswith(f"RAY_ADDRESS={address}")
        assert "--runtime ray" in train and f"--run-name {name}" in train
        assert "ray stopped" in run["calls"], "the job's EXIT trap stops its own Ray"
        assert "shoal: training exited with 0" in run["log"]
        assert not Path(temp).exists()
        seen[name] = (port, temp)
    (a_port, a_temp), (b_port, b_temp) = seen.values()
    assert a_port != b_port and a_temp != b_temp


def test_the_jobs_exit_code_is_the_trainings(slurm, tmp_path):
    run = _run_jobs(slurm, tmp_path, ["jobs-fail"], code=3)["jobs-fail"]
    assert "shoal: training exited with 3" in run["log"]
    assert slurm.exit_code(run["job"]) == 3  # what Slurm records for the job
