"""The PettingZoo family: `pettingzoo:MODULE` ids, agents as rows, agents that join and leave."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

with warnings.catch_warnings():  # pettingzoo.test imports envs by the API 1.27 deprecates
    warnings.simplefilter("ignore", DeprecationWarning)
    from pettingzoo.test import parallel_api_test

from shoal.cli import main
from shoal.envs.config import EnvConfig
from shoal.envs.registry import make_vector_env, resolve_env, spec_of_source
from shoal.envs.spec import EnvSpec
from shoal.envs.toy_agents import CueMatch
from shoal.errors import EnvError

TOY = "pettingzoo:shoal.envs.toy_agents"
SPREAD = "pettingzoo:mpe.simple_spread_v3"


def _vector(env_id: str, games: int, seed: int = 0, **config):
    env_config = EnvConfig(**config)
    source = resolve_env(env_id, env_config)
    spec = spec_of_source(source)
    return make_vector_env(source, spec, env_config, games, seed), spec


def test_the_toy_env_passes_pettingzoos_parallel_api_test():
    parallel_api_test(CueMatch(), num_cycles=40)


def test_simple_spread_passes_pettingzoos_parallel_api_test():
    mpe2 = pytest.importorskip("mpe2.simple_spread_v3")
    parallel_api_test(mpe2.parallel_env(), num_cycles=30)


def test_spaces_are_one_agents_and_the_agent_id_is_a_one_hot_of_its_row():
    pytest.importorskip("mpe2")
    spec = spec_of_source(resolve_env(SPREAD))
    assert spec.num_agents == 3 and spec.rows_per_env == 3
    assert spec.observation_space.shape == (18,) and spec.action_space.n == 5
    env, spec = _vector(SPREAD, games=2, agent_id=True)
    assert spec.observation_space.shape == (21,) and env.num_envs == 6
    obs = env.reset()
    assert obs.shape == (6, 21)
    np.testing.assert_array_equal(obs[:, 18:], np.tile(np.eye(3, dtype=np.float32), (2, 1)))
    env.close()


def test_mpe_and_mpe2_name_the_same_env():
    pytest.importorskip("mpe2")
    a = spec_of_source(resolve_env(SPREAD))
    b = spec_of_source(resolve_env("pettingzoo:mpe2.simple_spread_v3"))
    assert a.observation_space == b.observation_space and a.action_space == b.action_space


def test_an_unknown_module_and_agents_of_different_spaces_are_clear_errors():
    with pytest.raises(EnvError, match=r"Unknown PettingZoo env .*butterfly\.pistonball_v6"):
        resolve_env("pettingzoo:no_such_family.no_env")
    with pytest.raises(EnvError, match="neither a parallel_env"):
        resolve_env("pettingzoo:shoal.envs.toy")
    pytest.importorskip("mpe2")
    with pytest.raises(EnvError, match=r"different observation spaces.*pad_observations_v0"):
        spec_of_source(resolve_env("pettingzoo:mpe.simple_speaker_listener_v4"))


def test_envs_command_shows_the_agents(capsys):
    assert main(["envs", TOY]) == 0
    out = capsys.readouterr().out
    assert "family:             pettingzoo" in out and "agents (rows):      3" in out
    assert main(["envs", "pettingzoo:nothing.here"]) == 2


def test_the_spec_keeps_its_number_of_agents_through_a_checkpoint():
    spec = spec_of_source(resolve_env(TOY))
    assert EnvSpec.from_data(spec.to_data()).num_agents == 3
    old = {k: v for k, v in spec.to_data().items() if k != "num_agents"}
    assert EnvSpec.from_data(old).num_agents == 0  # a file written before the field


def test_games_are_seeded_per_game_and_reproducible():
    def trace(seed: int) -> list[np.ndarray]:
        env, _ = _vector(TOY, games=2, seed=seed)
        observations = [env.reset()]
        for _ in range(12):
            observations.append(env.step(np.zeros(env.num_envs, np.int64)).obs)
        env.close()
        return observations

    a, b, c = trace(3), trace(3), trace(4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))
    assert not np.array_equal(a[0][:3], a[0][3:])  # game 1 is seeded apart from game 0


def test_agents_that_join_and_leave_are_rows_that_turn_active_and_inactive():
    env, _ = _vector(TOY, games=2)
    obs = env.reset()
    # Agent 2 joins after step 2; agent 0 leaves (terminated) after step 3; the rest are
    # truncated after step 8, when both games restart.
    np.testing.assert_array_equal(env.active, [1, 1, 0, 1, 1, 0])
    np.testing.assert_array_equal(obs[[2, 5]], 0.0)  # no agent there: zeros
    actions = np.zeros(6, np.int64)
    steps = [env.step(actions) for _ in range(8)]
    np.testing.assert_array_equal(steps[1].reward[[2, 5]], 0.0)
    np.testing.assert_array_equal(env.active, [1, 1, 0, 1, 1, 0])  # both games restarted
    # Agent 0's episode ended by termination at step 3, with a return counted once.
    assert steps[2].terminated[[0, 3]].all() and not steps[2].terminated[[1, 2, 4, 5]].any()
    assert len(steps[2].episode_returns) == 2 and steps[2].episode_lengths == [3, 3]
    for step in steps[3:7]:
        assert not (step.terminated | step.truncated).any()
        np.testing.assert_array_equal(step.reward[[0, 3]], 0.0)  # absent: no reward
    last = steps[7]
    np.testing.assert_array_equal(last.truncated, [0, 1, 1, 0, 1, 1])
    assert sorted(last.final_obs) == [1, 2, 4, 5]
    assert sorted(last.episode_lengths) == [6, 6, 8, 8]
    # Per game: the summed return is the sum of its agents' returns.
    team = last.episode_metrics["team_return"]
    per_agent = [last.episode_metrics[f"return_agent_{i}"] for i in range(3)]
    np.testing.assert_allclose(team, np.sum(per_agent, axis=0))
    rewards = np.sum([s.reward for s in steps], axis=0)
    np.testing.assert_allclose(team, [rewards[:3].sum(), rewards[3:].sum()])
    env.close()


def test_vector_env_subprocess_is_refused_with_what_to_do_instead():
    with pytest.raises(EnvError, match=r"--env\.vector subprocess is not supported"):
        _vector(TOY, games=2, vector="subprocess")


def test_a_video_of_a_pettingzoo_game_is_refused_with_the_reason():
    from shoal.envs.screens import make_screen_env

    with pytest.raises(EnvError, match=r"many agents.*shoal eval"):
        make_screen_env(TOY)
