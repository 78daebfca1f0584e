"""AlphaZero on tic-tac-toe: train under a wall-clock budget, then play a perfect (minimax)
player 100 games as each side, and random players as a sanity figure.

    PYTHONPATH=src python benchmarks/alphazero_tictactoe.py --minutes 10 --seed 0

Prints the training time, positions played, gradient steps, and the results against the
perfect player (a loss is any game the minimax player wins) and against a uniform random one.
The perfect player picks uniformly among its optimal moves (seeded), so its 100 games vary.
No peer is installed with an AlphaZero for PettingZoo's games, so there is no peer figure.
"""

from __future__ import annotations

import argparse
import functools
import json
import pathlib
import tempfile
import time

import numpy as np
import pettingzoo

import shoal
from shoal.envs.board_games import TicTacToe


@functools.cache
def _negamax(board: bytes) -> float:
    game = TicTacToe(np.frombuffer(board, np.int8).reshape(3, 3).copy())
    game.last_won = game._has_line(-1)
    value = game.terminal_value()
    if value is not None:
        return value
    return max(
        -_negamax(game.apply(a).board.tobytes()) for a in np.flatnonzero(game.legal_actions())
    )


def perfect_move(obs: dict, rng: np.random.Generator) -> int:
    game = TicTacToe.from_observation(obs)
    moves = np.flatnonzero(obs["action_mask"])
    values = [-_negamax(game.apply(a).board.tobytes()) for a in moves]
    best = [m for m, v in zip(moves, values, strict=True) if v == max(values)]
    return int(rng.choice(best))


def random_move(obs: dict, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(obs["action_mask"])))


def play(policy, opponent, games: int, seed: int) -> dict[str, int]:
    """`games` games as each side: {"win", "draw", "loss"} counts for the policy."""
    rng = np.random.default_rng(seed)
    counts = {"win": 0, "draw": 0, "loss": 0}
    for first in (True, False):
        for g in range(games):
            env = pettingzoo.make("aec", "classic/tictactoe-v3")
            env.reset(seed=seed + g)
            me = env.possible_agents[0 if first else 1]
            for agent in env.agent_iter():
                obs, reward, terminated, truncated, _ = env.last()
                if terminated or truncated:
                    if agent == me:
                        counts["win" if reward > 0 else "loss" if reward < 0 else "draw"] += 1
                    env.step(None)
                    continue
                if agent == me:
                    action, _ = policy.predict(obs)
                    env.step(int(action))
                else:
                    env.step(opponent(obs, rng))
            env.close()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--games", type=int, default=100, help="games as each side")
    parser.add_argument("--num-envs", type=int, default=32)
    parser.add_argument("--agent", type=json.loads, default={}, help="agent overrides (JSON)")
    args = parser.parse_args()
    runs = tempfile.mkdtemp(prefix="alphazero_ttt_")
    start = time.time()
    result = shoal.train(
        "alphazero",
        "tictactoe",
        seed=args.seed,
        total_steps=10**9,
        agent=args.agent,
        run={
            "max_time": args.minutes * 60,
            "num_envs": args.num_envs,
            "runs_dir": runs,
            "eval_episodes": 0,
            "log_interval": 2000,
        },
    )
    trained = time.time() - start
    policy = shoal.load(result.run_dir)
    metrics = pathlib.Path(result.run_dir) / "metrics.jsonl"
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    last = rows[-1] if rows else {}
    print(f"trained {trained:.0f} s (budget {args.minutes:g} min), seed {args.seed}")
    print(
        f"agent steps {last.get('env_steps')}, player episodes {last.get('episodes')}, "
        f"positions played {last.get('replay_inserted')}, gradient steps {last.get('updates')}"
    )
    t = time.time()
    versus_perfect = play(policy, perfect_move, args.games, args.seed)
    print(
        f"vs minimax ({args.games} games as each side): {versus_perfect} ({time.time() - t:.0f} s)"
    )
    versus_random = play(policy, random_move, args.games, args.seed)
    print(f"vs random ({args.games} games as each side): {versus_random}")
    print(
        json.dumps(
            {
                "seed": args.seed,
                "minutes": args.minutes,
                "trained_s": trained,
                "vs_minimax": versus_perfect,
                "vs_random": versus_random,
            }
        )
    )


if __name__ == "__main__":
    main()
