"""Observations shoal converts where it makes envs (issue 16, item 6): channels-last images,
Discrete, MultiDiscrete and MultiBinary entries, text entries, a Discrete observation; and
MiniGrid trained end to end, its policy driven with the observations MiniGrid returns."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import shoal
from shoal.cli import main
from shoal.envs import make_env
from shoal.envs.config import EnvConfig
from shoal.envs.observations import ObservationConversion
from shoal.envs.registry import env_spec, source_of, spec_of_source
from shoal.envs.spec import EnvSpec
from shoal.envs.vector import InProcessVectorEnv
from shoal.errors import EnvError, ShoalError, ShoalWarning
from shoal.nets.cnn import MinAtarCNN
from shoal.nets.torso import make_torso

Box, Dict, Discrete = gym.spaces.Box, gym.spaces.Dict, gym.spaces.Discrete


class Sampling(gym.Env):
    """Observations drawn from `observation_space`, seeded by reset; the last kept in `last`.
    At step `bad_step` it returns `bad` instead."""

    metadata = {"render_modes": []}  # noqa: RUF012  (gymnasium's class attribute)
    action_space = Discrete(2)

    def __init__(self, observation_space: gym.spaces.Space, bad_step=None, bad=None) -> None:
        self.observation_space = observation_space
        self.bad_step, self.bad, self.t = bad_step, bad, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        self.t = 0
        self.last = self.observation_space.sample()
        return self.last, {}

    def step(self, action):
        self.t += 1
        self.last = self.bad if self.t == self.bad_step else self.observation_space.sample()
        return self.last, 0.0, False, False, {}


def _vector(env: gym.Env, **env_config):
    """The spec and a vector env of 2 copies of `env`, made as a run makes them."""
    source = source_of(env, EnvConfig(**env_config))
    spec = spec_of_source(source)
    return spec, InProcessVectorEnv([source.factory] * 2, spec, seed=0)


def _raw(vector: InProcessVectorEnv) -> list:
    return [env.unwrapped.last for env in vector.envs]


def test_a_channels_last_image_reaches_the_cnn_as_its_transpose():
    spec, vector = _vector(Sampling(Box(0, 255, (7, 7, 3), np.uint8)))
    assert spec.observation_space == Box(0, 255, (3, 7, 7), np.uint8)
    torso = make_torso(spec.observation_space)
    assert isinstance(torso, MinAtarCNN)
    seen = []
    torso.layers[0].register_forward_pre_hook(lambda _, inputs: seen.append(inputs[0]))
    obs = vector.reset()
    for _ in range(2):
        raw = np.stack(_raw(vector))
        assert obs.dtype == np.uint8
        np.testing.assert_array_equal(obs, raw.transpose(0, 3, 1, 2))
        torso(torch.as_tensor(obs))
        expected = torch.as_tensor(raw.transpose(0, 3, 1, 2), dtype=torch.float32) / 255
        torch.testing.assert_close(seen[-1], expected)
        obs = vector.step(np.zeros(2, np.int64)).obs


@pytest.mark.parametrize(
    ("shape", "seen"),
    [
        ((84, 84, 3), (3, 84, 84)),  # RGB
        ((64, 48, 1), (1, 64, 48)),  # grey
        ((84, 84, 4), (4, 84, 84)),  # 4 stacked frames
        ((4, 84, 84), (4, 84, 84)),  # channels-first already
        ((10, 10, 10), (10, 10, 10)),  # MinAtar Seaquest's planes: channels-first, as always
        ((5, 3), (5, 3)),  # not an image
    ],
)
def test_channels_last_images_are_told_by_their_last_dim(shape, seen):
    spec, _ = _vector(Sampling(Box(0.0, 1.0, shape, np.float32)))
    assert spec.observation_space.shape == seen


def test_an_image_that_could_be_either_layout_asks_for_image_layout():
    env = Sampling(Box(0, 255, (3, 5, 3), np.uint8))
    with pytest.raises(EnvError, match=r"\(3, 5, 3\).*image_layout.*--env.image-layout"):
        _vector(env)
    spec, vector = _vector(env, image_layout="channels_last")
    assert spec.observation_space.shape == (3, 3, 5)
    np.testing.assert_array_equal(vector.reset(), np.stack(_raw(vector)).transpose(0, 3, 1, 2))
    kept, _ = _vector(Sampling(Box(0, 255, (84, 84, 3), np.uint8)), image_layout="channels_first")
    assert kept.observation_space.shape == (84, 84, 3)


def test_dict_entries_that_are_integers_become_one_hots():
    space = Dict(
        {
            "room": Discrete(5, start=-2),
            "keys": gym.spaces.MultiDiscrete([3, 2], start=[1, 0]),
            "doors": gym.spaces.MultiBinary(3),
            "speed": Box(-1.0, 1.0, (2,), np.float32),
        }
    )
    spec, vector = _vector(Sampling(space))
    converted = spec.observation_space.spaces
    assert converted["room"] == Box(0.0, 1.0, (5,), np.float32)
    assert converted["keys"] == Box(0.0, 1.0, (5,), np.float32)
    assert converted["doors"] == Box(0.0, 1.0, (3,), np.float32)
    assert converted["speed"] == space["speed"]
    rooms = set()
    obs = vector.reset()
    for _ in range(20):
        for i, raw in enumerate(_raw(vector)):
            np.testing.assert_array_equal(obs["room"][i], np.eye(5)[raw["room"] + 2])
            keys = np.concatenate([np.eye(3)[raw["keys"][0] - 1], np.eye(2)[raw["keys"][1]]])
            np.testing.assert_array_equal(obs["keys"][i], keys)
            np.testing.assert_array_equal(obs["doors"][i], raw["doors"])
            np.testing.assert_array_equal(obs["speed"][i], raw["speed"])
            rooms.add(int(raw["room"]))
        obs = vector.step(np.zeros(2, np.int64)).obs
    assert obs["room"].dtype == obs["doors"].dtype == np.float32
    assert rooms == {-2, -1, 0, 1, 2}  # every value was met, the ends of the range too


def test_a_spec_read_back_from_a_file_converts_as_the_env_did(tmp_path):
    space = Dict(
        {
            "room": Discrete(5, start=-2),
            "keys": gym.spaces.MultiDiscrete([[3, 2], [4, 2]], start=[[1, 0], [0, 5]]),
            "doors": gym.spaces.MultiBinary(3),
            "image": Box(0, 255, (8, 8, 3), np.uint8),
            "mission": gym.spaces.Text(20),
        }
    )
    with pytest.warns(ShoalWarning, match="mission"):
        spec, vector = _vector(Sampling(space))
    torch.save(spec.to_data(), tmp_path / "spec.pt")
    read = EnvSpec.from_data(torch.load(tmp_path / "spec.pt", weights_only=True))
    assert read.observation_space == spec.observation_space
    convert = ObservationConversion(read.raw_observation_space)
    obs = vector.reset()
    for i, raw in enumerate(_raw(vector)):
        converted = convert(raw)
        assert set(converted) == set(obs) == {"room", "keys", "doors", "image"}
        for key, value in converted.items():
            np.testing.assert_array_equal(value, obs[key][i])
    assert obs["keys"].shape == (2, 11) and (obs["keys"].sum(1) == 4).all()


def test_a_discrete_observation_is_one_hot(capsys):
    assert main(["envs", "FrozenLake-v1"]) == 0
    described = capsys.readouterr().out
    assert "observation space:  Box(0.0, 1.0, (16,), float32)" in described
    assert "converted from:   Discrete(16)" in described
    env = make_env("FrozenLake-v1")
    assert env.observation_space == Box(0.0, 1.0, (16,), np.float32)
    obs, _ = env.reset(seed=0)
    for _ in range(10):
        np.testing.assert_array_equal(obs, np.eye(16)[env.unwrapped.s])
        obs, _, terminated, truncated, _ = env.step(2)  # right, sliding at random
        if terminated or truncated:
            obs, _ = env.reset()


def test_text_entries_are_dropped_with_one_warning_line():
    space = Dict({"image": Box(0, 255, (6, 6, 3), np.uint8), "mission": gym.spaces.Text(20)})
    with pytest.warns(ShoalWarning) as warned:
        spec, vector = _vector(Sampling(space))
    assert len(warned) == 1
    message = str(warned[0].message)
    assert "'mission' (Text)" in message and "dropped" in message and "\n" not in message
    assert set(spec.observation_space.spaces) == {"image"}
    assert set(vector.reset()) == {"image"}


def test_observations_shoal_cannot_take_are_refused_with_advice():
    with pytest.raises(EnvError, match="is text"):
        _vector(Sampling(gym.spaces.Text(20)))
    tuple_space = gym.spaces.Tuple((Discrete(2), Box(0.0, 1.0, (2,), np.float32)))
    with pytest.raises(EnvError, match="FlattenObservation"):
        _vector(Sampling(tuple_space))


def test_a_discrete_entry_out_of_its_range_names_the_env_and_step():
    space = Dict({"room": Discrete(4), "speed": Box(-1.0, 1.0, (2,), np.float32)})
    bad = {"room": 4, "speed": np.zeros(2, np.float32)}
    _, vector = _vector(Sampling(space, bad_step=3, bad=bad))
    vector.reset()
    vector.step(np.zeros(2, np.int64))
    vector.step(np.zeros(2, np.int64))
    with pytest.raises(
        EnvError, match=r"\(env 0\).*step 3.*'room'\] is 4, outside .*Discrete\(4\)"
    ):
        vector.step(np.zeros(2, np.int64))


# ---- MiniGrid: Dict(image: Box(7, 7, 3) channels-last, direction: Discrete(4), mission) -----

MINIGRID = "MiniGrid-Empty-5x5-v0"


@pytest.fixture(scope="module")
def minigrid_run(tmp_path_factory):
    pytest.importorskip("minigrid")
    run = {
        "runs_dir": str(tmp_path_factory.mktemp("runs")),
        "progress": False,
        "tensorboard": False,
        "num_envs": 4,
        "eval_episodes": 2,
    }
    with pytest.warns(ShoalWarning, match="'mission' \\(MissionSpace\\)"):
        result = shoal.train(
            "ppo", MINIGRID, env_config={"import_module": "minigrid"}, total_steps=2048, run=run
        )
    return result


def test_ppo_trains_on_minigrid_and_acts_on_what_minigrid_returns(minigrid_run, tmp_path):
    assert minigrid_run.env_steps >= 2048 and minigrid_run.evaluation.episodes == 2
    assert list((minigrid_run.run_dir / "checkpoints").iterdir())
    with pytest.warns(ShoalWarning, match="mission"):
        policy = shoal.load(minigrid_run.run_dir, trust_run=True)
    image_torso = policy.net.policy_torso.torsos[policy.net.policy_torso.keys.index("image")]
    # MiniGrid's 3 index channels as 20 one-hot planes (11 objects, 6 colours, 3 states).
    assert image_torso.layers[0].in_channels == 20
    env = gym.make(MINIGRID)
    obs, _ = env.reset(seed=1)
    action, state = policy.predict(obs)
    assert state is None and env.action_space.contains(int(action))
    batch = {
        "image": np.stack([obs["image"]] * 3),
        "direction": np.array([0, 1, 2]),
        "mission": [obs["mission"]] * 3,
    }
    assert policy.predict(batch)[0].shape == (3,)
    saved = shoal.load(policy.save(tmp_path / "minigrid.pt"))  # spaces read back from the file
    assert saved.predict(obs)[0] == action
    np.testing.assert_array_equal(saved.predict(batch)[0], policy.predict(batch)[0])
    channels_first = {**obs, "image": obs["image"].transpose(2, 0, 1)}
    with pytest.raises(ShoalError, match=r"as MiniGrid-Empty-5x5-v0 returns them.*\(7, 7, 3\)"):
        saved.predict(channels_first)
    with pytest.raises(ShoalError, match=r"'direction'\] is 4, outside"):
        saved.act({**obs, "direction": 4})


def test_videos_of_minigrid_see_the_space_the_policy_was_trained_on():
    pytest.importorskip("minigrid")
    from shoal.envs.screens import make_screen_env

    config = EnvConfig(import_module="minigrid")
    with pytest.warns(ShoalWarning, match="mission"):
        spec = env_spec(MINIGRID, config)
    screens = make_screen_env(MINIGRID, config)
    try:
        assert screens.env.observation_space == spec.observation_space
        obs, _ = screens.env.reset(seed=0)
        assert obs["image"].shape == (20, 7, 7) and screens.screen().ndim == 3
    finally:
        screens.close()
