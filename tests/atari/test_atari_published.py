"""The Atari report at 10M frames: shoal's score beside the scores published at 10M frames."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import atari_learning
import atari_published


def _args(env: str) -> argparse.Namespace:
    return argparse.Namespace(
        env=env, algo="ppo", extra=[], budget_minutes=600, target=18.0, episodes=30
    )


def test_the_breakout_report_puts_the_score_at_10m_frames_beside_the_published_ones():
    Point = atari_learning.Point
    points = [Point(60, 5_000_000, 12.0, 3.0, 30), Point(170, 10_002_048, 40.5, 9.25, 30)]
    table = atari_learning.report(_args("ALE/Breakout-v5"), {0: points}, [])
    assert "| shoal seed 0 | 40.5 ± 9.2 | 10.0M | this run | no-op starts |" in table
    assert "| Rainbow (published) | 41.9 | 10M |" in table
    assert "sticky actions 0.25" in table


def test_a_run_short_of_10m_frames_shows_its_newest_point_before_them():
    Point = atari_learning.Point
    points = [Point(60, 4_000_000, -3.0, 1.0, 30), Point(120, 12_000_000, 19.0, 1.0, 30)]
    table = atari_learning.report(_args("ALE/Pong-v5"), {1: points}, [])
    assert "| shoal seed 1 | -3.0 ± 1.0 | 4.0M |" in table


def test_a_game_nobody_published_gets_no_comparison():
    assert atari_published.published_rows("Zaxxon") == []
    table = atari_learning.report(_args("ALE/Zaxxon-v5"), {0: []}, [])
    assert "At 10M frames" not in table


def test_dopamine_means_are_over_the_seeds_of_the_tenth_iteration():
    records = [
        {"Iteration": 9, "Value": 10.0, "Agent": "DQN"},
        {"Iteration": 9, "Value": 20.0, "Agent": "DQN"},
        {"Iteration": 8, "Value": 99.0, "Agent": "DQN"},
        {"Iteration": 9, "Value": 99.0, "Agent": "Rainbow"},
    ]
    assert atari_published.dopamine_mean(records, "DQN") == 15.0
    with pytest.raises(ValueError):
        atari_published.dopamine_mean(records, "IQN")
