"""What an agent needs to know about an environment: its observation and action spaces."""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from shoal.errors import EnvError


@dataclass(frozen=True)
class EnvSpec:
    """Observation and action spaces of one (non-vector) environment."""

    env_id: str
    observation_space: gym.spaces.Space
    action_space: gym.spaces.Space

    def __post_init__(self) -> None:
        if not isinstance(self.observation_space, gym.spaces.Box):
            raise EnvError(
                f"{self.env_id}: observation space {self.observation_space} is not supported yet; "
                "shoal handles Box observations (vectors and images)."
            )
        if not isinstance(self.action_space, gym.spaces.Discrete | gym.spaces.Box):
            raise EnvError(
                f"{self.env_id}: action space {self.action_space} is not supported; "
                "use Discrete or Box actions."
            )

    @classmethod
    def from_env(cls, env_id: str, env: gym.Env) -> EnvSpec:
        return cls(env_id, env.observation_space, env.action_space)

    @property
    def obs_shape(self) -> tuple[int, ...]:
        return tuple(self.observation_space.shape)

    @property
    def obs_dtype(self) -> np.dtype:
        return np.dtype(self.observation_space.dtype)

    @property
    def discrete(self) -> bool:
        return isinstance(self.action_space, gym.spaces.Discrete)

    @property
    def num_actions(self) -> int:
        """Number of discrete actions; raises for continuous spaces."""
        if not self.discrete:
            raise EnvError(f"{self.env_id} has continuous actions, not a number of actions.")
        return int(self.action_space.n)

    @property
    def action_shape(self) -> tuple[int, ...]:
        return () if self.discrete else tuple(self.action_space.shape)

    @property
    def action_dtype(self) -> np.dtype:
        return np.dtype(np.int64) if self.discrete else np.dtype(np.float32)
