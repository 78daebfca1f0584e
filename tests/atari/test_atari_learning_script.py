"""benchmarks/atari_learning.py end to end at toy sizes: train, resume, score, report, plot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "atari_learning.py"


pytestmark = pytest.mark.integration  # a minute or more of training and scoring


def test_the_atari_benchmark_trains_scores_checkpoints_and_draws_the_curve(tmp_path):
    command = [sys.executable, str(SCRIPT), "--env", "ALE/Pong-v5", "--algo", "impala"]
    command += ["--budget-minutes", "10", "--total-steps", "512", "--checkpoint-steps", "256"]
    command += ["--episodes", "1", "--runs-dir", str(tmp_path), "--out-dir", str(tmp_path)]
    command += ["--phases", "train", "evaluate", "report", "gymnasium"]
    command += ["--", "--num-envs", "4", "--agent.unroll-length", "16", "--agent.batch-size", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    run_dir = tmp_path / "pong-impala-s0"
    cache = json.loads((run_dir / "evaluations" / "atari_learning.json").read_text())
    assert len(cache) == 2  # a periodic checkpoint and the final one, each scored once
    for point in cache.values():
        assert -21 <= point["score"] <= 21 and point["episodes"] == 1
        assert 4 * 256 <= point["frames"] <= 4 * 1024 and point["minutes"] > 0
    assert len({point["frames"] for point in cache.values()}) == 2
    assert (tmp_path / "atari_pong.png").stat().st_size > 10_000
    table = (tmp_path / "atari_pong.md").read_text()
    assert "| shoal seed 0 | 2 |" in table
    assert "Gymnasium's wrappers" in done.stdout
    # Run again: the run has used its budget, so nothing trains and nothing is scored twice.
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "[evaluate]" not in again.stdout
    assert json.loads((run_dir / "evaluations" / "atari_learning.json").read_text()) == cache
