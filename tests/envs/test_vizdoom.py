"""ViZDoom scenarios through the registry: spaces, seeding, reset and step, close, vector envs."""

from __future__ import annotations

import os
import warnings

import gymnasium as gym
import numpy as np
import psutil
import pytest
from gymnasium.utils.env_checker import check_env

pytest.importorskip("vizdoom")

from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec, make_env, make_vector_env, resolve_env
from shoal.envs.vizdoom import SCENARIOS, VizDoomEnv, _action_table, _resized
from shoal.errors import EnvError

GREY_VARIABLES = EnvConfig(vizdoom_grey=True, vizdoom_game_variables=True)


def test_basic_has_sample_factorys_spaces_and_frames_per_step() -> None:
    source = resolve_env("vizdoom:basic")
    assert (source.family, source.backend, source.frames_per_step) == ("vizdoom", "vizdoom", 4)
    spec = env_spec("vizdoom:basic")
    # 128x72 RGB channels-first; no-op, left, right, attack (SF's Discrete(1 + 3))
    assert spec.observation_space == gym.spaces.Box(0, 255, (3, 72, 128), np.uint8)
    assert spec.action_space == gym.spaces.Discrete(4)


def test_grey_screens_and_game_variables_make_a_dict_observation() -> None:
    env = make_env("vizdoom:defend_the_center", GREY_VARIABLES)
    try:
        screen, variables = env.observation_space["screen"], env.observation_space["variables"]
        assert screen == gym.spaces.Box(0, 255, (1, 72, 128), np.uint8)
        assert variables.shape == (2,) and variables.dtype == np.float32  # ammo, health
        obs, _ = env.reset(seed=0)
        assert obs["screen"].shape == (1, 72, 128) and obs["screen"].std() > 0
        assert obs["variables"].tolist() == pytest.approx([0.26, 1.0])  # 26 bullets, 100 health
        assert env.render().shape == (120, 160, 3)
    finally:
        env.close()


@pytest.mark.parametrize("config", [EnvConfig(), GREY_VARIABLES], ids=["screen", "dict"])
def test_check_env_passes(config: EnvConfig) -> None:
    env = make_env("vizdoom:basic", config)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped, skip_render_check=True)
            check_env(env, skip_render_check=True)
    finally:
        env.close()


def _trajectory(env: gym.Env, seed: int, steps: int = 40) -> list[tuple[bytes, float]]:
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(0)
    out = [(obs.tobytes(), 0.0)]
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(int(rng.integers(4)))
        out.append((obs.tobytes(), reward))
        if terminated or truncated:
            obs, _ = env.reset()
    return out


def test_seeding_reproduces_an_episode_and_another_seed_changes_it() -> None:
    env = make_env("vizdoom:basic", EnvConfig(vizdoom_width=32, vizdoom_height=24))
    try:
        first = _trajectory(env, 3)
        assert _trajectory(env, 3) == first  # the same env object, seeded again
        assert _trajectory(env, 4) != first  # the monster stands elsewhere
    finally:
        env.close()


def test_frame_skip_sums_rewards_and_the_timeout_truncates() -> None:
    env = VizDoomEnv("basic", frame_skip=4, width=32, height=24)
    try:
        env.reset(seed=0)
        steps = [env.step(0) for _ in range(75)]  # no-op for basic's 300-tic timeout
        assert [s[1] for s in steps] == [-4.0] * 75  # living reward -1 a tic, 4 tics a step
        assert [s[2:4] for s in steps] == [(False, False)] * 74 + [(False, True)]
    finally:
        env.close()


def test_death_terminates() -> None:
    env = VizDoomEnv("health_gathering", width=32, height=24)  # health drains on the acid floor
    try:
        env.reset(seed=0)
        for _ in range(2100 // 4):
            _, reward, terminated, truncated, _ = env.step(0)
            if terminated or truncated:
                break
        assert terminated and not truncated and reward < -90  # the death penalty of 100
    finally:
        env.close()


def test_close_stops_the_game() -> None:
    env = VizDoomEnv("basic", width=32, height=24)
    env.reset(seed=0)
    env.close()
    assert not env._game.is_running()


def test_screens_are_resized_to_the_nearest_pixel_as_sample_factory_does() -> None:
    # SF's doom envs resize with its ResizeWrapper's default, nearest pixel: every output pixel
    # is the source pixel at floor(y * H / h), floor(x * W / w), no blending of neighbours.
    rgb = np.random.default_rng(0).integers(0, 256, (120, 160, 3), dtype=np.uint8)
    screen = _resized(rgb, (128, 72), grey=False)
    rows = np.arange(72) * 120 // 72
    cols = np.arange(128) * 160 // 128
    assert screen.shape == (3, 72, 128) and screen.flags.c_contiguous
    np.testing.assert_array_equal(screen, rgb[rows[:, None], cols[None, :]].transpose(2, 0, 1))


def test_action_table_combines_buttons_and_splits_deltas() -> None:
    assert _action_table([True, True], 1, 10.0) == [[0, 0], [1, 0], [0, 1]]
    assert _action_table([True, True], 2, 10.0)[-1] == [1, 1]
    assert _action_table([True, False], 1, 5.0) == [[0, 0], [1, 0], [0, 5.0], [0, -5.0]]


def test_unknown_and_sample_factory_only_scenarios_say_what_to_do() -> None:
    with pytest.raises(EnvError, match="Did you mean vizdoom:basic"):
        resolve_env("vizdoom:basik")
    assert SCENARIOS["battle"].sample_factory_only
    with pytest.raises(EnvError, match="ship only with Sample Factory"):
        resolve_env("vizdoom:battle")
    with pytest.raises(ValueError, match="vizdoom_frame_skip"):
        EnvConfig(vizdoom_frame_skip=0)
    with pytest.raises(EnvError, match="cannot share"):
        resolve_env("vizdoom:basic", EnvConfig(vizdoom_game_variables=True, vector="subprocess"))


def test_a_config_file_path_is_an_id(tmp_path) -> None:
    import shutil
    from pathlib import Path

    import vizdoom

    scenarios = Path(vizdoom.scenarios_path)
    shutil.copy(scenarios / "basic.wad", tmp_path)  # a .cfg names its WAD relative to itself
    path = tmp_path / "my_basic.cfg"
    text = (scenarios / "basic.cfg").read_text()
    path.write_text(text.replace("MOVE_RIGHT", ""))
    assert env_spec(f"vizdoom:{path}").action_space == gym.spaces.Discrete(3)
    with pytest.raises(EnvError, match="does not exist"):
        resolve_env(f"vizdoom:{tmp_path / 'missing.cfg'}")


@pytest.mark.parametrize("vector", ["inline", "subprocess"])
def test_vector_envs_step_scenarios_in_process_and_in_workers(vector: str) -> None:
    config = EnvConfig(vector=vector, num_workers=2, vizdoom_width=32, vizdoom_height=24)
    source = resolve_env("vizdoom:basic", config)
    spec = env_spec("vizdoom:basic", config)
    envs = make_vector_env(source, spec, config, 2, seed=5)
    owners = getattr(envs, "worker_pids", [os.getpid()])
    try:
        obs = envs.reset()
        assert obs.shape == (2, 3, 24, 32) and obs.dtype == np.uint8
        rewards = [envs.step(np.array([0, 3])).reward for _ in range(3)]
        assert np.all(np.concatenate(rewards) < 0)  # living reward (and missed shots)
        # Only the game engines: in the whole suite this process also parents Ray's.
        children = [c for pid in owners for c in psutil.Process(pid).children()]
        engines = [c for c in children if c.name() == "vizdoom"]
        assert len(engines) == 2
    finally:
        envs.close()
    # each game's engine process ends with it, also when it ran in a worker
    _, alive = psutil.wait_procs(engines, timeout=10)
    assert alive == []


def test_a_vizdoom_run_is_no_code_to_trust() -> None:
    from shoal.experiment import code_to_import

    assert code_to_import({"env": "vizdoom:basic"}) == []
    assert code_to_import({"env": "my_pkg.envs:make"}) != []
