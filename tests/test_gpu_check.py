"""benchmarks/gpu_check.py runs end to end on the CPU (`--cpu`), at toy sizes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu_check.py"


pytestmark = pytest.mark.integration  # a minute or more of training and scoring


def test_gpu_check_runs_every_part_on_the_cpu(tmp_path):
    out = tmp_path / "figures.json"
    command = [sys.executable, str(SCRIPT), "--cpu", "--seconds", "25", "--update-seconds", "0.1"]
    command += [
        "--batch-size",
        "2",
        "--actors",
        "1",
        "--num-envs",
        "2",
        "--log-interval",
        "80",
        "--out",
        str(out),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    impala = report["impala_pong"]["cpu"]
    assert impala["frames_per_second"] > 0 and impala["frames"] == 4 * impala["env_steps"]
    assert impala["updates_per_second"] > 0
    assert 0 < impala["batch_fill"] <= 1
    for algo in ("r2d2", "agent57"):
        assert report[algo]["batch_size"] == 2 and report[algo]["sequence_length"] == 120
        assert report[algo]["cpu"]["updates"] >= 3
    assert "IMPALA Pong frames/s" in done.stdout
