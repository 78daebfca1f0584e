"""Time to solve CartPole-v1 with PPO, from process start, for shoal and Stable-Baselines3.

"Solved" is the mean return of the last 20 training episodes reaching 475. Each seed runs in a
fresh process, timed from just before the process starts (imports included), so the figure is
what a user waits. shoal runs `shoal train ppo --env CartPole-v1` with its preset; SB3 runs
rl-zoo's tuned CartPole settings with torch limited to one thread. SB3 is run when a Python with
stable_baselines3 is found: --sb3-python, then peers/sb3/bin/python (made by
../shared/peers/setup_sb3.sh peers/sb3), then this interpreter.

    python benchmarks/cartpole_ppo.py [--seeds 5] [--sb3-python PATH] [--compare-with REF]

With --compare-with REF (a git commit), shoal at REF runs too, seed by seed beside this one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from baseline import checkout

ROOT = Path(__file__).resolve().parent.parent
TARGET = 475.0

SB3_SCRIPT = r"""
import sys, time, json
import numpy as np
import torch
torch.set_num_threads(1)
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

seed, target = int(sys.argv[1]), float(sys.argv[2])

def linear(start):
    return lambda progress_remaining: progress_remaining * start

class Solved(BaseCallback):
    def _on_step(self):
        episodes = list(self.model.ep_info_buffer)[-20:]
        if len(episodes) == 20 and np.mean([e["r"] for e in episodes]) >= target:
            print(json.dumps({"solved_unix_time": time.time(), "steps": self.num_timesteps}))
            return False
        return True

started = time.time()
env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98,
            n_epochs=20, ent_coef=0.0, learning_rate=linear(1e-3), clip_range=linear(0.2),
            seed=seed, verbose=0, device="cpu")
model.learn(100_000, callback=Solved())
print(json.dumps({"done_unix_time": time.time(), "steps": model.num_timesteps,
                  "train_seconds": time.time() - started}))
"""


def run_shoal(seed: int, runs_dir: Path, env: dict | None = None, tag: str = "") -> dict:
    shoal = [sys.executable, "-m", "shoal"]
    command = [
        *shoal,
        "train",
        "ppo",
        "--env",
        "CartPole-v1",
        "--seed",
        str(seed),
        "--stop-at-return",
        str(TARGET),
        "--runs-dir",
        str(runs_dir),
        "--run-name",
        f"seed{seed}{tag}",
        "--progress",
        "false",
        "--eval-episodes",
        "0",
    ]
    started = time.time()
    subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    summary = json.loads((runs_dir / f"seed{seed}{tag}" / "summary.json").read_text())
    solved = summary["target_reached_unix_time"]
    return {
        "seconds": None if solved is None else solved - started,
        "steps": summary["target_reached_step"],
        "steps_per_second": summary["env_steps"] / summary["wall_time"],
    }


def run_sb3(python: str, seed: int) -> dict:
    started = time.time()
    out = subprocess.run(
        [python, "-c", SB3_SCRIPT, str(seed), str(TARGET)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    solved = next((r for r in rows if "solved_unix_time" in r), None)
    done = rows[-1]
    return {
        "seconds": None if solved is None else solved["solved_unix_time"] - started,
        "steps": None if solved is None else solved["steps"],
        "steps_per_second": done["steps"] / done["train_seconds"],
    }


def find_sb3(explicit: str | None) -> str | None:
    candidates = [explicit] if explicit else [str(ROOT / "peers/sb3/bin/python"), sys.executable]
    for python in candidates:
        if python and Path(python).exists():
            probe = subprocess.run([python, "-c", "import stable_baselines3"], capture_output=True)
            if probe.returncode == 0:
                return python
    return None


def summarise(name: str, results: list[dict]) -> float | None:
    times = [r["seconds"] for r in results if r["seconds"] is not None]
    steps = [r["steps"] for r in results if r["steps"] is not None]
    sps = [r["steps_per_second"] for r in results]
    unsolved = len(results) - len(times)
    if not times:
        print(f"{name:<6} solved no seed")
        return None
    print(
        f"{name:<6} time to solve: median {statistics.median(times):5.2f} s "
        f"(range {min(times):.2f} to {max(times):.2f}); steps to solve: median "
        f"{statistics.median(steps):,.0f} (range {min(steps):,} to {max(steps):,}); "
        f"env steps/s: median {statistics.median(sps):,.0f}"
        + (f"; {unsolved} seed(s) unsolved" if unsolved else "")
    )
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--sb3-python", help="a Python with stable-baselines3 installed")
    parser.add_argument("--compare-with", metavar="REF", help="also run shoal at this commit")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        baseline = stack.enter_context(checkout(args.compare_with)) if args.compare_with else None
        _run(args, baseline)


def _run(args: argparse.Namespace, baseline: dict | None) -> None:
    sb3 = find_sb3(args.sb3_python)
    runs_dir = Path(tempfile.mkdtemp(prefix="shoal-bench-"))
    print(
        f"CartPole-v1 PPO, time from process start to mean return >= {TARGET:g} over the last "
        f"20 episodes; seeds 0 to {args.seeds - 1}; {'SB3: ' + sb3 if sb3 else 'SB3 not found'}"
    )
    shoal_results, sb3_results, base_results = [], [], []
    try:
        for seed in range(args.seeds):
            shoal_results.append(run_shoal(seed, runs_dir))
            line = f"seed {seed}: shoal {_fmt(shoal_results[-1])}"
            if baseline is not None:
                base_results.append(run_shoal(seed, runs_dir, baseline, "-baseline"))
                line += f" | {args.compare_with} {_fmt(base_results[-1])}"
            if sb3:
                sb3_results.append(run_sb3(sb3, seed))
                line += f" | SB3 {_fmt(sb3_results[-1])}"
            print(line, flush=True)
    finally:
        shutil.rmtree(runs_dir, ignore_errors=True)
    ours = summarise("shoal", shoal_results)
    if baseline is not None:
        before = summarise(args.compare_with[:6], base_results)
        if ours and before:
            ratio = ours / before
            print(f"this commit's median time to solve is {ratio:.2f}x {args.compare_with}'s")
    if sb3:
        theirs = summarise("SB3", sb3_results)
        if ours and theirs:
            print(
                f"shoal's median time to solve is {ours / theirs:.2f}x SB3's (target: at most 0.5x)"
            )


def _fmt(result: dict) -> str:
    if result["seconds"] is None:
        return "not solved"
    return f"{result['seconds']:.2f} s, {result['steps']:,} steps"


if __name__ == "__main__":
    main()
