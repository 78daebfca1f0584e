"""Small Minari datasets the tests make themselves (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from shoal.data.datasets import Episode, write_dataset
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec, source_of


def random_dataset(root: Path, env_id: str = "CartPole-v1", episodes: int = 3, seed: int = 0):
    """`episodes` episodes of uniformly random actions on `env_id`, written with shoal's
    Minari writer as `test/random-<env>-v0` in `root`; returns the dataset's folder."""
    config = EnvConfig()
    spec = env_spec(env_id, config)
    env = source_of(env_id, config).factory()
    env.action_space.seed(seed)
    played = []
    for k in range(episodes):
        obs, info = env.reset(seed=seed + k)
        episode = Episode(seed=seed + k, observations=[obs], infos=[info])
        done = False
        while not done:
            action = env.action_space.sample()
            obs, reward, terminated, truncated, info = env.step(action)
            episode.observations.append(obs)
            episode.actions.append(np.asarray(action, spec.action_space.dtype))
            episode.rewards.append(float(reward))
            episode.terminations.append(bool(terminated))
            episode.truncations.append(bool(truncated))
            episode.infos.append(info)
            done = terminated or truncated
        played.append(episode)
    env.close()
    name = "test/random-" + env_id.replace("-", "_").lower() + "-v0"
    return write_dataset(name, played, spec, env_spec=env.spec, root=root)
