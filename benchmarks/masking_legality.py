"""Action masking: no illegal action over long runs, and what masking buys in return.

`legality`: trains each named discrete agent for `--steps` env steps on
`shoal.envs.toy:masked_choice` (legal actions change every step; an illegal one ends the episode
with a penalty of 10), then evaluates it greedily and sampling (`--eval-episodes` each), and
prints the illegal actions taken over all of it (training and both evaluations; the env counts
them in the process) with the steps and returns. `--info` uses the variant whose mask comes in
`info["action_mask"]` (`--env.action-mask-from-info true`). Each agent runs in this process,
one after another: run one agent per command to keep each under a time limit.

`compare`: one agent (PPO by default) for `--steps` on the masked game and on the same game
unmasked (`unmasked_choice`: the legal actions are an observation entry the network sees, but
nothing masks by them), same seeds and settings; prints the final greedy returns of both.

    python benchmarks/masking_legality.py legality --agents ppo dqn --steps 1000000
    python benchmarks/masking_legality.py compare --agent ppo --steps 20000 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

import shoal  # noqa: E402
from shoal.envs.toy import MaskedChoice  # noqa: E402


def _train(algo: str, env: str, steps: int, seed: int, episodes: int, info: bool) -> dict:
    MaskedChoice.illegal_actions = MaskedChoice.steps = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as runs:
        result = shoal.train(
            algo,
            env,
            seed=seed,
            total_steps=steps,
            run={"runs_dir": runs, "eval_episodes": episodes, "log_interval": max(steps // 20, 1)},
            env_config={"action_mask_from_info": True} if info else None,
            trust_run=True,
        )
    greedy, sampled = result.evaluation, result.sampled_evaluation
    return {
        "agent": algo,
        "env": env,
        "seed": seed,
        "train_steps": result.env_steps,
        "all_steps": MaskedChoice.steps,
        "illegal_actions": MaskedChoice.illegal_actions,
        "train_return": result.train_return_mean,
        "greedy_return": None if greedy is None else greedy.mean_return,
        "sampled_return": None if sampled is None else sampled.mean_return,
        "seconds": round(time.perf_counter() - started, 1),
    }


def legality(args: argparse.Namespace) -> None:
    env = "shoal.envs.toy:masked_choice_info" if args.info else "shoal.envs.toy:masked_choice"
    for algo in args.agents:
        row = _train(algo, env, args.steps, args.seed, args.eval_episodes, args.info)
        print(json.dumps(row), flush=True)


def compare(args: argparse.Namespace) -> None:
    games = {"masked": "shoal.envs.toy:masked_choice", "unmasked": "shoal.envs.toy:unmasked_choice"}
    finals: dict[str, list[float]] = {name: [] for name in games}
    for seed in args.seeds:
        for name, env in games.items():
            row = _train(args.agent, env, args.steps, seed, args.eval_episodes, False)
            print(json.dumps({"game": name, **row}), flush=True)
            finals[name].append(float(row["greedy_return"]))
    for name, values in finals.items():
        print(
            f"{args.agent} {name:8s} {args.steps} steps, seeds {args.seeds}: greedy return "
            f"mean {statistics.mean(values):.2f} (each {[round(v, 2) for v in values]})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    leg = sub.add_parser("legality")
    leg.add_argument("--agents", nargs="+", required=True)
    leg.add_argument("--steps", type=int, default=1_000_000)
    leg.add_argument("--seed", type=int, default=0)
    leg.add_argument("--eval-episodes", type=int, default=20)
    leg.add_argument("--info", action="store_true")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("--agent", default="ppo")
    cmp_.add_argument("--steps", type=int, default=20_000)
    cmp_.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    cmp_.add_argument("--eval-episodes", type=int, default=20)
    args = parser.parse_args()
    legality(args) if args.command == "legality" else compare(args)


if __name__ == "__main__":
    main()
