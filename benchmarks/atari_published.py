"""Scores other frameworks publish at 10M frames, for the Atari report's comparison row.

The Atari issue asks for shoal's score at 10M frames beside "the score the peers publish at
10M frames". CleanRL and Sample Factory publish their Atari curves as Weights & Biases
reports (not reachable from the machines these benchmarks run on) and, in text, only final
scores: CleanRL's `ppo_atari` after 10M agent steps (40M frames), Sample Factory's APPO
after 2B frames. The one set of numbers published per million frames that we found is
Dopamine's baseline data (google/dopamine, `baselines/atari/data/<game>.json`): for each
agent and seed, the mean return of the training episodes of each iteration of 1M frames.
Iteration 9 is the tenth, frames 9M-10M. Its protocol differs from shoal's no-op scoring:
sticky actions (p = 0.25), training episodes with epsilon 0.01 (Dopamine's defaults), so the
report prints them as context, each with its source and protocol, not as a like-for-like peer.

The numbers below are the means over Dopamine's five seeds at iteration 9, read from the JSON
files at google/dopamine commit 5873f54 (2026-03-24); `--check` recomputes them from a copy.
"""

from __future__ import annotations

from dataclasses import dataclass

DOPAMINE = "Dopamine baselines (google/dopamine baselines/atari/data, iteration 9 = 9M-10M frames)"
DOPAMINE_PROTOCOL = "training episodes, sticky actions 0.25, 5 seeds"


@dataclass(frozen=True)
class Published:
    agent: str
    score: float
    frames: int
    source: str
    protocol: str


def _dopamine(agent: str, score: float) -> Published:
    return Published(agent, score, 10_000_000, DOPAMINE, DOPAMINE_PROTOCOL)


# game (as atari_learning.game_of names it) -> published figures at 10M frames
AT_10M_FRAMES: dict[str, list[Published]] = {
    "Pong": [_dopamine("DQN", -4.9), _dopamine("Rainbow", 15.2), _dopamine("IQN", 15.2)],
    "Breakout": [_dopamine("DQN", 21.5), _dopamine("Rainbow", 41.9), _dopamine("IQN", 102.7)],
    "SpaceInvaders": [
        _dopamine("DQN", 663.3),
        _dopamine("Rainbow", 743.7),
        _dopamine("IQN", 823.4),
    ],
    "Seaquest": [_dopamine("DQN", 299.6), _dopamine("Rainbow", 1641.1), _dopamine("IQN", 4410.7)],
    "BeamRider": [_dopamine("DQN", 869.3), _dopamine("Rainbow", 5982.6), _dopamine("IQN", 3986.1)],
}


def dopamine_mean(records: list[dict[str, object]], agent: str, iteration: int = 9) -> float:
    """The mean over seeds of one agent's value at one iteration of a Dopamine data file."""
    values = [
        float(str(r["Value"]))
        for r in records
        if r["Agent"] == agent and r["Iteration"] == iteration
    ]
    if not values:
        raise ValueError(f"no {agent!r} rows at iteration {iteration}")
    return sum(values) / len(values)


def published_rows(game: str) -> list[str]:
    """Markdown table rows (agent, score, frames, source, protocol) for one game, or none."""
    return [
        f"| {p.agent} (published) | {p.score:.1f} | {p.frames / 1e6:.0f}M | {p.source} | "
        f"{p.protocol} |"
        for p in AT_10M_FRAMES.get(game, [])
    ]


if __name__ == "__main__":
    # python benchmarks/atari_published.py --check DIR: recompute the table from a copy of
    # Dopamine's baselines/atari/data directory.
    import argparse
    import json
    from pathlib import Path

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", type=Path, required=True, help="Dopamine's data directory")
    data_dir = parser.parse_args().check
    for game, figures in AT_10M_FRAMES.items():
        records = json.loads((data_dir / f"{game.lower()}.json").read_text())
        for figure in figures:
            mean = dopamine_mean(records, figure.agent)
            status = "ok" if abs(mean - figure.score) < 0.05 else f"differs ({mean:.1f})"
            print(f"{game} {figure.agent}: {figure.score} {status}")
