"""MiniGrid (Chevalier-Boisvert et al. 2023, "Minigrid & Miniworld"): its ids, and its image made
something a network can read.

MiniGrid's observation is `Dict(image, direction, mission)`. The image `(V, V, 3)` is not
pixels: each cell holds three indices, object (0-10), colour (0-5) and state (0-2), yet its
space says uint8 0-255, so an image torso that scales by 1/255 sees values under 0.04 and a
near-constant input (PPO's greedy policy then scored 0.0 on Empty-5x5 where its sampled one
scored 0.90). shoal's observation conversion (`shoal.envs.observations`) recognises MiniGrid's
observation space (`is_minigrid_space`) and converts its image with `MiniGridIndices`,
channels-first, to

- `one_hot` (default): 20 planes of 0/1, one per object, colour and state, `(20, V, V)`
  float32, since the indices are categories, not magnitudes;
- `scaled`: the three indices divided by their largest value, `(3, V, V)` float32 in [0, 1].

`direction` (Discrete(4)) becomes a one-hot and `mission` (text) is dropped by the same
conversion, which warns in one line when the spec is read. This holds for MiniGrid ids, for
MiniGrid env objects, and for `predict` on the observations MiniGrid returns.

A MiniGrid env wrapped in `ImgObsWrapper` (the usual Stable-Baselines3 recipe) observes the
index image alone, under the same 0-255 space, which the torso took for pixels (PPO's greedy
policy scored 0.00 where its sampled one scored 0.66). `image_only` recognises such an env
(its observation space is its MiniGrid's own image space), and `IndexImageSpace` gives it the
image's true bounds (object 0-10, colour 0-5, state 0-2: `index_image_space`), which no
picture has, so that the conversion, and `predict` from the saved spaces, read it as indices.
"""

from __future__ import annotations

import sys
from typing import Any, Literal

import gymnasium as gym
import numpy as np

__all__ = [
    "IndexImageSpace",
    "MiniGridImageMode",
    "MiniGridIndices",
    "image_only",
    "index_image_space",
    "is_index_image_space",
    "is_minigrid_space",
    "make_minigrid",
    "minigrid_ids",
]

MiniGridImageMode = Literal["one_hot", "scaled"]
# Sizes of MiniGrid's object, colour and state indices (minigrid.core.constants).
OBJECTS, COLOURS, STATES = 11, 6, 3
_SIZES = np.array([OBJECTS, COLOURS, STATES])
_OFFSETS = np.array([0, OBJECTS, OBJECTS + COLOURS])


def minigrid_ids() -> list[str]:
    """Every registered MiniGrid and BabyAI id (importing minigrid registers them)."""
    import minigrid  # noqa: F401

    return [i for i in gym.envs.registry if i.startswith(("MiniGrid-", "BabyAI-"))]


def make_minigrid(env_id: str) -> gym.Env:
    """A MiniGrid env by id, minigrid imported first so that its ids are registered."""
    import minigrid  # noqa: F401

    return gym.make(env_id)


def index_image_space(shape: tuple[int, ...]) -> gym.spaces.Box:
    """MiniGrid's index image `(V, V, 3)` with its true bounds, per channel."""
    high = np.broadcast_to((_SIZES - 1).astype(np.uint8), shape)
    return gym.spaces.Box(np.zeros(shape, np.uint8), high.copy(), shape, np.uint8)


def is_index_image_space(space: gym.spaces.Space) -> bool:
    """Whether `space` is `index_image_space` of some view (what `IndexImageSpace` gives)."""
    return (
        isinstance(space, gym.spaces.Box)
        and space.dtype == np.uint8
        and len(space.shape) == 3
        and space.shape[2] == 3
        and space == index_image_space(space.shape)
    )


def image_only(env: gym.Env) -> bool:
    """Whether `env` is a MiniGrid env observing its index image alone (`ImgObsWrapper` over
    a partial view): its observation space is its MiniGrid's own `image` space. A fully
    observed grid (`FullyObsWrapper`) keeps the agent's direction in a state channel, outside
    the indices, and is left as it is."""
    if "minigrid" not in sys.modules:  # not imported: no MiniGrid env exists
        return False
    from minigrid.minigrid_env import MiniGridEnv

    base = env.unwrapped
    if not isinstance(base, MiniGridEnv):
        return False
    spaces = getattr(base.observation_space, "spaces", {})
    wrapped, names = env, []
    while isinstance(wrapped, gym.Wrapper):
        names.append(type(wrapped).__name__)
        wrapped = wrapped.env
    return (
        "image" in spaces
        and env.observation_space == spaces["image"]
        and not any(name.startswith("FullyObs") for name in names)
    )


class IndexImageSpace(gym.Wrapper):
    """A MiniGrid env observing its index image alone, its space given the true bounds
    (`index_image_space`); the observations pass unchanged."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = index_image_space(env.observation_space.shape)


def is_minigrid_space(space: gym.spaces.Space) -> bool:
    """MiniGrid's observation space: a Dict of an index `image` `(V, V, 3)` uint8 with V odd
    (the agent's view), a `direction` Discrete(4) and a text `mission`. MiniGrid's RGB wrappers
    (pixels, V a multiple of the tile size) are left to be read as screens; a fully observed
    grid (`FullyObsWrapper`) holds the agent's direction (0-3) in its cell's state channel,
    which `MiniGridIndices` refuses as out of range."""
    from shoal.envs.observations import is_text_space

    if not isinstance(space, gym.spaces.Dict) or not {"image", "direction", "mission"} <= set(
        space.spaces
    ):
        return False
    image, direction = space["image"], space["direction"]
    return (
        isinstance(image, gym.spaces.Box)
        and image.dtype == np.uint8
        and len(image.shape) == 3
        and image.shape[0] == image.shape[1]
        and image.shape[0] % 2 == 1  # the agent's view is odd; RGB wrappers' pixels (56) not
        and image.shape[2] == 3
        and isinstance(direction, gym.spaces.Discrete)
        and int(direction.n) == 4
        and is_text_space(space["mission"])
    )


class MiniGridIndices:
    """MiniGrid's index image `[..., H, W, 3]` -> `[..., C, H, W]` float32: one-hot planes
    (C = 20) or scaled indices (C = 3), per the module docstring."""

    def __init__(self, space: gym.spaces.Box, mode: MiniGridImageMode = "one_hot") -> None:
        self.raw_shape = space.shape
        self.mode = mode
        planes = int(_SIZES.sum()) if mode == "one_hot" else 3
        height, width, _ = space.shape
        self.space = gym.spaces.Box(0.0, 1.0, (planes, height, width), np.float32)

    def __call__(self, value: Any, name: str) -> np.ndarray:
        index = np.asarray(value)
        if index.dtype.kind not in "iu" or index.shape[-3:] != self.raw_shape:
            raise ValueError(
                f"{name} has shape {index.shape} ({index.dtype}); MiniGrid's image is "
                f"{self.raw_shape} integer indices."
            )
        index = index.astype(np.int64)
        if (index < 0).any() or (index >= _SIZES).any():
            raise ValueError(
                f"{name} holds an index outside MiniGrid's object 0-{OBJECTS - 1}, colour "
                f"0-{COLOURS - 1} and state 0-{STATES - 1} (largest: "
                f"{index.reshape(-1, 3).max(0).tolist()})."
            )
        if self.mode == "scaled":
            scaled = (index / (_SIZES - 1)).astype(np.float32)
            return np.ascontiguousarray(np.moveaxis(scaled, -1, -3))
        planes = np.zeros((*index.shape[:-1], int(_SIZES.sum())), np.float32)
        np.put_along_axis(planes, index + _OFFSETS, 1.0, axis=-1)
        return np.ascontiguousarray(np.moveaxis(planes, -1, -3))
