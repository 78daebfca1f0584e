"""A real Slurm on this machine (Debian's slurm-wlm and munge, daemons started by the test): the
batch script `shoal launch slurm` writes is submitted with sbatch, starts Ray and finishes a
CartPole run; two such jobs at once each get a Ray of their own and both finish."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

from shoal.cli import main

from .slurm_cluster import SlurmCluster

JOB_TIMEOUT_S = 900
pytestmark = [pytest.mark.distributed, pytest.mark.slow, pytest.mark.timeout(JOB_TIMEOUT_S + 120)]


def _submit(slurm: SlurmCluster, root: Path, name: str) -> tuple[int, Path]:
    out = root / name
    command = [
        *("shoal", "train", "ppo", "--env", "CartPole-v1", "--runtime", "ray"),
        *("--actors", "1", "--num-envs", "8", "--total-steps", "8000", "--eval-episodes", "2"),
        *("--progress", "false", "--runs-dir", str(root / "runs"), "--run-name", name),
    ]
    assert main(["launch", "slurm", "--out", str(out), "--name", name, "--", *command]) == 0
    # The job runs the submitting environment's shoal and ray, as a user's would.
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return slurm.sbatch(out / "shoal.sbatch", out, env), out


def _logs(jobs: dict[str, tuple[int, Path]]) -> str:
    return "\n".join(
        f"{p.name}: {p.read_text()[-2000:]}" for _, out in jobs.values() for p in out.glob("*.out")
    )


def test_two_slurm_jobs_on_one_node_each_run_on_a_ray_of_their_own(slurm, tmp_path):
    started = time.monotonic()
    jobs = {name: _submit(slurm, tmp_path, name) for name in ("joba", "jobb")}
    ended: dict[str, float] = {}
    while len(ended) < len(jobs):
        assert time.monotonic() - started < JOB_TIMEOUT_S, _logs(jobs) + slurm.logs()
        for name, (job, _) in jobs.items():
            if name not in ended and not slurm.state(job):
                ended[name] = time.monotonic() - started
        time.sleep(1)
    addresses, nodes = {}, {}
    for name, (job, out) in jobs.items():
        log = (out / f"{name}-{job}.out").read_text()
        assert "shoal: training exited with 0" in log, log[-3000:]
        addresses[name] = re.search(r"Ray head (\S+), temp dir (\S+)", log).groups()
        up = re.search(r"Ray is up on 1 node\(s\) after (\d+) s", log)
        run_dir = tmp_path / "runs" / name
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["env_steps"] >= 8000 and summary["stop_reason"] == "total_steps"
        placement = json.loads((run_dir / "ray_actors.json").read_text())
        nodes[name] = {role["node_id"] for role in placement.values()}
        print(
            f"{name} (job {job}): Ray up after {up.group(1)} s, job done {ended[name]:.0f} s "
            f"after submission; {addresses[name]}"
        )
        assert not Path(addresses[name][1]).exists()  # the job removed its Ray's files
    (a_address, a_tmp), (b_address, b_tmp) = addresses.values()
    assert a_address != b_address and a_tmp != b_tmp
    assert nodes["joba"].isdisjoint(nodes["jobb"])  # two Ray clusters, not one shared
