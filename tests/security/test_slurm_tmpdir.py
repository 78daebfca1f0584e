"""Issue 35, item 3: the Slurm script runs Ray only in a `/tmp/shoal-ray-<jobid>` folder of the
job's own user, never in one another user made first (job ids are predictable). The generated
script is run as a batch job would run it, with stand-ins for `ray` and `shoal`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shoal.cli import main

FAKE_RAY = """#!/bin/bash
echo "ray $* (temp dir mode $(stat -c %a "$RAY_TMPDIR"))" >> "{record}"
if [ "$1" = status ]; then printf 'Active:\\n 1 node_0123\\n'; exit 0; fi
echo "Ray runtime started."
trap 'exit 0' TERM
while true; do sleep 0.2; done
"""
FAKE_SHOAL = """#!/bin/bash
echo "shoal $*" >> "{record}"
"""


def _run_script(tmp_path: Path, job_id: str) -> tuple[subprocess.CompletedProcess, str]:
    out = tmp_path / "job"
    train = ["shoal", "train", "ppo", "--env", "CartPole-v1"]
    assert main(["launch", "slurm", "--out", str(out), "--", *train]) == 0
    bin_dir, record = tmp_path / "bin", tmp_path / "calls.txt"
    bin_dir.mkdir()
    for name, text in (("ray", FAKE_RAY), ("shoal", FAKE_SHOAL)):
        (bin_dir / name).write_text(text.format(record=record))
        (bin_dir / name).chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "SLURM_JOB_ID": job_id,
        "SLURM_CPUS_PER_TASK": "1",
        "SLURM_JOB_NUM_NODES": "1",
    }
    done = subprocess.run(
        ["bash", str(out / "shoal.sbatch")], env=env, capture_output=True, text=True, timeout=60
    )
    return done, record.read_text() if record.exists() else ""


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder of another user needs root")
def test_a_temp_dir_another_user_made_first_is_refused(tmp_path):
    job_id = f"9{os.getpid()}1"
    planted = Path(f"/tmp/shoal-ray-{job_id}")
    planted.mkdir(mode=0o777)
    try:
        os.chown(planted, 65534, 65534)  # nobody's: another user got there first
        done, calls = _run_script(tmp_path, job_id)
        assert done.returncode != 0
        assert "is not a folder of this user" in done.stderr, done.stderr
        assert "ray start" not in calls  # no Ray was started in it
    finally:
        shutil.rmtree(planted, ignore_errors=True)


def test_a_symlink_planted_as_the_temp_dir_is_refused(tmp_path):
    job_id = f"8{os.getpid()}1"
    planted = Path(f"/tmp/shoal-ray-{job_id}")
    target = tmp_path / "elsewhere"
    target.mkdir()
    planted.symlink_to(target)
    try:
        done, calls = _run_script(tmp_path, job_id)
        assert done.returncode != 0 and "is not a folder of this user" in done.stderr
        assert "ray start" not in calls
    finally:
        assert planted.is_symlink()  # left as it was
        planted.unlink()


def test_the_job_makes_its_own_temp_dir_private_and_runs(tmp_path):
    job_id = f"7{os.getpid()}1"
    done, calls = _run_script(tmp_path, job_id)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ray start --head" in calls and "shoal train ppo" in calls
    assert f"--temp-dir=/tmp/shoal-ray-{job_id}" in calls
    assert "(temp dir mode 700)" in calls
    assert not Path(f"/tmp/shoal-ray-{job_id}").exists()  # removed at the end
