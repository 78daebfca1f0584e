"""Every environment family resolves through one registry, and PPO runs on each modality."""

from __future__ import annotations

import pickle
import sys

import numpy as np
import pytest

import shoal
from shoal.cli import main
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec, make_vector_env, resolve_env
from shoal.errors import EnvError

pytest.importorskip("ale_py")


def test_atari_ids_of_both_families_get_four_frames_per_step():
    for env_id in ("ALE/Pong-v5", "PongNoFrameskip-v4"):
        source = resolve_env(env_id, EnvConfig(backend="gymnasium"))
        assert (source.family, source.backend, source.frames_per_step) == ("atari", "ale-py", 4)
        spec = env_spec(env_id, EnvConfig(backend="gymnasium"))
        assert spec.obs_shape == (4, 84, 84) and spec.obs_dtype == np.uint8
    pytest.importorskip("envpool")
    assert resolve_env("ALE/Pong-v5").backend == "envpool"  # auto picks envpool when installed


def test_unknown_atari_game_and_minatar_game_get_close_matches():
    with pytest.raises(EnvError, match="ALE/Pong-v5"):
        resolve_env("ALE/Pongg-v5")
    with pytest.raises(EnvError, match="minatar:breakout"):
        resolve_env("minatar:breakot")


def test_factories_pickle_for_worker_processes():
    for env_id in ("CartPole-v1", "minatar:breakout", "ALE/Pong-v5", "shoal.envs.toy:countdown"):
        factory = resolve_env(env_id, EnvConfig(backend="gymnasium")).factory
        assert pickle.loads(pickle.dumps(factory))().observation_space is not None


def test_a_dm_env_factory_is_adapted_to_gymnasium():
    pytest.importorskip("bsuite")
    source = resolve_env("bsuite.environments.catch:Catch")
    env = source.factory()
    obs, _ = env.reset(seed=0)
    assert source.family == "factory" and obs.shape == env.observation_space.shape
    assert env.action_space.n == 3


def test_import_module_registers_ids_first(tmp_path, monkeypatch):
    (tmp_path / "shoal_test_ids.py").write_text(
        "import gymnasium as gym\n"
        "gym.register('ShoalTest/Countdown-v0', entry_point='shoal.envs.toy:Countdown')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(EnvError, match="Unknown environment id"):
        resolve_env("ShoalTest/Countdown-v0")
    source = resolve_env("ShoalTest/Countdown-v0", EnvConfig(import_module="shoal_test_ids"))
    assert source.family == "gymnasium"
    sys.modules.pop("shoal_test_ids", None)


def test_subprocess_vector_env_from_config():
    config = EnvConfig(vector="subprocess", num_workers=2)
    source = resolve_env("CartPole-v1", config)
    vector = make_vector_env(source, env_spec("CartPole-v1"), config, num_envs=4, seed=0)
    try:
        assert vector.reset().shape == (4, 4)
        assert vector.step(np.zeros(4, np.int64)).reward.shape == (4,)
    finally:
        vector.close()


def test_shoal_envs_describes_families_and_one_id(capsys):
    assert main(["envs"]) == 0
    out = capsys.readouterr().out
    assert "atari" in out and "minatar" in out and "sticky_actions" in out
    assert main(["envs", "ALE/Pong-v5", "--env.backend", "gymnasium"]) == 0
    out = capsys.readouterr().out
    assert "frames per step:    4" in out and "(4, 84, 84)" in out and "ale-py" in out
    assert main(["envs", "ALE/Pongg-v5"]) == 2


@pytest.mark.parametrize(
    ("env_id", "torso"),
    [("minatar:breakout", "MinAtarCNN"), ("ALE/Pong-v5", "NatureCNN")],
)
def test_ppo_trains_on_images_with_the_torso_the_space_calls_for(quiet_run, env_id, torso):
    agent = {"unroll_length": 16, "minibatch_size": 32, "num_epochs": 1, "torso": "auto"}
    run = {**quiet_run, "num_envs": 2, "eval_episodes": 0, "log_interval": 32}
    result = shoal.train("ppo", env_id, total_steps=64, agent=agent, run=run)
    policy = shoal.load(result.run_dir)
    assert type(policy.net.policy_torso).__name__ == torso
    assert policy.net.value_torso is policy.net.policy_torso  # images share one torso
    rows = (result.run_dir / "metrics.jsonl").read_text().splitlines()
    frames_per_step = 4 if env_id.startswith("ALE/") else 1
    assert f'"frames": {64 * frames_per_step}' in rows[-1]
