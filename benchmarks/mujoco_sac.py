"""SAC and TD3 on Gymnasium's MuJoCo tasks: shoal against Stable-Baselines3, in one run.

Both use rl-baselines3-zoo's settings for these tasks (SB3's defaults: one gradient step of 256
transitions per env step, 256x256 networks for SAC, 400x300 for TD3, lr 3e-4 / 1e-3, replay 1e6;
the zoo adds `learning_starts: 10000`, and TD3's Gaussian exploration noise of 0.1). shoal runs
`shoal train ALGO --env TASK` with its preset, which holds those settings. Each run is a fresh
process, timed from just before it starts to its end, including a 10-episode deterministic
evaluation on both sides; the two frameworks alternate run by run, so both see the same load.
Both run torch with the same intra-op thread count, `--threads` (1 by default: shoal's
`--torch-threads` default; SB3 gets `torch.set_num_threads` before it builds its model, since
torch's own default of every core made SB3 several times slower on the shared 2-core machine).
Each row prints the load average (1 min) before, between and after its two runs, and each run's
CPU seconds (user + system, the process and its children) beside its wall clock: on a busy
machine the wall clock measures the other work as much as the run, the CPU seconds much less.

    python benchmarks/mujoco_sac.py [--steps 100000] [--seeds 3] [--runs sac:HalfCheetah-v5,...]
        [--threads 1]

Quick check: `--steps 12000 --seeds 1 --runs sac:HalfCheetah-v5`; `--seed-list 1` runs one
seed alone (to keep each held command short).

SB3 runs from --sb3-python, else peers/sb3/bin/python (made by ../shared/peers/setup_sb3.sh
peers/sb3, then `peers/sb3/bin/pip install 'gymnasium[mujoco]'`). Needs `pip install
'shoal[mujoco]'` here.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cartpole_ppo import find_sb3

DEFAULT_RUNS = "sac:HalfCheetah-v5,sac:Hopper-v5,td3:HalfCheetah-v5"
EVAL_EPISODES = 10

SB3_SCRIPT = r"""
import json, sys, time
import gymnasium as gym
from stable_baselines3 import SAC, TD3
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.noise import NormalActionNoise
import numpy as np
import torch

algo, task, seed, steps, episodes, threads = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
torch.set_num_threads(threads)  # the same count as shoal's --torch-threads
env = gym.make(task)
if algo == "sac":
    model = SAC("MlpPolicy", env, learning_starts=10_000, seed=seed, device="cpu")
else:
    dim = env.action_space.shape[0]
    noise = NormalActionNoise(np.zeros(dim), 0.1 * np.ones(dim))
    model = TD3("MlpPolicy", env, learning_starts=10_000, action_noise=noise, seed=seed,
                device="cpu")
started = time.time()
model.learn(steps)
trained = time.time() - started
mean, _ = evaluate_policy(model, gym.make(task), n_eval_episodes=episodes, deterministic=True)
print(json.dumps({"return": float(mean), "train_seconds": trained}))
"""


def run_shoal(
    algo: str, task: str, seed: int, steps: int, runs_dir: Path, threads: int = 1
) -> dict:
    name = f"{algo}-{task}-{seed}"
    command = [sys.executable, "-m", "shoal", "train", algo, "--env", task, "--seed", str(seed)]
    command += ["--total-steps", str(steps), "--runs-dir", str(runs_dir), "--run-name", name]
    command += ["--progress", "false", "--eval-episodes", str(EVAL_EPISODES)]
    command += ["--torch-threads", str(threads)]
    started, cpu = time.time(), _children_cpu()
    subprocess.run(command, check=True, capture_output=True, text=True)
    seconds, cpu = time.time() - started, _children_cpu() - cpu
    summary = json.loads((runs_dir / name / "summary.json").read_text())
    return {"return": summary["evaluation"]["mean_return"], "seconds": seconds, "cpu": cpu}


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far: a run's own work,
    which other processes on a busy machine do not inflate the way they do its wall clock."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_sb3(python: str, algo: str, task: str, seed: int, steps: int, threads: int = 1) -> dict:
    started, cpu = time.time(), _children_cpu()
    args = [algo, task, str(seed), str(steps), str(EVAL_EPISODES), str(threads)]
    out = subprocess.run(
        [python, "-c", SB3_SCRIPT, *args], check=True, capture_output=True, text=True
    ).stdout
    seconds, cpu = time.time() - started, _children_cpu() - cpu
    row = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    return {"return": row["return"], "seconds": seconds, "cpu": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--seed-list", help="comma-separated seeds to run instead of 0..seeds-1 (e.g. 1,2)"
    )
    parser.add_argument("--runs", default=DEFAULT_RUNS, help="comma-separated algo:task pairs")
    parser.add_argument("--sb3-python", help="a Python with stable-baselines3 and MuJoCo")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch intra-op threads, both sides (default 1)"
    )
    args = parser.parse_args()
    sb3 = find_sb3(args.sb3_python)
    if sb3 is None:
        sys.exit("Stable-Baselines3 not found: bash ../shared/peers/setup_sb3.sh peers/sb3")
    pairs = [tuple(item.split(":")) for item in args.runs.split(",")]
    seeds = [int(x) for x in args.seed_list.split(",")] if args.seed_list else range(args.seeds)
    runs_dir = Path(tempfile.mkdtemp(prefix="shoal-mujoco-"))
    print(
        f"{args.steps:,} steps, seeds {', '.join(map(str, seeds))}, {EVAL_EPISODES}-episode "
        f"deterministic evaluation at the end; seconds from process start to end; torch "
        f"intra-op threads {args.threads} on both sides (shoal --torch-threads, SB3 "
        f"torch.set_num_threads); {os.cpu_count()} CPUs; SB3: {sb3}",
        flush=True,
    )
    table = []
    try:
        for algo, task in pairs:
            ours, theirs = [], []
            for seed in seeds:
                before = os.getloadavg()[0]
                ours.append(run_shoal(algo, task, seed, args.steps, runs_dir, args.threads))
                between = os.getloadavg()[0]
                theirs.append(run_sb3(sb3, algo, task, seed, args.steps, args.threads))
                after = os.getloadavg()[0]
                print(
                    f"{algo} {task} seed {seed}: shoal {_fmt(ours[-1])} | SB3 {_fmt(theirs[-1])} "
                    f"| load average {before:.2f} / {between:.2f} / {after:.2f}",
                    flush=True,
                )
            table.append((algo, task, ours, theirs))
    finally:
        shutil.rmtree(runs_dir, ignore_errors=True)
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        "\n| algo | task | shoal return | SB3 return | shoal s | SB3 s | time ratio "
        "| shoal CPU s | SB3 CPU s | CPU ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for algo, task, ours, theirs in table:
        ratio = _mean(ours, "seconds") / _mean(theirs, "seconds")
        cpu_ratio = _mean(ours, "cpu") / _mean(theirs, "cpu")
        print(
            f"| {algo} | {task} | {_spread(ours, 'return')} | {_spread(theirs, 'return')} "
            f"| {_mean(ours, 'seconds'):.0f} | {_mean(theirs, 'seconds'):.0f} | {ratio:.2f}x "
            f"| {_mean(ours, 'cpu'):.0f} | {_mean(theirs, 'cpu'):.0f} | {cpu_ratio:.2f}x |"
        )


def _mean(results: list[dict], key: str) -> float:
    return statistics.mean(r[key] for r in results)


def _spread(results: list[dict], key: str) -> str:
    values = [r[key] for r in results]
    if len(values) == 1:
        return f"{values[0]:.0f}"
    return f"{statistics.mean(values):.0f} ({min(values):.0f} to {max(values):.0f})"


def _fmt(result: dict) -> str:
    cpu = f" ({result['cpu']:.0f} CPU s)" if "cpu" in result else ""
    return f"return {result['return']:.1f} in {result['seconds']:.0f} s{cpu}"


if __name__ == "__main__":
    main()
