"""shoal.train on env objects, as a user calls it: an instance, a lambda, a vector env; dm_env
factories seeded per env copy; Gymnasium's env checker through the registry."""

from __future__ import annotations

import threading

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import shoal
from shoal.envs.config import EnvConfig
from shoal.envs.registry import make_env, source_of
from shoal.errors import ConfigError, EnvError


def _run(quiet_run, **extra):
    return {**quiet_run, "total_steps": 1024, "eval_episodes": 2, "num_envs": 2, **extra}


def test_train_on_an_env_instance_then_evaluate_it_again(quiet_run):
    env = gym.make("CartPole-v1")
    result = shoal.train("ppo", env, run=_run(quiet_run), agent={"minibatch_size": 32})
    assert result.evaluation.episodes == 2 and result.env_steps >= 1024
    assert "env: <env object CartPole-v1>" in (result.run_dir / "config.yaml").read_text()
    with pytest.raises(ConfigError, match=r"env=my_env"):
        shoal.evaluate(result.run_dir)
    with pytest.raises(ConfigError, match=r"env=my_env"):
        shoal.train(resume=result.run_dir, total_steps=2048)
    again = shoal.evaluate(result.run_dir, episodes=3, env=env)
    assert again.episodes == 3
    resumed = shoal.train(resume=result.run_dir, env=env, total_steps=2048)
    assert resumed.env_steps >= 2048
    assert env.unwrapped.state is None  # shoal stepped copies, never the user's object


def test_train_on_a_lambda_taking_a_seed_seeds_each_env_copy(quiet_run):
    seeds = []

    def make(seed):
        seeds.append(seed)
        return gym.make("CartPole-v1")

    result = shoal.train(
        "ppo", make, seed=5, run=_run(quiet_run, eval_episodes=0), agent={"minibatch_size": 32}
    )
    assert result.run_dir.name.startswith("ppo-make-")
    assert {5, 6} <= set(seeds)  # env i is made with the run's seed + i
    zero_args = shoal.train(
        "ppo", lambda: gym.make("CartPole-v1"), run=_run(quiet_run), agent={"minibatch_size": 32}
    )
    assert zero_args.evaluation.episodes == 2


def test_train_on_a_vector_env_takes_its_number_of_envs(quiet_run):
    vector = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3)
    run = {**quiet_run, "total_steps": 1024, "eval_episodes": 0}
    result = shoal.train("ppo", vector, run=run, agent={"minibatch_size": 32})
    assert "num_envs: 3" in (result.run_dir / "config.yaml").read_text()
    made = shoal.train("ppo", gym.make_vec("CartPole-v1", 2), run=run, agent={"minibatch_size": 32})
    assert "num_envs: 2" in (made.run_dir / "config.yaml").read_text()
    with pytest.raises(ConfigError, match="Leave num_envs out"):
        shoal.train("ppo", vector, run={**run, "num_envs": 8})


def test_env_objects_that_cannot_be_used_get_a_clear_error(quiet_run, tmp_path):
    class Locked(gym.Wrapper):
        def __init__(self):
            super().__init__(gym.make("CartPole-v1"))
            self.lock = threading.Lock()  # cannot be copied

    with pytest.raises(EnvError, match="Pass a function that makes the env"):
        shoal.train("ppo", Locked(), run=quiet_run)
    with pytest.raises(EnvError, match="env must be an environment id"):
        shoal.train("ppo", 42, run=quiet_run)
    lock = threading.Lock()
    unshippable = lambda: (lock, gym.make("CartPole-v1"))[1]  # noqa: E731
    with pytest.raises(ConfigError, match=r"cannot be sent to Ray.*'package.module:function'"):
        shoal.train("ppo", unshippable, run={**quiet_run, "runtime": "ray"})
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.distributed
def test_a_lambda_is_shipped_to_ray_actors(ray_cluster, quiet_run):
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 2, "total_steps": 2048}
    result = shoal.train("ppo", lambda: gym.make("CartPole-v1"), run={**run, "eval_episodes": 2})
    assert result.env_steps >= 2048 and result.evaluation.episodes == 2


def test_env_checker_passes_on_a_seeded_dm_env_factory():
    from bsuite.environments.catch import Catch

    for env in (
        make_env("bsuite.environments.catch:Catch"),
        source_of(lambda seed: Catch(seed=seed)).factory(),
    ):
        check_env(env, skip_render_check=True)
        # Catch drops the ball in a random column: env copies seeded apart differ, and agree
        # with themselves under one seed.
        first = [env.reset(seed=s)[0].argmax() for s in range(8)]
        assert first == [env.reset(seed=s)[0].argmax() for s in range(8)]
        assert len(set(first)) > 1


def test_dm_env_copies_of_a_vector_env_get_their_own_seeds():
    from shoal.envs.registry import resolve_env
    from shoal.envs.spec import EnvSpec
    from shoal.envs.vector import InProcessVectorEnv

    source = resolve_env("bsuite.environments.catch:Catch")
    probe = source.factory()
    spec = EnvSpec.from_env(source.env_id, probe)
    obs = InProcessVectorEnv([source.factory] * 8, spec, seed=0).reset()
    assert len({int(o.argmax()) for o in obs}) > 1  # not one shared random stream


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped")
def test_env_checker_passes_on_minigrid_through_the_registry():
    pytest.importorskip("minigrid")
    env = make_env("MiniGrid-Empty-5x5-v0", EnvConfig(import_module="minigrid"))
    check_env(env.unwrapped, skip_render_check=True)
    check_env(env, skip_render_check=True)
    assert isinstance(env.reset(seed=0)[0], dict) and np.isfinite(env.step(0)[1])


def test_a_run_on_an_env_object_acts_without_the_env_and_evaluates_with_it(quiet_run, tmp_path):
    # Issue 35, item 17: the checkpoint keeps the env's spaces, so acting needs no env;
    # evaluating still needs the env object passed again (no file can make it).
    env = gym.make("CartPole-v1")
    run = _run(quiet_run, eval_episodes=0, total_steps=256)
    result = shoal.train("ppo", env, run=run, agent={"minibatch_size": 32})
    policy = shoal.load(result.run_dir)
    assert policy.env_id == "<env object CartPole-v1>"
    obs, _ = env.reset(seed=0)
    assert policy.act(obs) in (0, 1)
    assert policy.predict(np.stack([obs] * 3))[0].shape == (3,)
    saved = shoal.load(policy.save(tmp_path / "policy.pt"))
    assert saved.act(obs) == policy.act(obs)
    with pytest.raises(ConfigError, match=r"env=my_env"):
        policy.env_source  # noqa: B018 (what evaluate reads)
    assert shoal.evaluate(result.run_dir, episodes=2, env=env).episodes == 2
