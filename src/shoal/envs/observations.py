"""Observations as shoal's networks take them: a Box (images channels-first) or a Dict of Boxes.

The registry wraps every env it makes with `adapt_observations`, so every launcher, the
evaluator, videos and `shoal.load(...).predict` see one converted space. What is converted:

- an image, a Box of rank 3: channels-last `(H, W, C)` is transposed to channels-first
  `(C, H, W)`, its dtype kept (uint8 stays uint8). With `image_layout="auto"` an image is
  channels-last when its last dim is 1..4 (grey, RGB, RGBA, up to 4 stacked frames) and its
  first dim is larger than 4; channels-first when its first dim is 1..4 and its last larger, or
  when both are larger than 4 (e.g. MinAtar's `(10, 10, 10)`); both 1..4 (e.g. `(3, 3, 3)`)
  could be either, and raises an EnvError asking for `image_layout`;
- `Discrete(n, start)`: a one-hot `Box(0, 1, (n,), float32)`, value `start + i` at index i;
- `MultiDiscrete(nvec, start)`: the one-hots of its entries, concatenated, `(sum(nvec),)`;
- `MultiBinary`: a float32 `Box(0, 1)` of its shape;
- Text entries of a Dict (and other spaces of strings, such as MiniGrid's `MissionSpace`):
  dropped, since the networks take numbers; the registry warns in one line when it reads the
  spec;
- MiniGrid's index image (`shoal.envs.minigrid`, recognised by its Dict of image, direction
  and mission, or alone under `ImgObsWrapper` by `minigrid.image_only`): one-hot planes per
  object, colour and state (or the indices scaled to [0, 1],
  `minigrid_image="scaled"`), channels-first float32;
- an action mask: the Dict entry `action_mask` (PettingZoo classic's and Gymnasium's name, a
  0/1 Box or MultiBinary `(n,)`) becomes a uint8 `Box(0, 1, (n,))`, 1 where the action is legal.
  It stays in the observation, so it travels with it through unrolls and replay, but no torso
  takes it as input (`network_space`); the agents mask their logits and Q-values with it
  (`shoal.ops.masking`). `MaskFromInfo` (env config `action_mask_from_info`) moves a mask an
  env gives in `info["action_mask"]` into the observation under that key;
- a Dict: each entry by these rules. Other spaces (Tuple, nested Dicts) are left as they are,
  for `EnvSpec` to refuse with its advice.

Conversions act on the trailing dims, so the same `ObservationConversion` converts one
observation or a batch `[n, ...]` (what `predict` is given). A value outside its space (a
Discrete entry out of range, an image of another shape) raises ValueError, which the vector
envs report naming the env and the step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import gymnasium as gym
import numpy as np

from shoal.envs.minigrid import (
    IndexImageSpace,
    MiniGridImageMode,
    MiniGridIndices,
    image_only,
    is_index_image_space,
    is_minigrid_space,
)
from shoal.errors import EnvError

__all__ = [
    "ACTION_MASK_KEY",
    "ConvertedObservations",
    "ImageLayout",
    "MaskFromInfo",
    "ObservationConversion",
    "adapt_observations",
    "is_text_space",
    "network_space",
]

ImageLayout = Literal["auto", "channels_first", "channels_last"]
MAX_CHANNELS = 4  # of a channels-last image that `auto` detects
ACTION_MASK_KEY = "action_mask"  # the Dict entry holding the legal actions (module docstring)


class _Keep:
    """An entry passed through as it is."""

    def __init__(self, space: gym.spaces.Space) -> None:
        self.space = space

    def __call__(self, value: Any, name: str) -> Any:
        return value


class _ChannelsFirst:
    """A channels-last image `[..., H, W, C]` -> `[..., C, H, W]`, dtype kept."""

    def __init__(self, space: gym.spaces.Box) -> None:
        self.raw_shape = space.shape
        low, high = np.moveaxis(space.low, -1, 0), np.moveaxis(space.high, -1, 0)
        self.space = gym.spaces.Box(low, high, low.shape, space.dtype)

    def __call__(self, value: Any, name: str) -> np.ndarray:
        array = np.asarray(value)
        if array.shape[-3:] != self.raw_shape:
            raise ValueError(
                f"{name} has shape {array.shape}; its space is a channels-last image of shape "
                f"{self.raw_shape}."
            )
        return np.ascontiguousarray(np.moveaxis(array, -1, -3))


class _OneHot:
    """Integers of `MultiDiscrete(nvec, start)` (a Discrete is one with `nvec=[n]` and no
    trailing dim): `[..., *nvec.shape] -> [..., sum(nvec)]` float32 one-hots, concatenated."""

    def __init__(self, space: gym.spaces.Discrete | gym.spaces.MultiDiscrete) -> None:
        self.raw = space
        scalar = isinstance(space, gym.spaces.Discrete)
        self.nvec = np.atleast_1d(np.asarray(space.n if scalar else space.nvec, np.int64))
        self.start = np.broadcast_to(np.asarray(space.start, np.int64), self.nvec.shape)
        self.dims = 0 if scalar else self.nvec.ndim
        self.offsets = (np.cumsum(self.nvec.ravel()) - self.nvec.ravel()).astype(np.int64)
        self.space = gym.spaces.Box(0.0, 1.0, (int(self.nvec.sum()),), np.float32)

    def __call__(self, value: Any, name: str) -> np.ndarray:
        array = np.asarray(value)
        trailing = self.nvec.shape if self.dims else ()
        if array.dtype.kind not in "iu" or array.shape[array.ndim - self.dims :] != trailing:
            raise ValueError(
                f"{name} is {_describe(value)}; its space {self.raw} holds integers"
                + (f" of shape {trailing}." if self.dims else ".")
            )
        index = array.astype(np.int64) - self.start.reshape(trailing)
        if index.size and ((index < 0) | (index >= self.nvec.reshape(trailing))).any():
            raise ValueError(f"{name} is {_describe(value)}, outside its space {self.raw}.")
        lead = array.shape[: array.ndim - self.dims]
        positions = index.reshape(*lead, -1) + self.offsets
        out = np.zeros((*lead, self.space.shape[0]), np.float32)
        np.put_along_axis(out, positions, 1.0, axis=-1)
        return out


class _Binary:
    """MultiBinary 0/1 values as float32, shape kept."""

    def __init__(self, space: gym.spaces.MultiBinary) -> None:
        self.raw = space
        self.space = gym.spaces.Box(0.0, 1.0, space.shape, np.float32)

    def __call__(self, value: Any, name: str) -> np.ndarray:
        array = np.asarray(value)
        shape = self.raw.shape
        if array.dtype.kind not in "biu" or array.shape[array.ndim - len(shape) :] != shape:
            raise ValueError(f"{name} is {_describe(value)}; its space {self.raw} holds 0/1.")
        return array.astype(np.float32)


class _Mask:
    """An action mask `[..., n]` of 0/1 (or bool) values as uint8, 1 where legal."""

    def __init__(self, space: gym.spaces.Space) -> None:
        shape = tuple(space.shape or ())
        if not isinstance(space, gym.spaces.Box | gym.spaces.MultiBinary) or len(shape) != 1:
            raise EnvError(
                f"The observation entry {ACTION_MASK_KEY!r} is {space}; shoal reads it as the "
                "legal actions, a 0/1 Box or MultiBinary of shape (num_actions,). Rename the "
                "entry if it is not an action mask, or give the mask in that form."
            )
        self.raw = space
        self.space = gym.spaces.Box(0, 1, shape, np.uint8)

    def __call__(self, value: Any, name: str) -> np.ndarray:
        array = np.asarray(value)
        if array.shape[-1:] != self.space.shape or array.dtype.kind not in "biuf":
            raise ValueError(
                f"{name} is {_describe(value)}; an action mask of shape {self.space.shape}."
            )
        return (array != 0).astype(np.uint8)


def network_space(space: gym.spaces.Space) -> gym.spaces.Space:
    """`space` without its action mask entry: what a torso takes as input."""
    if isinstance(space, gym.spaces.Dict) and ACTION_MASK_KEY in space.spaces:
        return gym.spaces.Dict({k: v for k, v in space.spaces.items() if k != ACTION_MASK_KEY})
    return space


class MaskFromInfo(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """An env that gives its legal actions in `info["action_mask"]` (as Gymnasium's Taxi and
    many board games do), with the mask moved into a Dict observation
    `{"observation": obs, "action_mask": mask}` (or added to a Dict observation's entries).

    A mask must come with every reset and step (the final step too); one missing raises an
    EnvError that names the step. Only for discrete action spaces."""

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        if not isinstance(env.action_space, gym.spaces.Discrete):
            raise EnvError(
                f"action_mask_from_info reads masks of discrete actions; this env's action space "
                f"is {env.action_space}. Set action_mask_from_info false."
            )
        mask = gym.spaces.Box(0, 1, (int(env.action_space.n),), np.uint8)
        inner = env.observation_space
        self._into_dict = isinstance(inner, gym.spaces.Dict)
        entries = dict(inner.spaces) if self._into_dict else {"observation": inner}
        self.observation_space = gym.spaces.Dict({**entries, ACTION_MASK_KEY: mask})

    def _with_mask(self, obs: Any, info: dict[str, Any], when: str) -> Any:
        if ACTION_MASK_KEY not in info:
            raise EnvError(
                f"The env gave no info[{ACTION_MASK_KEY!r}] at {when}, and "
                "action_mask_from_info is set: give the legal actions with every reset and "
                "step, or set action_mask_from_info false."
            )
        mask = (np.asarray(info[ACTION_MASK_KEY]) != 0).astype(np.uint8)
        entries = dict(obs) if self._into_dict else {"observation": obs}
        return {**entries, ACTION_MASK_KEY: mask}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return self._with_mask(obs, info, "reset"), info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._with_mask(obs, info, "a step"), reward, terminated, truncated, info


class ObservationConversion:
    """From an env's observation space to the one shoal's networks take (module docstring).

    `space` is the converted space, `raw_space` the env's, `dropped` the Dict keys left out
    and `changes` whether anything is converted. Calling it converts one observation or a
    batch, raising ValueError for one that does not fit `raw_space`."""

    def __init__(
        self,
        raw_space: gym.spaces.Space,
        image_layout: ImageLayout = "auto",
        minigrid_image: MiniGridImageMode = "one_hot",
    ) -> None:
        self.raw_space = raw_space
        self.dropped: tuple[str, ...] = ()
        if isinstance(raw_space, gym.spaces.Dict):
            entries = {
                k: _Mask(s) if k == ACTION_MASK_KEY else _entry(s, image_layout, repr(k))
                for k, s in raw_space.spaces.items()
            }
            if is_minigrid_space(raw_space):
                entries["image"] = MiniGridIndices(raw_space["image"], minigrid_image)
            self.dropped = tuple(k for k, entry in entries.items() if entry is None)
            self._entries = {k: entry for k, entry in entries.items() if entry is not None}
            if not self._entries:
                raise EnvError(
                    f"Every entry of the observation space {raw_space} is text, which shoal's "
                    "networks cannot take. Give the env a numeric observation, e.g. by wrapping "
                    "it in a gymnasium.ObservationWrapper that encodes the text."
                )
            self.space: gym.spaces.Space = gym.spaces.Dict(
                {k: entry.space for k, entry in self._entries.items()}
            )
            self._entry = None
        elif is_index_image_space(raw_space):  # MiniGrid's image alone (`ImgObsWrapper`)
            self._entry = MiniGridIndices(raw_space, minigrid_image)
            self.space = self._entry.space
        else:
            entry = _entry(raw_space, image_layout, None)
            if entry is None:
                raise EnvError(
                    f"The observation space {raw_space} is text, which shoal's networks cannot "
                    "take. Give the env a numeric observation, e.g. by wrapping it in a "
                    "gymnasium.ObservationWrapper that encodes the text."
                )
            self._entry = entry
            self.space = entry.space
        kept = [self._entry] if self._entry is not None else self._entries.values()
        self.changes = bool(self.dropped) or any(not isinstance(e, _Keep) for e in kept)

    def __call__(self, obs: Any) -> Any:
        if self._entry is not None:
            return self._entry(obs, "the observation")
        if not isinstance(obs, Mapping):
            raise ValueError(
                f"the observation is {_describe(obs)}; its space is a Dict with keys "
                f"{sorted(self.raw_space.spaces)}."
            )
        unknown = sorted(set(obs) - set(self.raw_space.spaces))
        missing = sorted(set(self._entries) - set(obs))
        if unknown or missing:
            raise ValueError(
                f"the observation has keys {sorted(obs)}; its space has keys "
                f"{sorted(self.raw_space.spaces)}"
                + (
                    f" (text entries {list(self.dropped)} may be left out)."
                    if self.dropped
                    else "."
                )
            )
        return {k: entry(obs[k], f"observation[{k!r}]") for k, entry in self._entries.items()}


class ConvertedObservations(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """`env` with its observations converted by `conversion` (whose `raw_space` is the env's)."""

    def __init__(
        self,
        env: gym.Env,
        image_layout: ImageLayout = "auto",
        minigrid_image: MiniGridImageMode = "one_hot",
    ) -> None:
        # Recorded, so Gymnasium can make the wrapper again from the env's spec (its checker does).
        gym.utils.RecordConstructorArgs.__init__(
            self, image_layout=image_layout, minigrid_image=minigrid_image
        )
        super().__init__(env)
        self.conversion = ObservationConversion(env.observation_space, image_layout, minigrid_image)
        self.observation_space = self.conversion.space

    def observation(self, observation: Any) -> Any:
        return self.conversion(observation)


def adapt_observations(
    env: gym.Env,
    image_layout: ImageLayout = "auto",
    minigrid_image: MiniGridImageMode = "one_hot",
    action_mask_from_info: bool = False,
) -> gym.Env:
    """`env` with observations shoal's networks take: wrapped in `ConvertedObservations` if
    its space needs converting, else `env` itself (in `MaskFromInfo` first when
    `action_mask_from_info`)."""
    if action_mask_from_info:
        env = MaskFromInfo(env)
    if image_only(env):  # MiniGrid's index image under ImgObsWrapper: not pixels
        env = IndexImageSpace(env)
    adapted = ConvertedObservations(env, image_layout, minigrid_image)
    return adapted if adapted.conversion.changes else env


def is_text_space(space: gym.spaces.Space) -> bool:
    """A gymnasium Text space, or another space whose samples are strings (MiniGrid's
    `MissionSpace`)."""
    if isinstance(space, gym.spaces.Text):
        return True
    if isinstance(space, gym.spaces.Box | gym.spaces.Discrete | gym.spaces.Dict | gym.spaces.Tuple):
        return False
    try:
        return isinstance(space.sample(), str)
    except Exception:  # a space that cannot sample is not ours to judge: EnvSpec refuses it
        return False


def _entry(space: gym.spaces.Space, layout: ImageLayout, key: str | None):
    """The converter of one entry (None: dropped text)."""
    if isinstance(space, gym.spaces.Box) and len(space.shape) == 3:
        return _ChannelsFirst(space) if _channels_last(space.shape, layout, key) else _Keep(space)
    if isinstance(space, gym.spaces.Discrete | gym.spaces.MultiDiscrete):
        return _OneHot(space)
    if isinstance(space, gym.spaces.MultiBinary):
        return _Binary(space)
    if is_text_space(space):
        return None
    return _Keep(space)


def _channels_last(shape: tuple[int, ...], layout: ImageLayout, key: str | None) -> bool:
    if layout != "auto":
        return layout == "channels_last"
    first, last = shape[0], shape[-1]
    if first <= MAX_CHANNELS and last <= MAX_CHANNELS:
        what = "The observation" if key is None else f"The observation entry {key}"
        raise EnvError(
            f"{what} is an image of shape {shape}, which could be channels-first (C, H, W) or "
            f"channels-last (H, W, C): both its first and last dims are at most {MAX_CHANNELS}. "
            "Say which with env_config={'image_layout': 'channels_last'} (or 'channels_first'); "
            "on the command line --env.image-layout channels_last."
        )
    return last <= MAX_CHANNELS < first


def _describe(value: Any) -> str:
    try:
        array = np.asarray(value)
    except ValueError:  # ragged nested lists
        return f"a {type(value).__name__}"
    if array.dtype.kind not in "biuf":
        return f"a {type(value).__name__} ({value!r:.60})"
    if array.ndim == 0:
        return repr(array.item())
    return f"an array {array.dtype} of shape {array.shape} ({array.ravel()[:8].tolist()}...)"
