"""benchmarks/alphazero_connect_four.py end to end at toy sizes: train, score each checkpoint
against MCTS and random, report, plot, and a second call that neither trains nor scores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "alphazero_connect_four.py"

pytestmark = pytest.mark.integration  # half a minute of self-play and the matches


def test_the_connect_four_benchmark_trains_scores_and_draws_the_curve(tmp_path):
    command = [sys.executable, str(SCRIPT), "--minutes", "0.25", "--checkpoint-steps", "512"]
    command += ["--games", "2", "--mcts-rollouts", "8", "--random-games", "2"]
    command += ["--runs-dir", str(tmp_path), "--out-dir", str(tmp_path)]
    command += ["--num-envs", "4", "--agent.num-simulations", "4", "--agent.batch-size", "16"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    run_dir = tmp_path / "c4-alphazero-s0"
    cache = json.loads((run_dir / "evaluations" / "alphazero_connect_four.json").read_text())
    checkpoints = list((run_dir / "checkpoints").glob("step-*.pt"))
    assert len(cache) == len(checkpoints) >= 2  # periodic ones and the final one, each once
    for point in cache.values():
        assert sum(point["mcts"].values()) == 2 and sum(point["random"].values()) == 2
        assert point["minutes"] > 0 and point["env_steps"] > 0
    assert (tmp_path / "alphazero_connect_four_s0.png").stat().st_size > 10_000
    table = (tmp_path / "alphazero_connect_four_s0.md").read_text()
    assert table.count("\n| ") == len(cache) + 2  # header, rule and a row per checkpoint
    # Again: the budget is used, so nothing trains, and no checkpoint is scored twice.
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "[evaluate]" not in again.stdout
    assert (
        json.loads((run_dir / "evaluations" / "alphazero_connect_four.json").read_text()) == cache
    )
