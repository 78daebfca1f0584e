"""Agent57 against R2D2 on MinAtar Breakout and Space Invaders, at the same budget of agent steps.

For each game, agent and seed: the greedy evaluation return at the end of the budget (a fresh
deterministic evaluation of the final checkpoint; Agent57 acts with the mixture its evaluator
bandit prefers), the training return mean (last 20 episodes of the run, exploring envs
included), the training wall time (shoal's `wall_time`, evaluation excluded) and agent steps per
second of it. Each run is `shoal.train(algo, game, seed=..., total_steps=...)` in this process:
inline runtime, 16 envs, the agent's MinAtar preset (presets/r2d2.yaml; presets/agent57.yaml
mirrors its sizes: sequences of 30 trained steps after a 10-step burn-in, a new one every 20
steps, batches of 32, a 128-unit LSTM, lr 3e-4, 8 sequences sampled per sequence inserted).
Runs go one at a time, the two agents alternating seed by seed, so both see the same load.
MinAtar has no frame skip: agent steps are frames. Learning starts after 500 sequences in
replay, about 10k steps.

Cost, measured with 30k-step runs (seed 0, each game) on this 2-core machine while three other
CPU-bound processes ran (each run got about half a core): before learning starts Agent57 acts
at about 700 steps/s and R2D2 at about 1,500; once learning, Agent57 runs at about 120-130
steps/s (1.6 updates/s) and R2D2 at about 270-350 (4.5 updates/s). At the default 150k steps
an Agent57 run takes about 19 minutes and an R2D2 run about 8, so 2 games x 3 seeds x 2 agents
take about 2.8 hours (each further 10k steps adds about 11 minutes); with the 2 cores to itself
expect about half that.

    python benchmarks/minatar_agent57.py [--total-steps 150000] [--seeds 0 1 2]
        [--games minatar:breakout minatar:space_invaders] [--eval-episodes 20] [--runs-dir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import shoal
from shoal import catalog
from shoal.envs.minatar_games import MINATAR_GAMES

AGENTS = ("agent57", "r2d2")
GAMES = ("minatar:breakout", "minatar:space_invaders")


def run_one(algo: str, game: str, seed: int, args: argparse.Namespace, runs_dir: Path) -> dict:
    """One training run with the agent's preset for `game`, then its greedy evaluation."""
    run = {
        "runs_dir": str(runs_dir),
        "run_name": f"{algo}-{game.replace(':', '-')}-seed{seed}",
        "eval_episodes": args.eval_episodes,
        "progress": False,
        "tensorboard": False,
    }
    result = shoal.train(algo, game, seed=seed, total_steps=args.total_steps, run=run)
    seconds = result.summary["wall_time"]
    return {
        "evaluation": result.evaluation.mean_return,
        "training": result.train_return_mean,
        "seconds": seconds,
        "steps_per_second": result.env_steps / max(seconds, 1e-9),
        "updates": result.summary["updates"],
        "run_dir": result.run_dir,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--total-steps", type=int, default=150_000, help="agent steps per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--games", nargs="+", default=list(GAMES), help="minatar:GAME ids")
    parser.add_argument("--eval-episodes", type=int, default=20, help="greedy episodes at the end")
    parser.add_argument("--runs-dir", type=Path, help="keep the run directories here")
    args = parser.parse_args()
    for game in args.games:
        if game.removeprefix("minatar:") not in MINATAR_GAMES or ":" not in game:
            known = ", ".join(f"minatar:{name}" for name in MINATAR_GAMES)
            sys.exit(f"Unknown MinAtar game {game!r}; pass one of {known}.")
        for algo in AGENTS:
            if not catalog.preset_for(algo, game)["agent"]:
                sys.exit(f"{algo} has no preset for {game}: add one to presets/{algo}.yaml.")
    if args.eval_episodes < 1:
        sys.exit("--eval-episodes must be >= 1: the greedy evaluation is the main figure.")

    runs_dir = args.runs_dir or Path(tempfile.mkdtemp(prefix="shoal-minatar-agent57-"))
    print(
        f"{args.total_steps:,} agent steps per run, seeds {' '.join(map(str, args.seeds))}, "
        f"inline, each agent's MinAtar preset; {args.eval_episodes}-episode greedy evaluation "
        "at the end; wall time and steps/s of training only",
        flush=True,
    )
    started = time.time()
    results: dict[tuple[str, str], list[dict]] = {}
    try:
        for game in args.games:
            for seed in args.seeds:
                for algo in AGENTS:
                    row = run_one(algo, game, seed, args, runs_dir)
                    results.setdefault((game, algo), []).append(row)
                    print(f"{game} {algo:<7} seed {seed}: {_fmt(row)}", flush=True)
    finally:
        if args.runs_dir is None:
            shutil.rmtree(runs_dir, ignore_errors=True)
    print(f"\ntotal {(time.time() - started) / 60:.1f} min\n")

    header = ("game", "agent", "evaluation", "per seed", "training", "wall s", "steps/s")
    print("{:<24}{:<9}{:>11}  {:<24}{:>9}{:>8}{:>9}".format(*header))
    for (game, algo), rows in results.items():
        per_seed = ", ".join(f"{r['evaluation']:.1f}" for r in rows)
        print(
            f"{game:<24}{algo:<9}{_mean(rows, 'evaluation'):>11.1f}  {per_seed:<24}"
            f"{_mean(rows, 'training'):>9.1f}{_mean(rows, 'seconds'):>8.0f}"
            f"{_mean(rows, 'steps_per_second'):>9.0f}"
        )

    print(
        f"\n| game | agent | greedy evaluation at {args.total_steps:,} steps | training mean "
        "| wall time per seed | steps/s |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for (game, algo), rows in results.items():
        print(
            f"| {game} | {algo} | {_spread(rows, 'evaluation')} | {_spread(rows, 'training')} "
            f"| {_mean(rows, 'seconds'):.0f} s | {_mean(rows, 'steps_per_second'):.0f} |"
        )


def _mean(rows: list[dict], key: str) -> float:
    values = [r[key] for r in rows if r[key] is not None]
    return statistics.mean(values) if values else float("nan")


def _spread(rows: list[dict], key: str) -> str:
    """`**mean** (seed, seed, ...)`, as the README's MinAtar tables."""
    values = ["n/a" if r[key] is None else f"{r[key]:.1f}" for r in rows]
    if len(values) == 1:
        return f"**{values[0]}**"
    return f"**{_mean(rows, key):.1f}** ({', '.join(values)})"


def _fmt(row: dict) -> str:
    training = "n/a" if row["training"] is None else f"{row['training']:.1f}"
    return (
        f"evaluation {row['evaluation']:.1f}, training mean {training}, {row['seconds']:.0f} s, "
        f"{row['steps_per_second']:.0f} steps/s, {row['updates']:,} updates"
    )


if __name__ == "__main__":
    main()
