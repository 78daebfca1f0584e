"""`shoal eval --protocol atari`: no-op starts, a seed per episode, human-normalised scores."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import shoal
from shoal.cli import main
from shoal.envs.atari_scores import ATARI_57, game_scores, human_normalized
from shoal.envs.config import EnvConfig
from shoal.evaluation_protocol import evaluate_atari, protocol_env_config

pytest.importorskip("ale_py")


def test_the_table_holds_the_57_games_under_their_ale_names():
    import ale_py

    gym.register_envs(ale_py)
    assert len(ATARI_57) == 57
    assert all(f"ALE/{game}-v5" in gym.envs.registry for game in ATARI_57)
    # Rows checked by hand against DQN Zoo's atari_data.py (the table's stated source).
    assert game_scores("Pong") == type(game_scores("Pong"))("Pong", -20.7, 14.6)
    assert (game_scores("Breakout").random, game_scores("Breakout").human) == (1.7, 30.5)
    assert (game_scores("VideoPinball").random, game_scores("VideoPinball").human) == (
        16256.9,
        17667.9,
    )
    assert (game_scores("Skiing").random, game_scores("Skiing").human) == (-17098.1, -4336.9)
    assert all(game_scores(g).human > game_scores(g).random for g in ATARI_57)
    assert game_scores("Adventure") is None and human_normalized("Adventure", 1.0) is None


def test_human_normalised_scores_by_hand():
    assert human_normalized("Pong", 14.6) == pytest.approx(1.0)
    assert human_normalized("Pong", -20.7) == pytest.approx(0.0)
    assert human_normalized("Breakout", 30.0) == pytest.approx((30.0 - 1.7) / (30.5 - 1.7))
    assert human_normalized("Alien", 1000.0) == pytest.approx(772.2 / 6899.9)


def test_the_protocol_overrides_the_runs_training_settings():
    trained = EnvConfig(
        noop_max=0, max_frames=4_000, sticky_actions=True, terminal_on_life_loss=True
    )
    config = protocol_env_config(trained)
    assert (config.noop_max, config.max_frames) == (30, 108_000)
    assert not config.sticky_actions and not config.terminal_on_life_loss
    assert config.backend == "gymnasium" and config.full_action_space == trained.full_action_space


@pytest.fixture
def pong_run(quiet_run):
    # Sticky actions and a short frame cap while training: the protocol must not keep them.
    return shoal.train(
        "ppo",
        "ALE/Pong-v5",
        total_steps=128,
        run={**quiet_run, "num_envs": 2, "eval_episodes": 0},
        agent={"unroll_length": 64, "minibatch_size": 64},
        env_config={"sticky_actions": True, "max_frames": 400},
    ).run_dir


def test_a_pong_run_under_the_protocol(pong_run, capsys):
    result = evaluate_atari(pong_run, episodes=3, deterministic=True, seed=100)
    assert [e.seed for e in result.episodes] == [100, 101, 102]
    assert result.game == "Pong" and result.mode == "greedy"
    assert result.settings == {"max_frames": [400, 108_000], "sticky_actions": [True, False]}
    for episode in result.episodes:
        # Whole games, not the run's 400-frame cap: Pong ends at 21 points, well after 100 steps.
        assert 400 < episode.frames <= 108_000 and episode.frames == 4 * episode.agent_steps
        assert not episode.capped and -21 <= episode.score <= 21
    # The fixture's human-normalised score, by hand: Pong's random -20.7, human 14.6.
    mean = sum(e.score for e in result.episodes) / 3
    assert result.human_normalized_mean == pytest.approx((mean + 20.7) / 35.3)
    for episode in result.episodes:
        assert episode.human_normalized == pytest.approx((episode.score + 20.7) / 35.3)

    # Each episode is its seed's alone: replayed on its own, episode 101 scores the same.
    alone = evaluate_atari(pong_run, episodes=1, deterministic=True, seed=101)
    (again,) = alone.episodes
    assert (again.score, again.agent_steps) == (
        result.episodes[1].score,
        result.episodes[1].agent_steps,
    )


def test_the_command_prints_seeds_and_both_scores_and_keeps_them(pong_run, capsys):
    argv = ["eval", str(pong_run), "--protocol", "atari", "--episodes", "2", "--seed", "5"]
    assert main([*argv, "--deterministic"]) == 0
    out = capsys.readouterr().out
    assert "no-op starts" in out and "seeds 5..6" in out and "human-normalised" in out
    assert "random -20.7, human 14.6" in out
    assert "the run trained with sticky_actions True; the protocol uses False" in out
    (record,) = (pong_run / "evaluations").iterdir()
    kept = json.loads(record.read_text())
    assert [e["seed"] for e in kept["episodes"]] == [5, 6]
    scores = np.array([e["score"] for e in kept["episodes"]])
    assert kept["human_normalized_mean"] == pytest.approx((scores.mean() + 20.7) / 35.3)


def test_the_protocol_refuses_a_run_that_is_not_atari(quiet_run, capsys):
    run = shoal.train("ppo", "CartPole-v1", total_steps=64, run={**quiet_run, "eval_episodes": 0})
    assert main(["eval", str(run.run_dir), "--protocol", "atari"]) == 2
    err = capsys.readouterr().err
    assert "--protocol atari evaluates Atari games" in err and "CartPole-v1" in err
    assert "Traceback" not in err and not (run.run_dir / "evaluations").exists()
