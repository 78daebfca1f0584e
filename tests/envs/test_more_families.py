"""The registry's dm_control, MiniGrid and MuJoCo families, and the families it cannot serve:
spaces, seeding, reset and step, close, Gymnasium's env checker, presets, and the errors."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from shoal import catalog, experiment
from shoal.envs.config import EnvConfig
from shoal.envs.dm_control_suite import dm_control_tasks
from shoal.envs.families import describe_families
from shoal.envs.registry import env_spec, make_env, resolve_env
from shoal.envs.unavailable import UNAVAILABLE_FAMILIES
from shoal.errors import ConfigError, EnvError, ShoalWarning


def _rollout(env: gym.Env, seed: int, steps: int) -> list[np.ndarray]:
    """Observations of `steps` steps from `reset(seed)`, actions drawn from a fixed stream."""
    env.action_space.seed(123)
    obs, _ = env.reset(seed=seed)
    seen = [obs]
    for _ in range(steps):
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        seen.append(obs)
        if terminated or truncated:
            obs, _ = env.reset()
    return seen


def _flat(obs) -> np.ndarray:
    if isinstance(obs, dict):
        return np.concatenate([np.ravel(obs[k]) for k in sorted(obs)])
    return np.ravel(obs)


# ---- dm_control: dm_control:DOMAIN-TASK through the dm_env adapter ---------------------------

SWINGUP = "dm_control:cartpole-swingup"


@pytest.fixture(scope="module")
def dm_control():
    pytest.importorskip("dm_control")
    dm_control_tasks()  # imported through shoal, which picks the headless OpenGL backend first
    return sys.modules["dm_control.suite"]


def test_dm_control_state_is_the_task_dict_flattened_and_actions_float32(dm_control):
    source = resolve_env(SWINGUP)
    assert (source.family, source.backend) == ("dm_control", "dm_control")
    spec = env_spec(SWINGUP)
    # cartpole's position (3,) and velocity (2,), in the task's order.
    assert spec.observation_space == gym.spaces.Box(-np.inf, np.inf, (5,), np.float32)
    assert spec.action_space == gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    env = make_env(SWINGUP)
    try:
        obs, _ = env.reset(seed=3)
        task = dm_control.load("cartpole", "swingup", task_kwargs={"random": 3})
        raw = task.reset().observation
        np.testing.assert_allclose(obs, np.concatenate([raw["position"], raw["velocity"]]), 1e-6)
        obs, reward, terminated, truncated, _ = env.step(np.array([0.5], np.float32))
        assert obs.dtype == np.float32 and spec.observation_space.contains(obs)
        assert 0.0 <= reward <= 1.0 and not terminated and not truncated
    finally:
        env.close()


def test_dm_control_seeds_reproduce_and_differ(dm_control):
    env = make_env("dm_control:reacher-easy")
    try:
        first, again = _rollout(env, 5, 20), _rollout(env, 5, 20)
        other = _rollout(env, 6, 20)
    finally:
        env.close()
    np.testing.assert_array_equal(np.stack(first), np.stack(again))
    assert not np.allclose(first[0], other[0])  # reacher's target is placed by the seed


def _checked(env: gym.Env) -> None:
    """Gymnasium's env checker on the adapter and on what shoal wraps around it; any warning
    but those about checking a wrapped env and infinite bounds fails."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", ".*different from the unwrapped")
        # dm_control's state specs are unbounded, truly: the checker's advice on infinite bounds.
        warnings.filterwarnings("ignore", ".*value is (-)?infinity")
        check_env(env.unwrapped, skip_render_check=True)
        check_env(env, skip_render_check=True)


def test_dm_control_passes_gymnasiums_env_checker(dm_control):
    env = make_env(SWINGUP)
    try:
        _checked(env)
    finally:
        env.close()


def test_dm_control_ends_an_episode_at_its_time_limit_as_a_truncation(dm_control):
    env = make_env("dm_control:cartpole-balance")
    try:
        env.reset(seed=0)
        ends = []
        for _ in range(1000):  # the suite's 1000-step limit; balance never terminates
            _, _, terminated, truncated, _ = env.step(np.zeros(1, np.float32))
            ends.append((terminated, truncated))
    finally:
        env.close()
    assert ends[-1] == (False, True) and not any(t or u for t, u in ends[:-1])


def test_dm_control_action_repeat_holds_each_action_and_sums_its_rewards(dm_control):
    config = EnvConfig(dm_control_action_repeat=8)
    assert resolve_env("dm_control:cartpole-balance", config).frames_per_step == 8
    repeated = make_env("dm_control:cartpole-balance", config)
    single = make_env("dm_control:cartpole-balance")
    try:
        repeated.reset(seed=4)
        single.reset(seed=4)
        actions = np.random.default_rng(0).uniform(-1, 1, (125, 1)).astype(np.float32)
        for step, action in enumerate(actions):
            obs, reward, terminated, truncated, _ = repeated.step(action)
            held = [single.step(action) for _ in range(8)]  # the same action, 8 times
            np.testing.assert_allclose(reward, sum(out[1] for out in held), rtol=1e-6)
            np.testing.assert_array_equal(obs, held[-1][0])
            # 1000 control steps an episode: 125 agent steps of 8, the last a truncation
            assert (terminated, truncated) == (False, step == 124)
    finally:
        repeated.close()
        single.close()


def test_dm_control_pixels_are_a_channels_first_frame(dm_control):
    config = EnvConfig(dm_control_pixels=True, dm_control_pixel_size=32)
    try:
        env = make_env(SWINGUP, config)
    except EnvError as err:  # no OpenGL backend on this machine: the error says what to do
        assert "MUJOCO_GL" in str(err)
        pytest.skip(f"no OpenGL backend: {err}")
    try:
        obs, _ = env.reset(seed=0)
        assert env.observation_space == gym.spaces.Box(0, 255, (3, 32, 32), np.uint8)
        assert obs.shape == (3, 32, 32) and obs.std() > 0  # a drawn frame, not a blank one
        _checked(env)
    finally:
        env.close()


def test_dm_control_unknown_task_and_missing_package_say_what_to_do(dm_control, monkeypatch):
    with pytest.raises(EnvError, match="Did you mean dm_control:cartpole-swingup"):
        resolve_env("dm_control:cartpole-swingp")
    monkeypatch.setitem(sys.modules, "dm_control", None)  # as if it were not installed
    with pytest.raises(EnvError, match=r"pip install 'shoal\[dm_control\]'"):
        resolve_env(SWINGUP)


def test_shoal_envs_lists_the_dm_control_tasks(dm_control):
    listing = describe_families()
    assert "dm_control:cartpole-swingup" in listing and "dm_control:walker-walk" in listing


def test_dm_control_has_ppo_and_sac_presets(dm_control):
    for algo in ("ppo", "sac"):
        resolved = experiment.resolve(algo, SWINGUP)
        assert resolved.run.total_steps == catalog.presets(algo)[SWINGUP]["run"]["total_steps"]
    assert experiment.resolve("sac", SWINGUP).run.total_steps == 500_000


def test_the_ppo_preset_of_a_dm_control_task_takes_its_pixels(dm_control):
    # Issue 35, item 15: `--env.dm-control-pixels true` was refused by the preset's
    # normalize_obs (a running norm of float vectors, not of uint8 frames).
    from shoal.agents.ppo import AGENT
    from shoal.envs.spec import EnvSpec

    walker = "dm_control:walker-walk"
    states = experiment.resolve("ppo", walker)
    pixels = experiment.resolve("ppo", walker, env_overrides={"dm_control_pixels": True})
    assert states.agent_config.normalize_obs and states.agent_config.normalize_reward
    assert not pixels.agent_config.normalize_obs and pixels.agent_config.normalize_reward
    assert pixels.run == states.run  # the rest of the preset applies as it is
    frame = gym.spaces.Box(0, 255, (3, 84, 84), np.uint8)
    actions = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)
    net = AGENT.make_networks(EnvSpec(walker, frame, actions), pixels.agent_config)
    assert net.obs_norm is None
    explicit = {"normalize_obs": True}  # asked for by name: still refused, saying why
    asked = experiment.resolve(
        "ppo", walker, agent_overrides=explicit, env_overrides={"dm_control_pixels": True}
    )
    with pytest.raises(ConfigError, match="normalize_obs works on float Box"):
        AGENT.make_networks(EnvSpec(walker, frame, actions), asked.agent_config)


# ---- MiniGrid: ids resolve directly, the index image one-hot, the mission dropped -----------

DOORKEY = "MiniGrid-DoorKey-5x5-v0"


@pytest.fixture(scope="module")
def minigrid():
    return pytest.importorskip("minigrid")


def test_minigrid_ids_resolve_without_an_import_and_drop_the_mission_in_one_line(minigrid):
    assert resolve_env(DOORKEY).family == "minigrid"
    with pytest.warns(ShoalWarning, match=r"'mission' \(MissionSpace\)") as caught:
        spec = env_spec(DOORKEY)
    assert len(caught) == 1
    assert spec.observation_space == gym.spaces.Dict(
        {
            "direction": gym.spaces.Box(0.0, 1.0, (4,), np.float32),
            "image": gym.spaces.Box(0.0, 1.0, (20, 7, 7), np.float32),
        }
    )


def test_minigrid_image_is_one_plane_per_object_colour_and_state(minigrid):
    raw_env = gym.make(DOORKEY)
    env = make_env(DOORKEY)
    try:
        raw, _ = raw_env.reset(seed=4)
        obs, _ = env.reset(seed=4)
        image = obs["image"]
        assert image.dtype == np.float32 and set(np.unique(image)) <= {0.0, 1.0}
        np.testing.assert_array_equal(image.sum(0), np.full((7, 7), 3.0))  # one of each kind
        objects, colours, states = image[:11], image[11:17], image[17:]
        np.testing.assert_array_equal(objects.argmax(0), raw["image"][..., 0])
        np.testing.assert_array_equal(colours.argmax(0), raw["image"][..., 1])
        np.testing.assert_array_equal(states.argmax(0), raw["image"][..., 2])
        assert obs["direction"].argmax() == raw["direction"]
    finally:
        env.close()
        raw_env.close()


def test_minigrid_scaled_image_divides_each_index_by_its_largest(minigrid):
    raw_env = gym.make(DOORKEY)
    env = make_env(DOORKEY, EnvConfig(minigrid_image="scaled"))
    try:
        raw, _ = raw_env.reset(seed=2)
        obs, _ = env.reset(seed=2)
        assert env.observation_space["image"] == gym.spaces.Box(0.0, 1.0, (3, 7, 7), np.float32)
        expected = raw["image"].transpose(2, 0, 1) / np.array([10, 5, 2])[:, None, None]
        np.testing.assert_allclose(obs["image"], expected, rtol=1e-6)
        assert obs["image"].min() == 0.0 and obs["image"].max() <= 1.0
    finally:
        env.close()
        raw_env.close()


def test_minigrid_seeds_reproduce_and_differ_and_the_env_checker_passes(minigrid):
    env = make_env(DOORKEY)
    try:
        first, again = _rollout(env, 7, 30), _rollout(env, 7, 30)
        starts = {_flat(_rollout(env, seed, 0)[0]).tobytes() for seed in range(6)}
        _checked(env)
    finally:
        env.close()
    np.testing.assert_array_equal(np.stack([_flat(o) for o in first]), [_flat(o) for o in again])
    assert len(starts) > 1  # DoorKey's wall, door and key move with the seed


def test_a_minigrid_env_object_and_an_imported_id_are_converted_the_same(minigrid):
    with pytest.warns(ShoalWarning, match="mission"):
        by_id = env_spec(DOORKEY)
    with pytest.warns(ShoalWarning, match="mission"):
        imported = env_spec(DOORKEY, EnvConfig(import_module="minigrid"))
    assert imported.observation_space == by_id.observation_space


def test_minigrid_under_img_obs_wrapper_is_read_as_indices_not_pixels(minigrid, tmp_path):
    # Issue 35, item 18: ImgObsWrapper's image alone (space 0-255) was scaled as pixels by
    # 1/255, a near-constant input: PPO's greedy policy scored 0.00 with no warning.
    from minigrid.wrappers import FullyObsWrapper, ImgObsWrapper

    import shoal
    from shoal.envs.registry import source_of, spec_of_source

    wrapped = ImgObsWrapper(gym.make(DOORKEY))
    spec = spec_of_source(source_of(wrapped))
    assert spec.observation_space == gym.spaces.Box(0.0, 1.0, (20, 7, 7), np.float32)
    # The same planes as the image of the id's own Dict observation, step by step.
    ours = source_of(wrapped).factory()
    theirs = make_env(DOORKEY)
    obs, _ = ours.reset(seed=3)
    reference, _ = theirs.reset(seed=3)
    np.testing.assert_array_equal(obs, reference["image"])
    for action in (2, 1, 2, 0):
        obs = ours.step(action)[0]
        np.testing.assert_array_equal(obs, theirs.step(action)[0]["image"])
    # A fully observed grid is not indices (the direction sits in a state channel): as before.
    fully = ImgObsWrapper(FullyObsWrapper(gym.make(DOORKEY)))
    assert spec_of_source(source_of(fully)).observation_space.dtype == np.uint8
    # A policy trained on it acts on what the wrapped env returns.
    run = {"runs_dir": str(tmp_path), "progress": False, "tensorboard": False}
    result = shoal.train(
        "ppo",
        wrapped,
        total_steps=256,
        run={**run, "num_envs": 2, "eval_episodes": 0},
        agent={"unroll_length": 64, "minibatch_size": 64},
    )
    policy = shoal.load(result.run_dir)
    raw, _ = wrapped.reset(seed=0)
    assert raw.shape == (7, 7, 3) and 0 <= int(policy.act(raw)) < 7


def test_a_mistyped_minigrid_id_gets_close_matches(minigrid):
    with pytest.raises(EnvError, match="Did you mean 'MiniGrid-DoorKey-5x5-v0'"):
        resolve_env("MiniGrid-DoorKye-5x5-v0")


def test_minigrid_has_a_ppo_preset(minigrid):
    resolved = experiment.resolve("ppo", DOORKEY)
    assert resolved.run.num_envs == 16 and resolved.agent_config.entropy_coef == 0.01
    assert resolved.run.total_steps == 1_000_000


# ---- MuJoCo (Gymnasium v5): PPO, SAC and TD3 presets that load ------------------------------

MUJOCO_TASKS = ("Hopper-v5", "HalfCheetah-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5")


@pytest.mark.parametrize("env_id", MUJOCO_TASKS)
def test_each_mujoco_task_loads_with_its_ppo_sac_and_td3_presets(env_id):
    pytest.importorskip("mujoco")
    spec = env_spec(env_id)
    assert isinstance(spec.action_space, gym.spaces.Box)
    for algo in ("ppo", "sac", "td3"):
        preset = catalog.presets(algo)[env_id]
        resolved = experiment.resolve(algo, env_id)
        assert resolved.run.total_steps == preset["run"]["total_steps"]
        net = resolved.agent.make_networks(spec, resolved.agent_config)
        assert sum(p.numel() for p in net.parameters()) > 0
    env = make_env(env_id)
    try:
        obs, _ = env.reset(seed=0)
        obs, reward, *_ = env.step(env.action_space.sample())
        assert spec.observation_space.contains(obs) and np.isfinite(reward)
    finally:
        env.close()


# ---- Families that cannot be installed on current Python -----------------------------------

UNAVAILABLE_IDS = {
    "Procgen": ("procgen:coinrun", "procgen-coinrun-v0"),
    "DeepMind Lab": ("dmlab:seekavoid_arena_01", "DMLab-rooms_watermaze-v0"),
    "Google Research Football": ("gfootball:academy_empty_goal", "GFootball-11_vs_11-v0"),
    "Habitat": ("habitat:pointnav", "HabitatPick-v0"),
}


@pytest.mark.parametrize("family", UNAVAILABLE_FAMILIES, ids=lambda f: f.name)
def test_an_id_of_a_family_that_cannot_install_gets_the_reason(family):
    if __import__("importlib").util.find_spec(family.module) is not None:
        pytest.skip(f"{family.module} is installed here")
    for env_id in UNAVAILABLE_IDS[family.name]:
        with pytest.raises(EnvError) as caught:
            resolve_env(env_id)
        message = str(caught.value)
        assert family.name in message and family.reason in message, message


def test_the_cli_exits_2_with_the_reason_and_no_traceback():
    done = subprocess.run(
        [sys.executable, "-m", "shoal", "train", "ppo", "--env", "procgen:coinrun"],
        capture_output=True,
        text=True,
        timeout=600,  # a few seconds idle; importing torch is slow on a loaded machine
    )
    assert done.returncode == 2
    assert "no source release" in done.stderr and "Traceback" not in done.stderr


def test_dm_control_and_minigrid_ids_give_screens_for_videos(dm_control, minigrid):
    from shoal.envs.screens import make_screen_env

    for env_id in (SWINGUP, DOORKEY):
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", ".*mission", ShoalWarning)
                screens = make_screen_env(env_id)
        except EnvError as err:  # dm_control without an OpenGL backend: says what to set
            assert "render" in str(err)
            continue
        try:
            screens.env.reset(seed=0)
            first = screens.screen().copy()
            screens.env.step(screens.env.action_space.sample())
            assert first.ndim == 3 and first.shape[2] == 3 and first.dtype == np.uint8
            assert first.std() > 0 and screens.fps > 0
        finally:
            screens.close()
