"""Action masks: read from the observation or from info, kept out of the torsos, carried through
replay, and no discrete agent ever takes an illegal action (training, greedy and sampled
evaluation) on a game where an illegal action ends the episode with a penalty.

The long version (10^6 steps per agent) is `benchmarks/masking_legality.py`."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import shoal
from shoal import catalog
from shoal.agents.common import ObsPacking, legal_actions
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec, make_env
from shoal.envs.spec import EnvSpec
from shoal.envs.toy import MaskedChoice
from shoal.errors import EnvError
from shoal.nets.torso import torso_from_setting

DISCRETE = ["a2c", "a3c", "agent57", "apex", "dqn", "impala", "pg", "ppo", "r2d2", "rainbow"]
DISCRETE += ["trpo", "appo"]
SMALL = {
    "batch_size": 16,
    "min_replay_size": 128,
    "learning_starts": 128,
    "sequence_length": 8,
    "sequence_period": 4,
    "burn_in": 2,
    "unroll_length": 16,
    "minibatch_size": 32,
}


def _small(algo: str) -> dict:
    fields = catalog.get_agent(algo).config_cls.__dataclass_fields__
    return {k: v for k, v in SMALL.items() if k in fields}


def test_every_discrete_agent_is_covered():
    # bc clones a dataset; r2d3 needs one too, and acts and learns by R2D2's policy and
    # sequence loss (r2d2's case); alphazero plays board games only, its search over the game's
    # own legal moves; the others (qtopt too) act in continuous spaces or evolve parameters.
    discrete = set(catalog.AGENTS) - {"bc", "r2d3", "alphazero", "sac", "td3", "ddpg", "es"}
    discrete -= {"ars", "qtopt"}
    assert discrete <= set(DISCRETE), sorted(discrete - set(DISCRETE))


@pytest.mark.parametrize("algo", DISCRETE)
def test_no_illegal_action_is_ever_taken(algo, tmp_path):
    MaskedChoice.illegal_actions = MaskedChoice.steps = 0
    result = shoal.train(
        algo,
        "shoal.envs.toy:masked_choice",
        seed=0,
        total_steps=800,
        agent=_small(algo),
        run={"runs_dir": str(tmp_path), "num_envs": 4, "eval_episodes": 3},
        trust_run=True,
    )
    assert result.evaluation is not None and result.sampled_evaluation is not None
    assert MaskedChoice.steps >= 800
    assert MaskedChoice.illegal_actions == 0
    # No episode ended on the penalty: every return is >= 0.
    assert result.evaluation.mean_return >= 0.0


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_a_mask_given_in_info_is_obeyed(algo, tmp_path):
    MaskedChoice.illegal_actions = MaskedChoice.steps = 0
    shoal.train(
        algo,
        "shoal.envs.toy:masked_choice_info",
        seed=1,
        total_steps=600,
        agent=_small(algo),
        run={"runs_dir": str(tmp_path), "num_envs": 4, "eval_episodes": 2},
        env_config={"action_mask_from_info": True},
        trust_run=True,
    )
    assert MaskedChoice.steps >= 600 and MaskedChoice.illegal_actions == 0


def test_without_the_mask_the_same_game_sees_illegal_actions(tmp_path):
    """The check above can fail: an agent that does not mask does take illegal actions."""
    MaskedChoice.illegal_actions = 0
    shoal.train(
        "ppo",
        "shoal.envs.toy:unmasked_choice",
        seed=0,
        total_steps=300,
        run={"runs_dir": str(tmp_path), "num_envs": 4, "eval_episodes": 0},
        trust_run=True,
    )
    assert MaskedChoice.illegal_actions > 0


def test_the_mask_is_an_observation_entry_no_torso_takes():
    spec = env_spec("shoal.envs.toy:masked_choice")
    assert spec.action_mask and "action_mask" not in spec.network_space.spaces
    mask_space = spec.observation_space["action_mask"]
    assert mask_space.dtype == np.uint8 and mask_space.shape == (6,)
    torso = torso_from_setting(spec.observation_space, "auto", (8,), "tanh")
    assert torso.keys == ["observation"]
    assert not env_spec("shoal.envs.toy:unmasked_choice").action_mask
    info_spec = env_spec("shoal.envs.toy:masked_choice_info", EnvConfig(action_mask_from_info=True))
    assert info_spec.observation_space == spec.observation_space
    env = make_env("shoal.envs.toy:masked_choice_info", EnvConfig(action_mask_from_info=True))
    obs, info = env.reset(seed=3)
    assert obs["action_mask"].tolist() == (info["action_mask"] != 0).astype(int).tolist()


def test_mask_mistakes_raise_clear_errors():
    with pytest.raises(EnvError, match="action_mask_from_info false"):
        make_env("CartPole-v1", EnvConfig(action_mask_from_info=True)).reset(seed=0)
    box = gym.spaces.Box(0.0, 1.0, (3,), np.float32)
    with pytest.raises(EnvError, match="shape \\(n,\\)"):
        EnvSpec(
            "x",
            gym.spaces.Dict({"observation": box, "action_mask": gym.spaces.Box(0, 1, (4,))}),
            gym.spaces.Discrete(3),
        )


def test_obs_packing_round_trips_and_keeps_the_mask():
    spec = env_spec("shoal.envs.toy:masked_choice")
    packing = ObsPacking(spec.observation_space)
    obs = spec.sample_obs(5)
    packed = packing.pack({k: v[None] for k, v in obs.items()})  # [1, 5, D]
    assert packed.shape == (1, 5, packing.size) and packed.dtype == np.float32
    back = packing.unpack(torch.from_numpy(packed))
    for key, value in obs.items():
        assert back[key].shape == (1, *value.shape)
        assert np.array_equal(back[key][0].numpy(), value)
    assert torch.equal(legal_actions(back)[0], torch.from_numpy(obs["action_mask"]).bool())
    # No observations at all (an unroll's final observations when no episode was truncated).
    none = packing.pack({k: v[:0] for k, v in obs.items()})
    assert none.shape == (0, packing.size)
