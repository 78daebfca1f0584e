"""Does every agent learn CartPole-v1 with its defaults, whatever else the machine is doing?

Runs `shoal train ALGO --env CartPole-v1` (the preset's budget, no stop condition) for each
algorithm, inline and with `--runtime ray --actors 2`, for the given seeds, optionally while
another process keeps one core busy (`--busy`), and prints each run's greedy evaluation (10
episodes; 500 is the best) and wall time. The target of issue 12: every evaluation >= 475.

    python benchmarks/cartpole_defaults.py [--algos ppo impala dqn apex r2d2]
        [--runtimes inline ray] [--seeds 0] [--busy]
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
BUSY = "while True: pass"


def train(algo: str, runtime: str, seed: int, runs_dir: str) -> dict:
    command = [sys.executable, "-m", "shoal", "train", algo, "--env", "CartPole-v1"]
    command += ["--seed", str(seed), "--runs-dir", runs_dir, "--progress", "false"]
    command += ["--tensorboard", "false"]
    if runtime == "ray":
        command += ["--runtime", "ray", "--actors", "2"]
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.time() - started
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:], "seconds": seconds}
    run_dir = next(line.split(": ", 1)[1] for line in done.stdout.splitlines() if "run dir" in line)
    summary = json.loads((Path(run_dir) / "summary.json").read_text())
    return {
        "steps": summary["env_steps"],
        "train": summary["train_return_mean"],
        "eval": summary["evaluation"]["mean_return"],
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=["ppo", "impala", "dqn", "apex", "r2d2"])
    parser.add_argument("--runtimes", nargs="+", default=["inline", "ray"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--busy", action="store_true", help="keep one core busy meanwhile")
    args = parser.parse_args()
    busy = subprocess.Popen([sys.executable, "-c", BUSY]) if args.busy else None
    print(f"CartPole-v1 with each agent's defaults{', one core kept busy' if busy else ''}")
    print(f"{'algo':<8} {'runtime':<7} {'seed':>4} {'steps':>8} {'train':>7} {'eval':>7} {'s':>6}")
    failures = 0
    try:
        with tempfile.TemporaryDirectory() as runs_dir:
            for algo in args.algos:
                for runtime in args.runtimes:
                    for seed in args.seeds:
                        r = train(algo, runtime, seed, runs_dir)
                        if "error" in r:
                            failures += 1
                            print(f"{algo:<8} {runtime:<7} {seed:>4} failed: {r['error']}")
                            continue
                        failures += r["eval"] < TARGET
                        print(
                            f"{algo:<8} {runtime:<7} {seed:>4} {r['steps']:>8} "
                            f"{r['train']:>7.1f} {r['eval']:>7.1f} {r['seconds']:>6.0f}",
                            flush=True,
                        )
    finally:
        if busy is not None:
            busy.kill()
    print(f"{failures} run(s) below {TARGET:g}")


if __name__ == "__main__":
    main()
