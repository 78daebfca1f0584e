"""Shared runner of the MinAtar benchmarks: an algorithm's mean return against frames, over seeds.

`minatar_ppo.py` and `minatar_impala.py` call `main(algo)`. MinAtar has no frame skip, so frames
are agent steps. Each seed is one `shoal train ALGO --env minatar:breakout` process with the
algorithm's preset; `--parallel` runs that many at once (each uses about one core). The MinAtar
paper (Young & Tian 2019) reports about 17.5 for its actor-critic and about 10 for its DQN on
Breakout at 5M frames.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 20.0


def launch(
    algo: str, env: str, seed: int, total_steps: int, runs_dir: Path, extra: list[str]
) -> subprocess.Popen:
    # A seed's process: the algorithm's preset for `env`, with a 20-episode evaluation at the end.
    command = [sys.executable, "-m", "shoal", "train", algo, "--env", env, "--seed", str(seed)]
    command += ["--total-steps", str(total_steps), "--runs-dir", str(runs_dir)]
    command += ["--run-name", f"seed{seed}", "--progress", "false", "--eval-episodes", "20"]
    return subprocess.Popen(
        command + extra, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def updates_per_second(run_dir: Path) -> float | None:
    """Learner gradient steps per second of wall time over the run (replay agents)."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    rows = [row for row in rows if "gradient_steps" in row]
    if len(rows) < 2:
        return None
    first, last = rows[0], rows[-1]
    seconds = max(last["time"] - first["time"], 1e-9)
    return (last["gradient_steps"] - first["gradient_steps"]) / seconds


def curve(run_dir: Path) -> list[tuple[int, float]]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [(row["frames"], row["return_mean"]) for row in rows if row["return_mean"] is not None]


def value_at(points: list[tuple[int, float]], frames: int) -> float | None:
    """The logged mean return (last 20 episodes) at the last row at or before `frames`."""
    before = [ret for f, ret in points if f <= frames]
    return before[-1] if before else None


def parse_args(description: str, total_steps: int = 5_000_000) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--env", default="minatar:breakout")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--total-steps", type=int, default=total_steps)
    parser.add_argument("--runs-dir", type=Path, default=None)
    return parser.parse_args()


def main(algo: str, description: str) -> None:
    args = parse_args(description)
    run_seeds(algo, args.env, args.seeds, args.parallel, args.total_steps, args.runs_dir, TARGET)


def run_seeds(
    algo: str,
    env: str,
    seeds: int,
    parallel: int,
    total_steps: int,
    runs_dir: Path | None,
    target: float,
    extra: list[str] | None = None,
) -> float:
    """Train `seeds` seeds of `algo` on `env`, print the curves; returns the end-of-run mean."""
    runs_dir = runs_dir or Path(tempfile.mkdtemp(prefix="shoal-minatar-"))
    print(
        f"{algo.upper()} on {env}, {total_steps:,} frames, seeds 0 to {seeds - 1}, "
        f"{parallel} at a time; runs in {runs_dir}",
        flush=True,
    )
    started = time.time()
    pending, running = list(range(seeds)), {}
    while pending or running:
        while pending and len(running) < parallel:
            seed = pending.pop(0)
            running[seed] = launch(algo, env, seed, total_steps, runs_dir, extra or [])
        time.sleep(2)
        for seed, process in list(running.items()):
            if process.poll() is not None:
                del running[seed]
                if process.returncode != 0:
                    sys.exit(f"seed {seed} failed:\n{process.stderr.read()[-2000:]}")
                summary = json.loads((runs_dir / f"seed{seed}" / "summary.json").read_text())
                print(
                    f"seed {seed} done after {time.time() - started:.0f} s: last-20 mean "
                    f"{summary['train_return_mean']:.1f}, deterministic evaluation "
                    f"{summary['evaluation']['mean_return']:.1f}",
                    flush=True,
                )

    curves = [curve(runs_dir / f"seed{seed}") for seed in range(seeds)]
    checkpoints = (100_000, 250_000, 500_000, 1_000_000, 2_000_000, 3_000_000, 4_000_000)
    marks = [m for m in (*checkpoints, 5_000_000) if m < total_steps] + [total_steps]
    print(
        f"\n{'frames':>10}"
        + "".join(f"{'seed ' + str(s):>10}" for s in range(seeds))
        + f"{'mean':>10}"
    )
    for mark in marks:
        values = [value_at(c, mark) for c in curves]
        known = [v for v in values if v is not None]
        mean = sum(known) / len(known) if known else float("nan")
        print(
            f"{mark:>10,}"
            + "".join(f"{v:>10.1f}" if v is not None else f"{'-':>10}" for v in values)
            + f"{mean:>10.1f}"
        )
    summaries = [
        json.loads((runs_dir / f"seed{s}" / "summary.json").read_text()) for s in range(seeds)
    ]
    ends = [s["train_return_mean"] for s in summaries]
    evals = [s["evaluation"]["mean_return"] for s in summaries]
    frames = summaries[0]["env_steps"]
    for label, values, note in (
        ("end", ends, f"last 20 training episodes at {frames:,} frames"),
        ("eval", evals, "deterministic evaluation, 20 episodes, final checkpoint"),
    ):
        row = "".join(f"{v:>10.1f}" for v in values)
        print(f"{label:>10}{row}{sum(values) / len(values):>10.1f}   ({note})")
    for name, values in (("training mean at the end", ends), ("evaluation mean", evals)):
        value = sum(values) / len(values)
        verdict = "meets" if value >= target else "misses"
        print(f"{name}: {value:.1f} ({verdict} the target of {target:g})")
    rates = [updates_per_second(runs_dir / f"seed{s}") for s in range(seeds)]
    if all(rate is not None for rate in rates):
        print("learner updates/s: " + ", ".join(f"{rate:.1f}" for rate in rates))
    print(f"wall time {time.time() - started:.0f} s")
    return sum(ends) / len(ends)
