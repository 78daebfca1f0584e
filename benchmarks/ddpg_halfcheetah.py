"""DDPG on HalfCheetah-v5: shoal against Stable-Baselines3, with rl-zoo's settings, in one run.

Both sides use rl-baselines3-zoo's DDPG settings for MuJoCo (hyperparams/ddpg.yml, the
`HalfCheetah-v4: &mujoco-defaults` block, read at DLR-RM/rl-baselines3-zoo 22e3ff2): Gaussian
exploration noise 0.1 (`noise_type: normal, noise_std: 0.1`), `learning_starts: 10000`,
`train_freq: 1, gradient_steps: 1`, learning rate 1e-3, batch 256, 400x300 networks, and SB3's
defaults for the rest (gamma 0.99, buffer 1e6, tau 0.005). shoal runs `shoal train ddpg --env
HalfCheetah-v5` with its preset (src/shoal/presets/ddpg.yaml), which holds the same settings;
SB3 is given them explicitly. Each run is a fresh process, timed from just before it starts to
its end, including a 10-episode deterministic evaluation on both sides; the two frameworks
alternate run by run, with the same seeds, so both see the same load, and both run torch with
one intra-op thread (shoal's default; SB3 with torch's default of every core was several times
slower on the shared 2-core machine).

    python benchmarks/ddpg_halfcheetah.py [--steps 100000] [--seeds 3]

SB3 runs from --sb3-python, else peers/sb3/bin/python (made by ../shared/peers/setup_sb3.sh
peers/sb3, then `peers/sb3/bin/pip install 'gymnasium[mujoco]'`). Needs `pip install
'shoal[mujoco]'` here.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cartpole_ppo import find_sb3
from mujoco_sac import EVAL_EPISODES, _fmt, _mean, _spread, run_shoal

TASK = "HalfCheetah-v5"

SB3_SCRIPT = r"""
import json, sys, time
import gymnasium as gym
import numpy as np
import torch
torch.set_num_threads(1)  # shoal's default (--torch-threads 1); torch's own takes every core
from stable_baselines3 import DDPG
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.noise import NormalActionNoise

task, seed, steps, episodes = sys.argv[1], *map(int, sys.argv[2:])
env = gym.make(task)
dim = env.action_space.shape[0]
model = DDPG(
    "MlpPolicy",
    env,
    learning_rate=1e-3,
    buffer_size=1_000_000,
    learning_starts=10_000,
    batch_size=256,
    tau=0.005,
    gamma=0.99,
    train_freq=1,
    gradient_steps=1,
    action_noise=NormalActionNoise(np.zeros(dim), 0.1 * np.ones(dim)),
    policy_kwargs=dict(net_arch=[400, 300]),
    seed=seed,
    device="cpu",
)
started = time.time()
model.learn(steps)
trained = time.time() - started
mean, _ = evaluate_policy(model, gym.make(task), n_eval_episodes=episodes, deterministic=True)
print(json.dumps({"return": float(mean), "train_seconds": trained}))
"""


def run_sb3(python: str, seed: int, steps: int) -> dict:
    started = time.time()
    args = [TASK, str(seed), str(steps), str(EVAL_EPISODES)]
    out = subprocess.run(
        [python, "-c", SB3_SCRIPT, *args], check=True, capture_output=True, text=True
    ).stdout
    seconds = time.time() - started
    row = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    return {"return": row["return"], "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--sb3-python", help="a Python with stable-baselines3 and MuJoCo")
    args = parser.parse_args()
    sb3 = find_sb3(args.sb3_python)
    if sb3 is None:
        sys.exit("Stable-Baselines3 not found: bash ../shared/peers/setup_sb3.sh peers/sb3")
    runs_dir = Path(tempfile.mkdtemp(prefix="shoal-ddpg-"))
    print(
        f"DDPG {TASK}, {args.steps:,} steps, seeds 0 to {args.seeds - 1}, {EVAL_EPISODES}-episode "
        f"deterministic evaluation at the end; seconds from process start to end; SB3: {sb3}",
        flush=True,
    )
    ours, theirs = [], []
    try:
        for seed in range(args.seeds):
            ours.append(run_shoal("ddpg", TASK, seed, args.steps, runs_dir))
            theirs.append(run_sb3(sb3, seed, args.steps))
            print(f"seed {seed}: shoal {_fmt(ours[-1])} | SB3 {_fmt(theirs[-1])}", flush=True)
    finally:
        shutil.rmtree(runs_dir, ignore_errors=True)
    ratio = _mean(ours, "seconds") / _mean(theirs, "seconds")
    print("\n| algo | task | shoal return | SB3 return | shoal s | SB3 s | time ratio |")
    print("|---|---|---|---|---|---|---|")
    print(
        f"| ddpg | {TASK} | {_spread(ours, 'return')} | {_spread(theirs, 'return')} "
        f"| {_mean(ours, 'seconds'):.0f} | {_mean(theirs, 'seconds'):.0f} | {ratio:.2f}x |"
    )


if __name__ == "__main__":
    main()
