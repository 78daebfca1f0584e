"""Rainbow on CartPole-v1 beside shoal's DQN, from the same run: greedy evaluation after the
presets' 100k steps, and the first logged step where the last-20 training mean reached 475.

Target: Rainbow's greedy evaluation (10 episodes) >= 475 within 100k steps on every seed.

    python benchmarks/rainbow_cartpole.py [--algos rainbow dqn] [--seeds 0 1 2] [--parallel 2]
        [--total-steps 100000] [--runtime inline|ray] [--extra --agent.noisy false ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 475.0


def launch(algo: str, seed: int, args: argparse.Namespace, runs_dir: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "shoal", "train", algo, "--env", "CartPole-v1"]
    command += ["--seed", str(seed), "--runs-dir", str(runs_dir), "--run-name", f"{algo}{seed}"]
    command += ["--total-steps", str(args.total_steps), "--progress", "false"]
    command += ["--tensorboard", "false", "--eval-episodes", "10"]
    if args.runtime == "ray":
        command += ["--runtime", "ray", "--actors", "2"]
    return subprocess.Popen(
        command + args.extra, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def first_solved(run_dir: Path) -> int | None:
    """The first logged env step at which the last-20 training mean was >= 475."""
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if (row.get("return_mean") or 0.0) >= TARGET:
            return int(row["env_steps"])
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=["rainbow", "dqn"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--total-steps", type=int, default=100_000)
    parser.add_argument("--runtime", choices=["inline", "ray"], default="inline")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[])
    args = parser.parse_args()
    runs_dir = Path(tempfile.mkdtemp(prefix="shoal-rainbow-cartpole-"))
    print(f"CartPole-v1, {args.total_steps:,} steps, {args.runtime}; runs in {runs_dir}")
    jobs = [(algo, seed) for algo in args.algos for seed in args.seeds]
    pending, running, results = list(jobs), {}, {}
    while pending or running:
        while pending and len(running) < args.parallel:
            job = pending.pop(0)
            running[job] = (launch(*job, args, runs_dir), time.time())
        time.sleep(1)
        for job, (process, started) in list(running.items()):
            if process.poll() is None:
                continue
            del running[job]
            algo, seed = job
            if process.returncode != 0:
                results[job] = None
                print(f"{algo} seed {seed} failed: {process.stderr.read()[-1000:]}", flush=True)
                continue
            run_dir = runs_dir / f"{algo}{seed}"
            summary = json.loads((run_dir / "summary.json").read_text())
            results[job] = summary["evaluation"]["mean_return"]
            print(
                f"{algo:<8} seed {seed}: {summary['env_steps']:>7,} steps, last-20 mean "
                f"{summary['train_return_mean']:6.1f}, first >= 475 at "
                f"{first_solved(run_dir) or '-'}, greedy evaluation {results[job]:6.1f}, "
                f"{time.time() - started:4.0f} s",
                flush=True,
            )
    for algo in args.algos:
        values = [results[(algo, seed)] for seed in args.seeds]
        shown = ", ".join("failed" if v is None else f"{v:.1f}" for v in values)
        met = all(v is not None and v >= TARGET for v in values)
        print(f"{algo}: greedy evaluations {shown} ({'all' if met else 'not all'} >= {TARGET:g})")


if __name__ == "__main__":
    main()
