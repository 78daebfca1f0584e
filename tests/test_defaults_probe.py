"""benchmarks/defaults_probe.py end to end at a toy size: train with extra flags, evaluate
through `predict`, append the record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "defaults_probe.py"


def test_a_probe_trains_with_its_flags_and_appends_its_evaluation(tmp_path: Path) -> None:
    results = tmp_path / "probes.jsonl"
    command = [sys.executable, str(SCRIPT), "--label", "short", "--seeds", "3"]
    command += ["--results", str(results), "--"]
    command += ["--total-steps", "1200", "--agent.min-replay-size", "500", "--agent.gamma", "0.98"]
    command += ["--eval-every", "600", "--eval-every-episodes", "2"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (record,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert record["label"] == "short" and record["seed"] == 3 and "error" not in record
    assert record["extra"][-6:-4] == ["--agent.gamma", "0.98"]
    # The in-run greedy evaluations, every 600 steps, then the final one.
    steps = [step for step, _ in record["curve"]]
    assert steps == sorted(steps) and len(steps) >= 2 and steps[-1] >= 1200
    assert all(8 <= mean <= 500 for _, mean in record["curve"])
    # 20 greedy episodes of CartPole after 1,200 steps: each lasts 8 to 500 steps.
    assert 8 <= record["eval_min"] <= record["eval"] <= 500
    assert record["ratio"] is not None and record["ratio"] > 0
    assert json.loads(done.stdout.splitlines()[-1]) == record
