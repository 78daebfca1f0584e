"""PPO self-play with a league on connect four: win rates against fixed opponents as it learns.

    PYTHONPATH=src python benchmarks/league_connect_four.py --steps 1000000 --seed 0 \
        [--eval-every 100000] [--random-games 200] [--mcts-games 20] [--mcts-rollouts 200] \
        [--sampling pfsp|uniform] [--runtime inline|ray] [--plot docs/assets/league.png]

Trains `shoal train ppo --env connect_four --agent.self-play league` (the preset's settings)
for `--steps` agent steps (a move of either seat is a step). Every `--eval-every` steps (at each
checkpoint) the learner's greedy policy plays `--random-games` games against a uniformly random
player and `--mcts-games` against a pure Monte-Carlo tree search with `--mcts-rollouts` random
rollouts a move (`shoal.envs.board_players.RolloutMCTS`), first player alternating, and the
script prints wins/draws/losses, an Elo estimate against each (the opponent's rating 0; a sweep
is the half-game bound) and the training wall-clock (evaluation time excluded). The curve goes
to `--plot` (matplotlib), the rows to `--json`. No peer trains PPO with a league on PettingZoo's
games, so there is no peer figure.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import tempfile
import time

import shoal
from shoal.agents.common.league import elo_from_score
from shoal.envs.board_games import BoardGame, ConnectFour
from shoal.envs.board_players import MatchResult, RandomPlayer, RolloutMCTS, play_match


class PolicyPlayer:
    """A loaded shoal policy (greedy) as a board-game player."""

    def __init__(self, policy: shoal.LoadedPolicy) -> None:
        self.policy = policy

    def act(self, game: BoardGame) -> int:
        action, _ = self.policy.predict(game.observation())
        return int(action)


def describe(name: str, result: MatchResult) -> str:
    if result.games == 0:
        return f"vs {name}: not played"
    elo = elo_from_score(result.score, result.games)
    bound = " (bound)" if result.wins in (0, result.games) and not result.draws else ""
    return (
        f"vs {name}: {result.wins}W {result.draws}D {result.losses}L of {result.games} "
        f"(win {result.wins / result.games:.1%}), Elo {elo:+.0f}{bound}"
    )


class Curve(shoal.Callback):
    def __init__(self, args: argparse.Namespace) -> None:
        self.args, self.rows = args, []
        self.start = time.time()
        self.eval_time = 0.0

    def on_checkpoint(self, path: pathlib.Path, env_steps: int) -> None:
        args = self.args
        if self.rows and self.rows[-1]["env_steps"] == env_steps:
            return  # the final checkpoint, at the step of the last periodic one
        began = time.time()
        train_s = began - self.start - self.eval_time
        player = PolicyPlayer(shoal.load(path))
        seed = args.seed * 1000 + len(self.rows)
        versus_random = play_match(player, RandomPlayer(seed), ConnectFour, args.random_games)
        versus_mcts = play_match(
            player, RolloutMCTS(args.mcts_rollouts, seed), ConnectFour, args.mcts_games
        )
        self.eval_time += time.time() - began
        row = {
            "env_steps": env_steps,
            "train_s": round(train_s, 1),
            "random": vars_of(versus_random),
            "mcts": vars_of(versus_mcts),
            "elo_vs_random": elo_from_score(versus_random.score, versus_random.games),
            "elo_vs_mcts": (
                elo_from_score(versus_mcts.score, versus_mcts.games) if args.mcts_games else None
            ),
        }
        self.rows.append(row)
        print(  # on a line of its own, after the progress bar's
            f"\n[{env_steps:>8} steps, {train_s:6.0f} s training] "
            f"{describe('random', versus_random)}; "
            f"{describe(f'MCTS-{args.mcts_rollouts}', versus_mcts)} "
            f"(eval {time.time() - began:.0f} s)",
            flush=True,
        )


def vars_of(result: MatchResult) -> dict[str, int]:
    return {"win": result.wins, "draw": result.draws, "loss": result.losses}


def plot(rows: list[dict], args: argparse.Namespace, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, key, label in (
        (axes[0], "env_steps", "agent steps (moves of either seat)"),
        (axes[1], "train_s", "training wall-clock (s, 2-core CPU)"),
    ):
        x = [row[key] for row in rows]
        for opponent, name in (
            ("random", f"vs random ({args.random_games} games)"),
            ("mcts", f"vs MCTS-{args.mcts_rollouts} ({args.mcts_games} games)"),
        ):
            games = [sum(row[opponent].values()) for row in rows]
            if not all(games):
                continue  # not played (--mcts-games 0)
            wins = [row[opponent]["win"] / g for row, g in zip(rows, games, strict=True)]
            ax.plot(x, wins, marker="o", label=name)
        ax.axhline(0.95, color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("win rate of the learner")
    axes[0].legend(loc="lower right")
    fig.suptitle(
        f"PPO + league ({args.sampling}) on connect four, seed {args.seed}, {args.runtime}"
    )
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"curve written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-every", type=int, default=100_000)
    parser.add_argument("--random-games", type=int, default=200)
    parser.add_argument("--mcts-games", type=int, default=20)
    parser.add_argument("--mcts-rollouts", type=int, default=200)
    parser.add_argument("--sampling", choices=("pfsp", "uniform"), default="pfsp")
    parser.add_argument("--runtime", choices=("inline", "ray"), default="inline")
    parser.add_argument("--agent", type=json.loads, default={}, help="agent overrides (JSON)")
    parser.add_argument("--plot", default=None, help="PNG of the curve")
    parser.add_argument("--json", default=None, help="write the rows here")
    args = parser.parse_args()
    runs = tempfile.mkdtemp(prefix="league_c4_")
    curve = Curve(args)
    agent = {"self_play": "league", "league_sampling": args.sampling, **args.agent}
    result = shoal.train(
        "ppo",
        "connect_four",
        seed=args.seed,
        total_steps=args.steps,
        agent=agent,
        run={
            "runs_dir": runs,
            "runtime": args.runtime,
            "checkpoint_interval": args.eval_every,
            "eval_episodes": 0,
        },
        callbacks=[curve],
    )
    rows = curve.rows
    print(f"run {result.run_dir}; seed {args.seed}; agent {json.dumps(agent)}")
    last = rows[-1]
    print(
        f"final ({last['env_steps']} steps, {last['train_s']:.0f} s training): "
        f"random {last['random']}, MCTS-{args.mcts_rollouts} {last['mcts']}"
    )
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"args": vars(args), "rows": rows}))
    if args.plot:
        plot(rows, args, args.plot)


if __name__ == "__main__":
    main()
