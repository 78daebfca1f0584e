"""Recurrent PPO on CartPole without velocities: shoal's LSTM PPO, its feed-forward PPO and
sb3-contrib's RecurrentPPO, seed by seed in one run.

The env is CartPole-v1 observing only cart position and pole angle
(`shoal.envs.toy:cartpole_no_velocity`; rl-zoo's CartPoleNoVel-v1 for sb3-contrib, made here
with the same masking wrapper), which needs memory to balance. Every run evaluates its greedy
policy (carrying the LSTM state through each episode) on 5 episodes every 10,000 steps and
stops once that mean reaches 400, or at the budget (300k steps); then 10 greedy episodes give
its final return. Each run is a fresh process, timed from just before it starts.

- shoal LSTM: `shoal train ppo --env shoal.envs.toy:cartpole_no_velocity` with its preset
  (rl-zoo's CartPoleNoVel-v1 settings and `use_lstm: true`, `lstm_size: 64`);
- shoal feed-forward: the same preset with `--agent.use-lstm false`;
- sb3-contrib: RecurrentPPO("MlpLstmPolicy") with rl-zoo's `ppo_lstm.yml` CartPoleNoVel-v1 block
  (8 envs, n_steps 32, batch 256, 20 epochs, gamma 0.98, GAE 0.8, no entropy, learning rate
  and clip range linear from 1e-3 and 0.2; its default LSTM of 256 units for policy and
  value), torch on one thread. Run when a Python with sb3_contrib is found: --sb3-python, then
  peers/sb3/bin/python (../shared/peers/setup_sb3.sh peers/sb3), then this interpreter.

    nice -n 19 python benchmarks/recurrent_ppo.py [--seeds 0,1,2] [--budget 300000]
        [--only shoal-lstm,shoal-ff,sb3] [--sb3-python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = "shoal.envs.toy:cartpole_no_velocity"
TARGET = 400.0
EVAL_EVERY = 10_000
EVAL_EPISODES = 5
FINAL_EPISODES = 10

SHOAL_SCRIPT = r"""
import json, sys, time
import shoal

seed, use_lstm, budget, runs_dir = int(sys.argv[1]), sys.argv[2] == "1", *sys.argv[3:5]
target, every, episodes, final = float(sys.argv[5]), *map(int, sys.argv[6:9])
budget = int(budget)

class StopAtTarget(shoal.Callback):
    def __init__(self):
        self.reached, self.best = None, float("-inf")

    def on_evaluation(self, evaluation):
        if evaluation.final:
            return True
        self.best = max(self.best, evaluation.mean_return)
        if evaluation.mean_return >= target and self.reached is None:
            self.reached = evaluation.env_steps
            print(json.dumps({"reached_unix_time": time.time()}), flush=True)
            return False
        return True

stop = StopAtTarget()
run = {"runs_dir": runs_dir, "run_name": f"seed{seed}-{'lstm' if use_lstm else 'ff'}",
       "progress": False, "tensorboard": False, "total_steps": budget, "eval_every": every,
       "eval_every_episodes": episodes, "eval_episodes": final}
result = shoal.train("ppo", sys.argv[9], seed=seed, agent={"use_lstm": use_lstm}, run=run,
                     callbacks=[stop])
print(json.dumps({"steps_to_target": stop.reached, "best_eval": stop.best,
                  "final_greedy": result.evaluation.mean_return, "env_steps": result.env_steps,
                  "done_unix_time": time.time()}), flush=True)
"""

SB3_SCRIPT = r"""
import json, sys, time
import gymnasium as gym
import numpy as np
import torch
torch.set_num_threads(1)
from sb3_contrib import RecurrentPPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

seed, budget = int(sys.argv[1]), int(sys.argv[2])
target, every, episodes, final = float(sys.argv[3]), *map(int, sys.argv[4:7])

class NoVelocity(gym.ObservationWrapper):
    # CartPole-v1 observing cart position and pole angle only (rl-zoo's CartPoleNoVel-v1).
    def __init__(self, env):
        super().__init__(env)
        box = env.observation_space
        self.observation_space = gym.spaces.Box(box.low[[0, 2]], box.high[[0, 2]], (2,), box.dtype)

    def observation(self, observation):
        return observation[[0, 2]]

def make():
    return NoVelocity(gym.make("CartPole-v1"))

def linear(start):
    return lambda progress_remaining: progress_remaining * start

class StopAtTarget(BaseCallback):
    def __init__(self, eval_env):
        super().__init__()
        self.eval_env, self.next_eval = eval_env, every
        self.reached, self.best = None, float("-inf")

    def _on_step(self):
        if self.num_timesteps < self.next_eval:
            return True
        self.next_eval += every
        mean, _ = evaluate_policy(self.model, self.eval_env, n_eval_episodes=episodes,
                                  deterministic=True)
        self.best = max(self.best, mean)
        if mean >= target:
            self.reached = self.num_timesteps
            print(json.dumps({"reached_unix_time": time.time()}), flush=True)
            return False
        return True

env = make_vec_env(make, n_envs=8, seed=seed)
eval_env = make_vec_env(make, n_envs=1, seed=seed + 1000)
model = RecurrentPPO("MlpLstmPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8,
                     gamma=0.98, n_epochs=20, ent_coef=0.0, learning_rate=linear(1e-3),
                     clip_range=linear(0.2), seed=seed, verbose=0, device="cpu")
stop = StopAtTarget(eval_env)
model.learn(budget, callback=stop)
final_mean, _ = evaluate_policy(model, eval_env, n_eval_episodes=final, deterministic=True)
print(json.dumps({"steps_to_target": stop.reached, "best_eval": stop.best,
                  "final_greedy": float(final_mean), "env_steps": int(model.num_timesteps),
                  "done_unix_time": time.time()}), flush=True)
"""

COMMON = [str(TARGET), str(EVAL_EVERY), str(EVAL_EPISODES), str(FINAL_EPISODES)]


def _run(command: list[str], env: dict | None = None) -> dict:
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    reached = next((r for r in rows if "reached_unix_time" in r), None)
    result = rows[-1]
    result["seconds_to_target"] = (
        None if reached is None else reached["reached_unix_time"] - started
    )
    result["seconds"] = result["done_unix_time"] - started
    return result


def run_shoal(seed: int, use_lstm: bool, budget: int, runs_dir: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    flag = "1" if use_lstm else "0"
    command = [sys.executable, "-c", SHOAL_SCRIPT, str(seed), flag, str(budget), str(runs_dir)]
    return _run([*command, *COMMON, ENV], env)


def run_sb3(python: str, seed: int, budget: int) -> dict:
    return _run([python, "-c", SB3_SCRIPT, str(seed), str(budget), *COMMON])


def find_sb3(explicit: str | None) -> str | None:
    candidates = [explicit] if explicit else [str(ROOT / "peers/sb3/bin/python"), sys.executable]
    candidates.append("/work/main/peers/sb3/bin/python")
    for python in candidates:
        if python and Path(python).exists():
            probe = subprocess.run([python, "-c", "import sb3_contrib"], capture_output=True)
            if probe.returncode == 0:
                return python
    return None


def _fmt(result: dict) -> str:
    steps = result["steps_to_target"]
    reached = (
        f"400 at {steps:,} steps ({result['seconds_to_target']:.0f} s)"
        if steps is not None
        else f"not 400 in {result['env_steps']:,} steps (best evaluation {result['best_eval']:.0f})"
    )
    return f"{reached}, final greedy {result['final_greedy']:.1f}, {result['seconds']:.0f} s"


def summarise(name: str, results: list[dict]) -> None:
    if not results:
        return
    steps = [r["steps_to_target"] for r in results if r["steps_to_target"] is not None]
    finals = [r["final_greedy"] for r in results]
    line = f"{name:<12} reached 400 in {len(steps)}/{len(results)} seeds"
    if steps:
        median = statistics.median(steps)
        line += f", steps to 400: median {median:,.0f} ({min(steps):,}-{max(steps):,})"
    line += f"; final greedy: {', '.join(f'{f:.1f}' for f in finals)}"
    seconds = ", ".join(f"{r['seconds']:.0f} s" for r in results)
    line += f"; wall-clock: {seconds}"
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--budget", type=int, default=300_000)
    parser.add_argument("--only", default="shoal-lstm,shoal-ff,sb3")
    parser.add_argument("--sb3-python", help="a Python with sb3_contrib installed")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    which = set(args.only.split(","))
    sb3 = find_sb3(args.sb3_python) if "sb3" in which else None
    print(
        f"{ENV}: greedy evaluation ({EVAL_EPISODES} episodes) every {EVAL_EVERY:,} steps, stop at "
        f">= {TARGET:g}, budget {args.budget:,} steps; seeds {seeds}; "
        f"{'sb3-contrib: ' + sb3 if sb3 else 'sb3-contrib not run'}; load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}",
        flush=True,
    )
    runs_dir = Path(tempfile.mkdtemp(prefix="shoal-rppo-"))
    results: dict[str, list[dict]] = {"shoal LSTM": [], "shoal FF": [], "sb3-contrib": []}
    try:
        for seed in seeds:
            line = [f"seed {seed}:"]
            if "shoal-lstm" in which:
                results["shoal LSTM"].append(run_shoal(seed, True, args.budget, runs_dir))
                line.append(f"shoal LSTM {_fmt(results['shoal LSTM'][-1])}")
            if "shoal-ff" in which:
                results["shoal FF"].append(run_shoal(seed, False, args.budget, runs_dir))
                line.append(f"shoal FF {_fmt(results['shoal FF'][-1])}")
            if sb3:
                results["sb3-contrib"].append(run_sb3(sb3, seed, args.budget))
                line.append(f"sb3-contrib {_fmt(results['sb3-contrib'][-1])}")
            print(" | ".join(line), flush=True)
    finally:
        shutil.rmtree(runs_dir, ignore_errors=True)
    for name, found in results.items():
        summarise(name, found)
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
