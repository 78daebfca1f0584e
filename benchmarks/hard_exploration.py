"""Hard exploration: Agent57 against R2D2 with the same budget, over seeds.

The default problem is shoal's snake maze (`shoal.envs.maze:snake_maze`): four corridors of
nine cells, the only reward 38 steps from the start, 100 steps per episode, so a uniformly
random policy is rewarded with probability 8.3e-8 per episode. Each run is one
`shoal train ALGO --env ENV --seed S` process with the algorithm's preset for that env
(presets/agent57.yaml and presets/r2d2.yaml give both the same total_steps, num_envs, discount
horizon and evaluation schedule), one run at a time. For each it prints the final greedy
evaluation of the weights at the end of the budget (10 episodes; Agent57 plays the mixture its
evaluator's bandit rates best; 1.0 is the optimum), the best of the periodic greedy evaluations
(`eval_every` in the presets, 5 episodes each; the policy of the first best is kept in
RUN_DIR/best.pt) with its step, the agent step of the first metrics.jsonl row whose training
return (the mean of the last episodes) is above 0, i.e. when the reward was first collected in
training, to within the log interval ('never' if no row), and the wall time. The issue's target:
Agent57's final evaluation >= 0.9 on every seed, R2D2's 0.

    python benchmarks/hard_exploration.py [--seeds 3] [--env shoal.envs.maze:snake_maze]
        [--algos agent57 r2d2] [any `shoal train` flag, e.g. --total-steps 50000, for every run]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOLVED = 0.9


def train(algo: str, env: str, seed: int, runs_dir: Path, extra: list[str]) -> dict:
    name = f"{algo}-seed{seed}"
    command = [sys.executable, "-m", "shoal", "train", algo, "--env", env, "--seed", str(seed)]
    command += ["--runs-dir", str(runs_dir), "--run-name", name, "--progress", "false"]
    command += ["--tensorboard", "false", *extra]
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.time() - started
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:], "seconds": seconds}
    run_dir = runs_dir / name
    summary = json.loads((run_dir / "summary.json").read_text())
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    rewarded = [row["env_steps"] for row in rows if (row.get("return_mean") or 0.0) > 0.0]
    # The last row holds the final evaluation; the others' eval_* keys are the periodic ones.
    periodic = [
        (row["eval_return_mean"], row["env_steps"])
        for row in rows[:-1]
        if "eval_return_mean" in row
    ]
    best = max(periodic, key=lambda pair: (pair[0], -pair[1]), default=(None, None))
    return {
        "steps": summary["env_steps"],
        "first": rewarded[0] if rewarded else None,
        "eval": summary["evaluation"]["mean_return"],
        "best": best,
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 to N-1")
    parser.add_argument("--env", default="shoal.envs.maze:snake_maze")
    parser.add_argument("--algos", nargs="+", default=["agent57", "r2d2"])
    parser.add_argument("--runs-dir", type=Path, default=None)
    args, extra = parser.parse_known_args()  # the rest goes to `shoal train`, e.g. --total-steps
    runs_dir = args.runs_dir or Path(tempfile.mkdtemp(prefix="shoal-exploration-"))
    print(f"{args.env}: each algorithm's preset, seeds 0 to {args.seeds - 1}; runs in {runs_dir}")
    print(
        f"{'algo':<8} {'seed':>4} {'steps':>8} {'first reward':>13} {'final eval':>10} "
        f"{'best periodic eval':>19} {'s':>6}"
    )
    solved: dict[str, int] = {}
    for algo in args.algos:
        solved[algo] = 0
        for seed in range(args.seeds):
            r = train(algo, args.env, seed, runs_dir, extra)
            if "error" in r:
                print(f"{algo:<8} {seed:>4} failed: {r['error']}", flush=True)
                continue
            solved[algo] += r["eval"] >= SOLVED
            first = "never" if r["first"] is None else f"{r['first']:,}"
            value, step = r["best"]
            best = "-" if value is None else f"{value:.2f} at {step:,}"
            print(
                f"{algo:<8} {seed:>4} {r['steps']:>8,} {first:>13} {r['eval']:>10.2f} "
                f"{best:>19} {r['seconds']:>6.0f}",
                flush=True,
            )
    for algo, count in solved.items():
        print(f"{algo}: final greedy evaluation >= {SOLVED:g} on {count} of {args.seeds} seeds")


if __name__ == "__main__":
    main()
