"""What an agent needs to know about an environment: its spaces and frames per agent step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from shoal.envs.observations import ACTION_MASK_KEY, is_text_space, network_space
from shoal.errors import EnvError

# A picklable callable that makes one environment. It lives here, not in the registry, so that
# the vectors the registry builds can name it without importing the registry back.
EnvFactory = Callable[[], gym.Env]


@dataclass(frozen=True)
class EnvSpec:
    """Observation and action spaces of one (non-vector) environment.

    Observations are a Box (vectors, channels-first images) or a Dict of Boxes. `frames_per_step`
    is how many emulator frames one agent step covers (4 for Atari), to report both counts.
    `raw_observation_space` is the env's own space when the registry converts its observations
    to `observation_space` (`shoal.envs.observations`), else None. `num_agents` is a
    multi-agent env's number of agents, each a row of the batch (`shoal.envs.agent_rows`),
    whose spaces are then one agent's; 0 for a single-agent env.
    """

    env_id: str
    observation_space: gym.spaces.Space
    action_space: gym.spaces.Space
    frames_per_step: int = 1
    raw_observation_space: gym.spaces.Space | None = None
    num_agents: int = 0

    def __post_init__(self) -> None:
        space = self.observation_space
        boxes = space.spaces.values() if isinstance(space, gym.spaces.Dict) else [space]
        if not all(isinstance(box, gym.spaces.Box) for box in boxes):
            raise EnvError(
                f"{self.env_id}: observation space {space} is not supported. shoal takes Box "
                "observations (vectors, images), and converts Discrete, MultiDiscrete and "
                "MultiBinary ones to one-hot or 0/1 vectors, within a Dict too (dropping text "
                "entries). Wrap the env in a gymnasium.ObservationWrapper that returns one of "
                "these, e.g. gymnasium.wrappers.FlattenObservation for a Tuple or a nested Dict."
            )
        if not isinstance(self.action_space, gym.spaces.Discrete | gym.spaces.Box):
            raise EnvError(
                f"{self.env_id}: action space {self.action_space} is not supported; "
                "use Discrete or Box actions."
            )
        if self.action_mask:
            mask = space[ACTION_MASK_KEY]
            if not self.discrete or tuple(mask.shape) != (self.num_actions,):
                raise EnvError(
                    f"{self.env_id}: the observation entry {ACTION_MASK_KEY!r} {mask} is read as "
                    f"the legal actions, which needs a Discrete action space and a mask of "
                    f"shape (n,) for its n actions; the action space is {self.action_space}. "
                    "Rename the entry if it is not an action mask."
                )
            if len(space.spaces) < 2:
                raise EnvError(
                    f"{self.env_id}: the observation holds only the action mask; shoal's "
                    "networks take the other entries as input. Add the observation itself."
                )

    @classmethod
    def from_env(cls, env_id: str, env: gym.Env, frames_per_step: int = 1) -> EnvSpec:
        return cls(env_id, env.observation_space, env.action_space, frames_per_step)

    def to_data(self) -> dict[str, Any]:
        """The spec as tensors and plain values, which `torch.load(weights_only=True)` reads
        back (a pickled space could not be: unpickling runs code)."""
        return {
            "env_id": self.env_id,
            "observation_space": _space_data(self.observation_space),
            "action_space": _space_data(self.action_space),
            "frames_per_step": self.frames_per_step,
            "num_agents": self.num_agents,
            "raw_observation_space": (
                None
                if self.raw_observation_space is None
                else _space_data(self.raw_observation_space)
            ),
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> EnvSpec:
        return cls(
            data["env_id"],
            _space_of(data["observation_space"]),
            _space_of(data["action_space"]),
            int(data["frames_per_step"]),
            # Absent from files written before observations were converted.
            raw_observation_space=(
                None
                if data.get("raw_observation_space") is None
                else _space_of(data["raw_observation_space"])
            ),
            num_agents=int(data.get("num_agents", 0)),  # absent from older files
        )

    @property
    def rows_per_env(self) -> int:
        """Rows of a batch one env makes: its agents, or 1."""
        return max(1, self.num_agents)

    @property
    def dict_obs(self) -> bool:
        return isinstance(self.observation_space, gym.spaces.Dict)

    @property
    def action_mask(self) -> bool:
        """Whether observations carry the legal actions (a Dict entry `action_mask`, uint8
        `[A]`, 1 where legal; `shoal.envs.observations`)."""
        return self.dict_obs and ACTION_MASK_KEY in self.observation_space.spaces

    @property
    def network_space(self) -> gym.spaces.Space:
        """The observation space a torso takes: without the action mask entry."""
        return network_space(self.observation_space)

    @property
    def obs_shape(self) -> tuple[int, ...]:
        """Shape of a Box observation (raises for Dict observations)."""
        if self.dict_obs:
            raise EnvError(f"{self.env_id} has Dict observations; use `obs_boxes`.")
        return tuple(self.observation_space.shape)

    @property
    def obs_dtype(self) -> np.dtype:
        if self.dict_obs:
            raise EnvError(f"{self.env_id} has Dict observations; use `obs_boxes`.")
        return np.dtype(self.observation_space.dtype)

    @property
    def obs_boxes(self) -> dict[str, gym.spaces.Box] | gym.spaces.Box:
        """The Box, or the Dict's Boxes by key."""
        if self.dict_obs:
            return dict(self.observation_space.spaces)
        return self.observation_space

    def allocate_obs(self, *leading: int) -> np.ndarray | dict[str, np.ndarray]:
        """Zeros of shape `[*leading, *obs_shape]` in the observation dtype (per key for Dict)."""
        boxes = self.obs_boxes
        if isinstance(boxes, dict):
            return {k: np.zeros((*leading, *b.shape), b.dtype) for k, b in boxes.items()}
        return np.zeros((*leading, *boxes.shape), boxes.dtype)

    def sample_obs(self, n: int) -> np.ndarray | dict[str, np.ndarray]:
        """`n` observations drawn from the space, batched `[n, ...]` (per key for Dict)."""
        samples = [self.observation_space.sample() for _ in range(n)]
        if self.dict_obs:
            return {k: np.stack([s[k] for s in samples]) for k in self.observation_space.spaces}
        return np.stack(samples)

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


_TEXT_LENGTH = 1024  # of the Text a saved text entry reads back as (only its kind matters)


def _space_data(space: gym.spaces.Space) -> dict[str, Any]:
    import torch  # here, not at the top: `shoal envs` reads the specs without torch

    if isinstance(space, gym.spaces.Dict):
        return {"kind": "dict", "spaces": {k: _space_data(v) for k, v in space.spaces.items()}}
    if isinstance(space, gym.spaces.Discrete):
        return {"kind": "discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.MultiDiscrete):
        nvec, start = np.asarray(space.nvec, np.int64), np.asarray(space.start, np.int64)
        return {
            "kind": "multi_discrete",
            "nvec": torch.from_numpy(nvec),
            "start": torch.from_numpy(start),
        }
    if isinstance(space, gym.spaces.MultiBinary):
        return {"kind": "multi_binary", "shape": list(space.shape)}
    if is_text_space(space):
        # Only its being text matters (it is dropped); a MissionSpace's function is not kept.
        return {"kind": "text"}
    return {
        "kind": "box",
        "low": torch.from_numpy(np.array(space.low)),
        "high": torch.from_numpy(np.array(space.high)),
        "dtype": np.dtype(space.dtype).name,
    }


def _space_of(data: dict[str, Any]) -> gym.spaces.Space:
    if data["kind"] == "dict":
        return gym.spaces.Dict({k: _space_of(v) for k, v in data["spaces"].items()})
    if data["kind"] == "discrete":
        return gym.spaces.Discrete(data["n"], start=data["start"])
    if data["kind"] == "multi_discrete":
        return gym.spaces.MultiDiscrete(data["nvec"].numpy(), start=data["start"].numpy())
    if data["kind"] == "multi_binary":
        return gym.spaces.MultiBinary(data["shape"])
    if data["kind"] == "text":
        return gym.spaces.Text(max_length=_TEXT_LENGTH)
    low, high = data["low"].numpy(), data["high"].numpy()
    return gym.spaces.Box(low, high, low.shape, np.dtype(data["dtype"]))
