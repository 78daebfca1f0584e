"""Self-play with a league: the league's bookkeeping against hand computations, the league
policy's seats and opponents, PPO's loss blind to the opponent's rows, the rollout MCTS
opponent, and short runs inline and on ray."""

from __future__ import annotations

import copy
import io
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

pytest.importorskip("pettingzoo.classic")

import shoal
from shoal.agents.base import Policy, PolicyStep, StepInputs
from shoal.agents.common.league import (
    CURRENT,
    League,
    elo_expected,
    elo_from_score,
    elo_update,
    pfsp_weights,
)
from shoal.agents.common.league_policy import LeaguePolicy
from shoal.agents.ppo import AGENT as PPO
from shoal.agents.ppo import PPOConfig
from shoal.data import Layout
from shoal.envs.board_games import ConnectFour, TicTacToe
from shoal.envs.board_players import RandomPlayer, RolloutMCTS, play_match
from shoal.envs.config import EnvConfig
from shoal.envs.registry import make_vector_env, resolve_env, spec_of_source
from shoal.errors import ConfigError
from shoal.run.checkpoints import load_latest
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.rows import Acting
from shoal.telemetry import read_metrics


def weights(value: float) -> dict[str, torch.Tensor]:
    return {"w": torch.tensor([value])}


# --- the league's bookkeeping -------------------------------------------------------------


def test_a_copy_is_kept_every_interval_versions_and_the_oldest_leaves_first():
    league = League(size=3, interval=10)
    kept = [v for v in range(46) if league.add_version(weights(v), v) is not None]
    assert kept == [0, 10, 20, 30, 40]
    assert [league.versions[m] for m in league.snapshots] == [20, 30, 40]  # capped at 3
    assert league.members == [*league.snapshots, CURRENT]
    assert [float(league.snapshots[m]["w"]) for m in league.snapshots] == [20.0, 30.0, 40.0]
    # Versions an actor skipped (ray): a copy at the first version `interval` after the last.
    skipping = League(size=8, interval=10)
    versions = (0, 3, 12, 15, 21, 25, 33)
    kept = [v for v in versions if skipping.add_version(weights(v), v) is not None]
    assert kept == [0, 12, 25]
    # A copy is a copy: changing the weights afterwards leaves it alone.
    w = weights(1.0)
    league = League(size=2, interval=1)
    member = league.add_version(w, 0)
    w["w"] += 5
    assert float(league.snapshots[member]["w"]) == 1.0


def test_pfsp_weights_match_a_hand_computation():
    # f(x) = (1 - x)^2 for learner scores 0.25, 0.5, 1, 0: 0.5625, 0.25, 0, 1 (sum 1.8125).
    probs = pfsp_weights(np.array([0.25, 0.5, 1.0, 0.0]), 2.0)
    np.testing.assert_allclose(probs, [0.5625 / 1.8125, 0.25 / 1.8125, 0.0, 1.0 / 1.8125])
    np.testing.assert_allclose(pfsp_weights(np.ones(3), 2.0), [1 / 3] * 3)  # all beaten
    np.testing.assert_allclose(pfsp_weights(np.array([0.2, 0.6]), 1.0), [0.8 / 1.2, 0.4 / 1.2])

    league = League(size=4, interval=1, power=2.0, window=4)
    a = league.add_version(weights(0), 0)
    b = league.add_version(weights(1), 1)
    for score in (1.0, 0.0, 0.5, 1.0, 1.0):  # window 4: the first win drops out -> 0.625
        league.record(a, score)
    league.record(b, 0.0)
    # Scores: a 2.5/4, b 0, the current weights unplayed (1/2).
    np.testing.assert_allclose(league.scores(), [0.625, 0.0, 0.5])
    w = np.array([0.375**2, 1.0, 0.25])
    np.testing.assert_allclose(league.probabilities(), w / w.sum())
    draws = [league.sample() for _ in range(4000)]
    assert abs(draws.count(b) / 4000 - w[1] / w.sum()) < 0.03

    uniform = League(size=4, interval=1, sampling="uniform")
    uniform.add_version(weights(0), 0)
    uniform.record(0, 1.0)
    np.testing.assert_allclose(uniform.probabilities(), [0.5, 0.5])


def test_elo_update_follows_the_formula():
    # E = 1 / (1 + 10^((1700 - 1500) / 400)) = 1 / (1 + sqrt(10)) = 0.240253...
    expected = 1.0 / (1.0 + math.sqrt(10.0))
    assert elo_expected(1500.0, 1700.0) == pytest.approx(expected)
    a, b = elo_update(1500.0, 1700.0, 1.0, k=32.0)
    assert a == pytest.approx(1500.0 + 32.0 * (1.0 - expected))
    assert b == pytest.approx(1700.0 - 32.0 * (1.0 - expected))
    a, b = elo_update(1600.0, 1600.0, 0.5, k=16.0)
    assert (a, b) == (1600.0, 1600.0)
    # A score of 3/4 is 400 log10(3) = 190.85 above the opponent; a sweep is bounded.
    assert elo_from_score(0.75, 100, 50.0) == pytest.approx(50.0 + 400 * math.log10(3.0))
    assert elo_from_score(1.0, 200) == pytest.approx(400 * math.log10(399.0))
    league = League(size=2, interval=1, k=16.0)
    m = league.add_version(weights(0), 0)
    league.record(m, 0.0)
    assert league.learner_rating == pytest.approx(-8.0)
    assert league.ratings[m] == pytest.approx(8.0)


# --- the league policy ----------------------------------------------------------------------


class ConstantPolicy(Policy):
    """Plays the action its network's weight holds; log_prob -weight."""

    def __init__(self, net: nn.Module) -> None:
        self.net = net

    def step(self, obs, state, inputs, mode) -> PolicyStep:
        value = float(self.net.w.detach())
        n = len(inputs.slot)
        return PolicyStep(np.full(n, int(value)), {"log_prob": np.full(n, -value, np.float32)})


class Weight(nn.Module):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor([value]))


def inputs_of(slots: np.ndarray, steps: int) -> StepInputs:
    n = len(slots)
    return StepInputs(
        np.zeros(n, bool), np.zeros(n, np.int64), np.zeros(n, np.float32), slots,
        np.full(n, steps, np.int64),
    )  # fmt: skip


def test_the_learner_plays_one_seat_alternating_and_a_league_member_the_other():
    net = Weight(1.0)
    league = League(size=4, interval=1, sampling="uniform", seed=3)
    policy = LeaguePolicy(ConstantPolicy(net), ConstantPolicy, league, 2, steps_per_version=10)
    slots = np.arange(4)  # two games of two players
    obs = np.zeros((4, 3), np.float32)
    out = policy.step(obs, {}, inputs_of(slots, 0), "train")  # version 0 kept (weight 1)
    np.testing.assert_array_equal(out.extras["learning"], [True, False, False, True])
    np.testing.assert_array_equal(out.action, [1, 1, 1, 1])  # the copy holds weight 1 too
    with torch.no_grad():
        net.w.fill_(5.0)
    out = policy.step(obs, {}, inputs_of(slots, 10), "train")  # version 1 (weight 5) kept
    assert sorted(league.versions.values()) == [0, 1]
    # Game 0 ends: the learner (seat 0) won; its next game is as seat 1.
    policy.observe(slots, np.array([1.0, -1.0, 0.0, 0.0], np.float32), np.array([1, 1, 0, 0]))
    assert sum(len(r) for r in league.results.values()) == 1
    assert [float(np.mean(r)) for r in league.results.values() if r] == [1.0]
    out = policy.step(obs, {}, inputs_of(slots, 11), "train")
    np.testing.assert_array_equal(out.extras["learning"], [False, True, False, True])
    # The learner's rows act with the current weights; the opponents' with their member's.
    assert out.action[1] == 5 and out.action[3] == 5
    for g, row in ((0, 0), (1, 2)):
        member = policy._opponent[g]
        want = 5 if member == CURRENT else float(league.snapshots[member]["w"])
        assert out.action[row] == want
        assert out.extras["log_prob"][row] == -want
    # Outside training the policy plays every seat itself.
    out = policy.step(obs, {}, inputs_of(slots, 11), "greedy")
    assert "learning" not in out.extras and (out.action == 5).all()


def test_self_play_league_is_refused_where_it_cannot_run(quiet_run):
    with pytest.raises(ConfigError, match="two or more players"):
        shoal.train(
            "ppo", "CartPole-v1", total_steps=64, agent={"self_play": "league"},
            run={**quiet_run, "num_envs": 1},
        )  # fmt: skip
    with pytest.raises(ValueError, match="use_lstm"):
        PPOConfig(self_play="league", use_lstm=True)
    with pytest.raises(ValueError, match="league_sampling"):
        PPOConfig(league_sampling="elo")


# --- PPO learns only from the learner's rows -------------------------------------------------


def collect_league_unroll(length: int = 48):
    source = resolve_env("connect_four")
    spec = spec_of_source(source)
    env = make_vector_env(source, spec, EnvConfig(), 4, 0)  # 4 games, 8 rows
    config = PPOConfig(
        self_play="league", league_interval=1, torso="mlp", unroll_length=length,
        minibatch_size=64, num_epochs=2,
    )  # fmt: skip
    net = PPO.make_networks(spec, config)
    policy = PPO.make_policy(spec, config, net, 0, Layout(envs_per_actor=8))
    collector = UnrollCollector(env, Acting(policy, spec), length)
    unroll = collector.collect()
    env.close()
    return spec, config, net, unroll


def updated_weights(spec, config, net, unroll):
    learner = PPO.make_learner(spec, config, copy.deepcopy(net))
    torch.manual_seed(0)
    learner.update(unroll, 0.0)
    return learner.weights()


def test_the_opponents_rows_never_enter_the_loss():
    spec, config, net, unroll = collect_league_unroll()
    learning, active = unroll.extras["learning"], unroll.extras["active"]
    assert (~learning).any() and (learning & active).any() and unroll.terminated.any()
    base = updated_weights(spec, config, net, unroll)

    # What the opponent's seat did and received: other actions, log-probs and rewards.
    other = copy.deepcopy(unroll)
    not_learned = ~(learning & active)
    rng = np.random.default_rng(1)
    other.actions[not_learned] = rng.integers(7, size=int(not_learned.sum()))
    other.extras["log_prob"][not_learned] = rng.normal(size=int(not_learned.sum()))
    other.rewards[~learning] = rng.normal(size=int((~learning).sum()))
    for key, value in updated_weights(spec, config, net, other).items():
        torch.testing.assert_close(value, base[key], rtol=0, atol=0)

    # The check can fail: a learner's move changed changes the update.
    moved = copy.deepcopy(unroll)
    t, b = np.argwhere(learning & active)[0]
    moved.extras["log_prob"][t, b] -= 1.0
    changed = updated_weights(spec, config, net, moved)
    assert any(not torch.equal(changed[k], base[k]) for k in base)


# --- the rollout MCTS opponent ---------------------------------------------------------------


def connect_four(mover: list[tuple[int, int]], opponent: list[tuple[int, int]]) -> ConnectFour:
    board = np.zeros((6, 7), np.int8)
    for r, c in mover:
        board[r, c] = 1
    for r, c in opponent:
        board[r, c] = -1
    return ConnectFour(board)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rollout_mcts_takes_a_win_in_one_and_blocks_a_loss_in_one(seed):
    # Bottom row is row 5. The mover has three in a row: column 3 wins.
    win = connect_four([(5, 0), (5, 1), (5, 2)], [(4, 0), (4, 1), (5, 6)])
    assert RolloutMCTS(200, seed).act(win) == 3
    # The opponent has three in a row on the bottom: only column 3 stops it.
    block = connect_four([(4, 0), (4, 1), (5, 6)], [(5, 0), (5, 1), (5, 2)])
    assert RolloutMCTS(200, seed).act(block) == 3
    # A win to the side (column 6, vertical) rather than the block elsewhere.
    vertical = connect_four([(5, 6), (4, 6), (3, 6)], [(5, 0), (5, 1), (4, 0)])
    assert RolloutMCTS(200, seed).act(vertical) == 6


def test_rollout_mcts_never_loses_tictactoe_to_random():
    result = play_match(RolloutMCTS(200, seed=0), RandomPlayer(1), TicTacToe, 20)
    assert result.games == 20 and result.losses == 0
    assert result.wins >= 15


def test_play_match_alternates_the_first_player():
    class First:
        def act(self, game):
            return int(np.flatnonzero(game.legal_actions())[0])

    # Two players who both fill the first free cell: the first mover wins tic-tac-toe
    # (cells 0, 2, 4, 6 against 1, 3, 5: the diagonal 2-4-6), so each side wins its games
    # as first player.
    result = play_match(First(), First(), TicTacToe, 6)
    assert (result.wins, result.draws, result.losses) == (3, 0, 3)


# --- runs -------------------------------------------------------------------------------------


def test_a_short_inline_run_keeps_a_league_and_reports_it(quiet_run):
    result = shoal.train(
        "ppo", "connect_four", seed=0, total_steps=12_288,
        agent={"self_play": "league", "league_interval": 1, "league_size": 5},
        run={**quiet_run, "num_envs": 4, "log_interval": 4096},
    )  # fmt: skip
    rows = read_metrics(Path(result.run_dir) / "metrics.jsonl")
    last = rows[-1]
    assert last["league_size"] == 5  # 12 updates, a copy each, capped at 5
    assert last["league_games"] > 100
    assert 0.0 <= last["league_score"] <= 1.0


def test_a_league_goes_through_a_checkpoint_file_and_continues_alike():
    league = League(size=3, interval=2, seed=5)
    for version in range(0, 9):
        league.add_version(weights(float(version)), version)
    for game in range(30):
        league.record(league.sample(), float(game % 3 == 0))
    saved = io.BytesIO()
    torch.save(league.state_dict(), saved)
    saved.seek(0)
    resumed = League(size=3, interval=2, seed=99)
    resumed.load_state_dict(torch.load(saved, weights_only=True))  # plain values only
    assert resumed.members == league.members and resumed.versions == league.versions
    assert resumed.ratings == league.ratings and resumed.games == league.games == 30
    np.testing.assert_array_equal(resumed.probabilities(), league.probabilities())
    assert [resumed.sample() for _ in range(20)] == [league.sample() for _ in range(20)]
    for m in league.snapshots:
        assert torch.equal(resumed.snapshots[m]["w"], league.snapshots[m]["w"])
    # The next copy comes `interval` versions after the last one kept, in both.
    assert (
        resumed.add_version(weights(9.0), 9) is None and league.add_version(weights(9.0), 9) is None
    )
    assert resumed.add_version(weights(10.0), 10) == league.add_version(weights(10.0), 10)


def test_a_resumed_run_continues_its_league(quiet_run):
    agent = {"self_play": "league", "league_interval": 1, "league_size": 5}
    run = {**quiet_run, "num_envs": 4, "log_interval": 4096}  # 1,024 steps an update
    first = shoal.train("ppo", "connect_four", seed=0, total_steps=8192, agent=agent, run=run)
    before = read_metrics(Path(first.run_dir) / "metrics.jsonl")[-1]
    resumed = shoal.train(resume=first.run_dir, run={"total_steps": 12_288})
    after = read_metrics(Path(resumed.run_dir) / "metrics.jsonl")[-1]
    assert before["env_steps"] == 8192 and after["env_steps"] == 12_288
    # A new league would hold the 4 copies made since the resume and count only their games.
    assert after["league_size"] == 5
    assert after["league_games"] > before["league_games"] > 100
    policies = load_latest(Path(resumed.run_dir) / "checkpoints", "ppo")["policies"]
    (state,) = [v["state"] for k, v in policies.items() if k.startswith("league/")]
    assert sorted(state["versions"].values()) == [7, 8, 9, 10, 11]


@pytest.mark.integration
@pytest.mark.distributed
def test_a_short_ray_run_keeps_a_league_on_each_actor(ray_cluster, quiet_run):
    result = shoal.train(
        "ppo", "connect_four", seed=0, total_steps=16_384,
        agent={"self_play": "league", "league_interval": 2, "league_size": 5},
        run={**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 4, "log_interval": 4096},
    )  # fmt: skip
    rows = read_metrics(Path(result.run_dir) / "metrics.jsonl")
    last = rows[-1]
    assert last["league_size"] >= 2
    assert last["league_games"] > 100
    assert 0.0 <= last["league_score"] <= 1.0


def test_a_member_dropped_during_its_games_finishes_them():
    net = Weight(2.0)
    league = League(size=1, interval=1, sampling="uniform", seed=0)
    policy = LeaguePolicy(ConstantPolicy(net), ConstantPolicy, league, 2, steps_per_version=1)
    slots = np.arange(8)
    obs = np.zeros((8, 3), np.float32)
    policy.step(obs, {}, inputs_of(slots, 0), "train")
    old = {g: m for g, m in policy._opponent.items() if m != CURRENT}
    assert old  # some of the four games drew the copy of version 0
    with torch.no_grad():
        net.w.fill_(6.0)
    out = policy.step(obs, {}, inputs_of(slots, 1), "train")  # version 1 replaces version 0
    assert set(league.snapshots) == {1}
    for g in old:
        opponent_row = g * 2 + (1 - policy._seat[g])
        assert out.action[opponent_row] == 2  # still the dropped copy's weights


def test_keep_first_keeps_the_founding_copy_when_the_league_is_full():
    league = League(size=3, interval=1, keep_first=True)
    for v in range(6):
        league.add_version(weights(v), v)
    assert [league.versions[m] for m in league.snapshots] == [0, 4, 5]


def test_board_cnn_takes_channels_last_boards_and_sees_where_stones_are():
    import gymnasium as gym

    from shoal.nets.torso import make_torso

    space = gym.spaces.Box(0, 1, (6, 7, 2), np.int8)
    torso = make_torso(space, "board_cnn")
    boards = np.zeros((2, 6, 7, 2), np.int8)
    boards[1, 5, 3, 0] = 1
    out = torso(torch.as_tensor(boards))
    assert out.shape == (2, torso.out_features)
    assert not torch.equal(out[0], out[1])
    with pytest.raises(ConfigError, match="channels-last"):
        make_torso(gym.spaces.Box(0, 1, (42,), np.int8), "board_cnn")
