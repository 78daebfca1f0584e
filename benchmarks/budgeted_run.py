"""A `shoal train` run under a training-time budget that outlasts sessions, for the campaign's
benchmarks (`atari_learning.py`, `alphazero_connect_four.py`).

The run is `--resume auto --max-time BUDGET`: `--max-time` counts training time across resumes
(each checkpoint holds it), so the same call in a later session goes on where the last stopped
and returns at once for a run whose budget is used. Every checkpoint is kept for scoring.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def train_with_budget(
    algo: str,
    env: str,
    seed: int,
    runs_dir: Path,
    name: str,
    *,
    minutes: float,
    total_steps: int,
    checkpoint_steps: int,
    extra: list[str],
) -> None:
    """Start or continue run `runs_dir/name`; returns once its budget is used. Its output goes
    to `runs_dir/name.log`; a failed run ends the benchmark with the log's path."""
    command = [sys.executable, "-m", "shoal", "train", algo, "--env", env]
    command += ["--seed", str(seed), "--runs-dir", str(runs_dir), "--run-name", name]
    command += ["--resume", "auto", "--max-time", str(minutes * 60)]
    command += ["--total-steps", str(total_steps), "--progress", "false"]
    command += ["--checkpoint-interval", str(checkpoint_steps)]
    command += ["--keep-checkpoints", "100000", "--eval-episodes", "0", *extra]
    print(f"[train] {' '.join(command[2:])}", flush=True)
    log = runs_dir / f"{name}.log"
    with log.open("a") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise SystemExit(f"[train] {name} exited {done.returncode}; see {log}")
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    print(f"[train] {name}: {lines[-1] if lines else ''}", flush=True)
