"""REINFORCE on CartPole-v1: agent steps until a 10-episode greedy evaluation returns 500.

Each seed runs `shoal train pg --env CartPole-v1` in a fresh process with its preset (200k
steps) and `--eval-every 10000 --eval-every-episodes 10`; from its metrics.jsonl this prints
the steps of the first greedy evaluation of 500, how many evaluations from then on returned at
least 475, and the run's final greedy evaluation (10 episodes). Target: every seed at 500
within 500k steps.

The peer, when a Python with stable_baselines3 is found (--sb3-python, then
peers/sb3/bin/python, then this interpreter), is the same estimator in SB3's code: A2C with
`n_steps` = the preset's rollout (256), `gae_lambda` 1 (whole returns, the unroll's cut
bootstrapped by the value, as `pg` with its baseline), Adam, standardised advantages, no
gradient clipping, the preset's annealed learning rate and 8 envs, evaluated greedily on the
same schedule and stopped at its first 500 (SB3 has no REINFORCE of its own).

    python benchmarks/pg_cartpole.py [--seeds 0 1 2] [--no-sb3] [-- EXTRA SHOAL FLAGS]

e.g. `-- --agent.baseline false` measures REINFORCE without a baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVAL_EVERY = 10_000

SB3_SCRIPT = r"""
import json, sys, time
import gymnasium as gym
import torch
torch.set_num_threads(1)
from stable_baselines3 import A2C
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

seed, every, budget = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

class GreedyEval(BaseCallback):
    def _init_callback(self):
        self.env, self.next = gym.make("CartPole-v1"), every
    def _on_step(self):
        if self.num_timesteps < self.next:
            return True
        self.next += every
        mean, _ = evaluate_policy(self.model, self.env, n_eval_episodes=10, deterministic=True)
        print(json.dumps({"steps": self.num_timesteps, "eval": float(mean)}), flush=True)
        return mean < 500

started = time.time()
env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
model = A2C("MlpPolicy", env, n_steps=256, gamma=0.99, gae_lambda=1.0, ent_coef=0.0,
            vf_coef=0.5, max_grad_norm=1e9, use_rms_prop=False, normalize_advantage=True,
            learning_rate=lambda remaining: 3e-3 * remaining, seed=seed, device="cpu")
model.learn(budget, callback=GreedyEval())
print(json.dumps({"done": True, "steps": model.num_timesteps, "seconds": time.time() - started}))
"""


def run_shoal(seed: int, runs_dir: Path, extra: list[str]) -> dict:
    name = f"seed{seed}"
    command = [sys.executable, "-m", "shoal", "train", "pg", "--env", "CartPole-v1"]
    command += ["--seed", str(seed), "--runs-dir", str(runs_dir), "--run-name", name]
    command += ["--progress", "false", "--tensorboard", "false"]
    command += ["--eval-every", str(EVAL_EVERY), "--eval-every-episodes", "10", *extra]
    started = time.time()
    subprocess.run(command, check=True, capture_output=True, text=True)
    seconds = time.time() - started
    rows = [json.loads(line) for line in (runs_dir / name / "metrics.jsonl").open()]
    evals = [(r["env_steps"], r["eval_return_mean"]) for r in rows if "eval_return_mean" in r]
    first = next((steps for steps, mean in evals if mean >= 500), None)
    after = [mean for steps, mean in evals if first is not None and steps >= first]
    summary = json.loads((runs_dir / name / "summary.json").read_text())
    final = (summary.get("evaluation") or {}).get("mean_return")
    return {
        "first": first,
        "held": f"{sum(m >= 475 for m in after)}/{len(after)}",
        "final": final,
        "steps": summary["env_steps"],
        "seconds": seconds,
    }


def run_sb3(python: str, seed: int, budget: int) -> dict:
    started = time.time()
    out = subprocess.run(
        [python, "-c", SB3_SCRIPT, str(seed), str(EVAL_EVERY), str(budget)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    first = next((r["steps"] for r in rows if r.get("eval", 0) >= 500), None)
    return {"first": first, "seconds": time.time() - started}


def find_sb3(explicit: str | None) -> str | None:
    candidates = [explicit] if explicit else [str(ROOT / "peers/sb3/bin/python"), sys.executable]
    for python in candidates:
        if python and Path(python).exists():
            probe = subprocess.run([python, "-c", "import stable_baselines3"], capture_output=True)
            if probe.returncode == 0:
                return python
    return None


def load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--sb3-python", help="a Python with stable-baselines3 installed")
    parser.add_argument("--no-sb3", action="store_true", help="skip the SB3 peer")
    parser.add_argument("--sb3-budget", type=int, default=200_000, help="SB3's step cap")
    parser.add_argument("extra", nargs="*", help="flags for `shoal train` (after --)")
    args = parser.parse_args()
    sb3 = None if args.no_sb3 else find_sb3(args.sb3_python)
    flags = " ".join(args.extra) or "the preset"
    print(f"CartPole-v1, pg with {flags}: steps to a 10-episode greedy return of 500")
    print(f"SB3 peer: {sb3 or 'not run'}; load average at start (1, 5, 15 min): {load()}")
    print("seed  shoal: first 500  evals>=475 after  final greedy  steps  wall_s | SB3 A2C(λ=1)")
    reached = 0
    with tempfile.TemporaryDirectory(prefix="shoal-pg-") as runs:
        for seed in args.seeds:
            r = run_shoal(seed, Path(runs), args.extra)
            reached += r["first"] is not None and r["first"] <= 500_000
            line = (
                f"{seed:4}  {r['first'] or 'never':>17}  {r['held']:>16}  "
                f"{r['final'] if r['final'] is not None else '-':>12}  {r['steps']:>6}  "
                f"{r['seconds']:6.1f}"
            )
            if sb3:
                p = run_sb3(sb3, seed, args.sb3_budget)
                line += f" | {p['first'] or 'never'} ({p['seconds']:.0f} s)"
            print(f"{line}  load {load()}", flush=True)
    print(f"{reached} of {len(args.seeds)} seeds reached a greedy 500 within 500k steps")


if __name__ == "__main__":
    main()
