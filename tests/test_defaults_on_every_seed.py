"""Defaults that learn on every seed (issue 37): the worst cell `benchmarks/defaults_matrix.py`
found, run as a user runs it and judged as a user judges it.

Ape-X's CartPole-v1 preset on Ray with two actors, seed 1, beside a busy process, evaluated ~290
through `shoal.load(run).predict` before its preset was fixed (see presets/apex.yaml), and 220
in CI after, until prioritised replay's importance weights were normalised per batch, and 438.8
in CI after that, until the preset's gamma became 0.98 (Q-values near 0.99's bound of 100 let
the solved greedy policy degrade; on ray each run differs, so the fix was checked on six). The run
is the command line's (its own local Ray), the evaluation a loop over a fresh Gymnasium env, not
the runtime's evaluator."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.distributed, pytest.mark.timeout(2400)]

THRESHOLD = 475.0


def _matrix_module() -> ModuleType:
    """benchmarks/defaults_matrix.py, whose `evaluate` (20 greedy episodes through `predict` on a
    fresh env) judges the run here as the matrix judges its cells."""
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "defaults_matrix.py"
    spec = importlib.util.spec_from_file_location("defaults_matrix", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_apex_defaults_solve_cartpole_on_ray_seed_1_beside_a_busy_process(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "shoal", "train", "apex", "--env", "CartPole-v1"]
    command += ["--seed", "1", "--runtime", "ray", "--actors", "2", "--runs-dir", str(tmp_path)]
    command += ["--run-name", "apex", "--progress", "false", "--tensorboard", "false"]
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=2200)
    finally:
        busy.kill()
        busy.wait()
    assert done.returncode == 0, done.stderr[-3000:]
    returns = _matrix_module().evaluate(tmp_path / "apex", "CartPole-v1")
    mean = sum(returns) / len(returns)
    assert mean >= THRESHOLD, f"greedy returns {returns} (mean {mean:.1f})"
