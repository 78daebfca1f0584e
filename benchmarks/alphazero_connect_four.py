"""AlphaZero on connect four: a curve of the win rate against pure MCTS over training time.

    python benchmarks/alphazero_connect_four.py --minutes 120 --seed 0
    python benchmarks/alphazero_connect_four.py --seed 0 --phases evaluate report

Phases:
- `train`: `shoal train alphazero --env connect_four --run-name c4-alphazero-s<seed>
  --resume auto --max-time MINUTES*60`, keeping a checkpoint every `--checkpoint-steps` agent
  steps. `--max-time` counts training time across resumes, so the same command in a later
  session goes on where the last stopped and does nothing once the budget is used.
- `evaluate`: every checkpoint not yet scored plays `--games` games (first player alternating)
  against pure Monte-Carlo tree search with `--mcts-rollouts` random rollouts per move
  (`shoal.envs.board_players.RolloutMCTS`), through `shoal.load(checkpoint).predict`, so with
  the agent's own evaluation search; and `--random-games` against a uniformly random player.
  Results are cached in `RUN_DIR/evaluations/alphazero_connect_four.json`; the training time
  of each point is the checkpoint's own (scoring time is not training time).
- `report`: a table (win rate against MCTS and random at each checkpoint, the first time at or
  above `--target`) and a PNG of the win rate against training time.

No peer is installed with an AlphaZero for PettingZoo's games, so there is no peer figure.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from budgeted_run import train_with_budget
from league_connect_four import PolicyPlayer

from shoal.envs.board_games import ConnectFour
from shoal.envs.board_players import RandomPlayer, RolloutMCTS, play_match


def run_dir_of(args: argparse.Namespace) -> Path:
    return args.runs_dir / f"c4-alphazero-s{args.seed}"


def train(args: argparse.Namespace) -> None:
    train_with_budget(
        "alphazero",
        "connect_four",
        args.seed,
        args.runs_dir,
        run_dir_of(args).name,
        minutes=args.minutes,
        total_steps=10**9,  # the time budget ends it
        checkpoint_steps=args.checkpoint_steps,
        extra=args.extra,
    )


def evaluate(args: argparse.Namespace, score: bool = True) -> list[dict[str, Any]]:
    """Score the checkpoints not scored yet (unless not `score`); every scored point, by
    training time."""
    import shoal
    from shoal.run.checkpoints import list_checkpoints, load_checkpoint

    run_dir = run_dir_of(args)
    cache_path = run_dir / "evaluations" / "alphazero_connect_four.json"
    cache: dict[str, dict[str, Any]] = (
        json.loads(cache_path.read_text()) if cache_path.exists() else {}
    )
    tail = f":{args.games}:{args.mcts_rollouts}:{args.random_games}"
    for checkpoint in list_checkpoints(run_dir / "checkpoints") if score else []:
        key = checkpoint.name + tail
        if key in cache:
            continue
        state = load_checkpoint(checkpoint)
        started = time.perf_counter()
        player = PolicyPlayer(shoal.load(checkpoint))
        seed = args.eval_seed + len(cache)
        mcts = play_match(player, RolloutMCTS(args.mcts_rollouts, seed), ConnectFour, args.games)
        rand = play_match(player, RandomPlayer(seed), ConnectFour, args.random_games)
        cache[key] = {
            "minutes": float(state["elapsed"]) / 60,
            "env_steps": int(state["env_steps"]),
            "mcts": {"win": mcts.wins, "draw": mcts.draws, "loss": mcts.losses},
            "random": {"win": rand.wins, "draw": rand.draws, "loss": rand.losses},
        }
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        cache_path.write_text(json.dumps(cache, indent=1))
        print(
            f"[evaluate] {checkpoint.name}: {cache[key]['minutes']:.1f} min, "
            f"vs MCTS-{args.mcts_rollouts} {mcts.wins}W {mcts.draws}D {mcts.losses}L, "
            f"vs random {rand.wins}W {rand.draws}D {rand.losses}L "
            f"({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
    points = [value for key, value in cache.items() if key.endswith(tail)]
    return sorted(points, key=lambda p: p["minutes"])


def win_rate(result: dict[str, int]) -> float:
    return result["win"] / max(1, sum(result.values()))


def report(args: argparse.Namespace, points: list[dict[str, Any]]) -> str:
    reached = next((p for p in points if win_rate(p["mcts"]) >= args.target), None)
    lines = [
        f"# AlphaZero on connect four, seed {args.seed}: against MCTS-{args.mcts_rollouts}",
        "",
        f"Machine: {os.cpu_count()} CPUs, no GPU; load average at report time "
        f"{os.getloadavg()[0]:.2f}. {args.games} games against MCTS and {args.random_games} "
        "against random at each checkpoint, first player alternating.",
        "",
        f"First checkpoint at or above {args.target:.0%} against MCTS: "
        + (f"{reached['minutes']:.0f} min ({reached['env_steps']} steps)" if reached else "none"),
        "",
        "| training minutes | agent steps | vs MCTS (W/D/L) | win rate | vs random (W/D/L) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for p in points:
        m, r = p["mcts"], p["random"]
        lines.append(
            f"| {p['minutes']:.1f} | {p['env_steps']} | {m['win']}/{m['draw']}/{m['loss']} | "
            f"{win_rate(m):.0%} | {r['win']}/{r['draw']}/{r['loss']} |"
        )
    return "\n".join(lines)


def plot(args: argparse.Namespace, points: list[dict[str, Any]]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    minutes = [p["minutes"] for p in points]
    ax.plot(minutes, [win_rate(p["mcts"]) for p in points], marker="o", label="vs MCTS")
    ax.plot(minutes, [win_rate(p["random"]) for p in points], marker=".", label="vs random")
    ax.axhline(args.target, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("training wall-clock (minutes, 2-core CPU)")
    ax.set_ylabel("win rate")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title(f"AlphaZero on connect four, seed {args.seed}")
    fig.tight_layout()
    path = args.out_dir / f"alphazero_connect_four_s{args.seed}.png"
    fig.savefig(path, dpi=110)
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=120.0, help="training budget")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint-steps", type=int, default=50_000, help="agent steps")
    parser.add_argument("--games", type=int, default=100, help="games against MCTS a point")
    parser.add_argument("--mcts-rollouts", type=int, default=200)
    parser.add_argument("--random-games", type=int, default=50)
    parser.add_argument("--eval-seed", type=int, default=10_000)
    parser.add_argument("--target", type=float, default=0.8)
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/alphazero"))
    parser.add_argument("--out-dir", type=Path, default=Path("runs/alphazero"))
    parser.add_argument("--phases", nargs="+", default=["train", "evaluate", "report"])
    args, extra = parser.parse_known_args(argv)  # the rest goes to `shoal train`
    args.extra = extra
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    if "train" in args.phases:
        train(args)
    points: list[dict[str, Any]] = []
    if {"evaluate", "report"} & set(args.phases):
        points = evaluate(args, score="evaluate" in args.phases)
    if "report" in args.phases:
        table = report(args, points)
        (args.out_dir / f"alphazero_connect_four_s{args.seed}.md").write_text(table + "\n")
        print(table)
        print(f"figure: {plot(args, points)}")


if __name__ == "__main__":
    main()
