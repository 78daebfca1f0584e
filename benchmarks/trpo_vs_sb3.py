"""TRPO on CartPole-v1 and Pendulum-v1: shoal against sb3-contrib's TRPO, in one run.

Both sides use rl-baselines3-zoo's `hyperparams/trpo.yml` settings for these tasks (2 envs;
CartPole: n_steps 512, batch 512, cg_damping 1e-3, gae_lambda 0.98, lr 1e-3, 20 critic epochs;
Pendulum: n_steps 1024, gamma 0.9, 15 critic epochs; sb3-contrib's defaults otherwise: target_kl
0.01, 15 CG steps, damping 0.1, line search 0.8 x 10). shoal runs `shoal.train("trpo", TASK)`
with its preset, which holds those settings, except that shoal has no gSDE, which the zoo's
Pendulum uses (sb3 runs with it, as the zoo does). Every `--eval-every` steps each side runs a
10-episode greedy evaluation (SB3: `evaluate_policy(deterministic=True)`), and at the end of
the budget a final one. Printed per run: the steps of the first evaluation reaching the target
(CartPole 500, Pendulum -200), the final greedy return, the wall time of the whole process
(imports and evaluations included) and the training speed; the load average beside them. Each
run is a fresh process with torch at one thread, and the two frameworks alternate run by run so
both see the same load.

    python benchmarks/trpo_vs_sb3.py [--tasks CartPole-v1 Pendulum-v1] [--seeds 0 1 2]
        [--steps 200000] [--eval-every 10000] [--stop-at-target] [--sb3-python PATH]

SB3 runs from --sb3-python, else peers/sb3/bin/python (../shared/peers/setup_sb3.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cartpole_ppo import find_sb3

TARGETS = {"CartPole-v1": 500.0, "Pendulum-v1": -200.0}
EVAL_EPISODES = 10

SHOAL_SCRIPT = r"""
import json, sys, tempfile, time
import torch
torch.set_num_threads(1)
import shoal

task, (seed, steps, every, episodes) = sys.argv[1], map(int, sys.argv[2:6])
target, stop = float(sys.argv[6]), sys.argv[7] == "1"
algo, agent, extra_run = sys.argv[8], json.loads(sys.argv[9]), json.loads(sys.argv[10])

class Record(shoal.Callback):
    def on_evaluation(self, evaluation):
        if evaluation.mode != "greedy":
            return None
        print(json.dumps({"steps": evaluation.env_steps, "return": evaluation.mean_return,
                          "final": evaluation.final}), flush=True)
        return not (stop and evaluation.mean_return >= target)

started = time.time()
with tempfile.TemporaryDirectory() as runs:
    run = {"runs_dir": runs, "progress": False, "tensorboard": False, "eval_every": every,
           "eval_every_episodes": episodes, "eval_episodes": episodes, **extra_run}
    result = shoal.train(
        algo, task, seed=seed, total_steps=steps, agent=agent, run=run, callbacks=[Record()]
    )
    summary = json.loads((result.run_dir / "summary.json").read_text())
seconds = summary["wall_time"]
print(json.dumps({"done": True, "env_steps": result.env_steps, "train_seconds": seconds}))
"""

# What every sb3-contrib side does (argv as SHOAL_SCRIPT's first seven): evaluations every
# `every` steps and at the end, then the training time; a side adds its model and calls `learn`.
SB3_COMMON = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
import gymnasium as gym
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy

task, (seed, steps, every, episodes) = sys.argv[1], map(int, sys.argv[2:6])
target, stop = float(sys.argv[6]), sys.argv[7] == "1"
eval_env = gym.make(task)

def evaluate(model, final):
    mean, _ = evaluate_policy(model, eval_env, n_eval_episodes=episodes, deterministic=True)
    print(json.dumps({"steps": model.num_timesteps, "return": float(mean), "final": final}),
          flush=True)
    return float(mean)

class Every(BaseCallback):
    def __init__(self):
        super().__init__()
        self.next = every
    def _on_step(self):
        if self.num_timesteps >= self.next:
            self.next += every
            if evaluate(self.model, False) >= target and stop:
                return False
        return True

def learn(model, started):
    model.learn(steps, callback=Every())
    trained = time.time() - started
    evaluate(model, True)
    print(json.dumps({"done": True, "env_steps": model.num_timesteps, "train_seconds": trained}))
"""

SB3_SCRIPT = (
    SB3_COMMON
    + r"""
from sb3_contrib import TRPO
from stable_baselines3.common.env_util import make_vec_env
# rl-baselines3-zoo hyperparams/trpo.yml
ZOO = {
    "CartPole-v1": dict(n_steps=512, batch_size=512, cg_damping=1e-3, gae_lambda=0.98, gamma=0.99,
                        learning_rate=1e-3, n_critic_updates=20),
    "Pendulum-v1": dict(n_steps=1024, gamma=0.9, n_critic_updates=15, use_sde=True,
                        sde_sample_freq=4),
}
started = time.time()
env = make_vec_env(task, n_envs=2, seed=seed)
learn(TRPO("MlpPolicy", env, seed=seed, device="cpu", verbose=0, **ZOO[task]), started)
"""
)


def run(command: list[str], target: float, env: dict | None = None) -> dict:
    """Run one side's process; its evaluations, the first to reach `target`, its times."""
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.time() - started
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1], "seconds": seconds}
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    evals = [r for r in rows if "return" in r]
    end = next(r for r in rows if r.get("done"))
    reached = next((r["steps"] for r in evals if r["return"] >= target), None)
    final = [r["return"] for r in evals if r["final"]]
    return {
        "reached": reached,
        "final": final[-1] if final else evals[-1]["return"],
        "seconds": seconds,
        "steps_per_second": end["env_steps"] / end["train_seconds"],
    }


def main(
    name: str = "TRPO",
    scripts: tuple[str, str] = (SHOAL_SCRIPT, SB3_SCRIPT),
    targets: dict[str, float] = TARGETS,
    steps: int = 200_000,
    eval_every: int = 10_000,
    doc: str = __doc__,
    shoal_agent: tuple[str, dict[str, object], dict[str, object]] = ("trpo", {}, {}),
) -> None:
    """Each task and seed: shoal's script, then sb3-contrib's, each a fresh process (`scripts`
    take: task seed steps eval_every episodes target stop; shoal's also the algorithm, its
    settings over its preset and run settings, `shoal_agent`), and the table of both; also the
    driver of other sb3-contrib comparisons (benchmarks/qrdqn_vs_sb3.py)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(targets), choices=list(targets))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--eval-every", type=int, default=eval_every)
    parser.add_argument("--stop-at-target", action="store_true", help="stop a run at its target")
    parser.add_argument("--sb3-python", help="a Python with sb3-contrib installed")
    parser.add_argument("--no-sb3", action="store_true", help="run shoal alone")
    args = parser.parse_args()
    sb3 = None if args.no_sb3 else find_sb3(args.sb3_python)
    if sb3 is not None:
        probe = subprocess.run([sb3, "-c", "import sb3_contrib"], capture_output=True)
        sb3 = sb3 if probe.returncode == 0 else None
    root = Path(__file__).resolve().parent.parent
    env = {
        **os.environ,
        "PYTHONPATH": f"{root / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    print(
        f"{name}, {args.steps:,} steps, greedy {EVAL_EPISODES}-episode evaluations every "
        f"{args.eval_every:,} steps; targets {targets}; "
        f"{'sb3-contrib: ' + sb3 if sb3 else 'sb3-contrib not found'}"
    )
    print(
        f"{'task':<12} {'seed':>4} {'side':<6} {'to target':>9} {'final':>8} {'wall s':>7} "
        f"{'steps/s':>8}  load"
    )
    results: dict[tuple[str, str], list[dict]] = {}
    for task in args.tasks:
        target = targets[task]
        extra = [task, "0", str(args.steps), str(args.eval_every), str(EVAL_EPISODES), str(target)]
        extra += ["1" if args.stop_at_target else "0"]
        for seed in args.seeds:
            extra[1] = str(seed)
            algo, agent, extra_run = shoal_agent[0], *map(json.dumps, shoal_agent[1:])
            sides = [("shoal", [sys.executable, "-c", scripts[0], *extra, algo, agent, extra_run])]
            if sb3:
                sides.append(("sb3", [sb3, "-c", scripts[1], *extra]))
            for side, command in sides:
                r = run(command, target, env if side == "shoal" else None)
                load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
                results.setdefault((task, side), []).append(r)
                if "error" in r:
                    print(f"{task:<12} {seed:>4} {side:<6} failed: {r['error']}", flush=True)
                    continue
                reached = "-" if r["reached"] is None else f"{r['reached']:,}"
                print(
                    f"{task:<12} {seed:>4} {side:<6} {reached:>9} {r['final']:>8.1f} "
                    f"{r['seconds']:>7.1f} {r['steps_per_second']:>8.0f}  {load}",
                    flush=True,
                )
    for (task, side), rows in results.items():
        ok = [r for r in rows if "error" not in r]
        if not ok:
            continue
        finals = ", ".join(f"{r['final']:.1f}" for r in ok)
        reached = [r["reached"] for r in ok if r["reached"] is not None]
        print(
            f"{task} {side}: target reached by {len(reached)} of {len(rows)} seeds"
            + (f" (median {statistics.median(reached):,.0f} steps)" if reached else "")
            + f"; final greedy returns {finals}"
            + f"; median wall {statistics.median(r['seconds'] for r in ok):.0f} s"
        )


if __name__ == "__main__":
    main()
