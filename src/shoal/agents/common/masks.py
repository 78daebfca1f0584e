"""Action masks as the agents read them, and Dict observations packed for Box-only replays.

An env's legal actions travel in the observation, as its Dict entry `action_mask`
(`shoal.envs.observations`): the on-policy queue and the unrolls carry them with the rest of the
observation, and the value family's replays (which store one array per observation) carry them
packed with it (`ObsPacking`), so a learner finds the mask of every state it computes a target
from (s' for DQN, every step of a sequence for R2D2 and Agent57).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from shoal.envs.observations import ACTION_MASK_KEY

__all__ = ["ObsPacking", "legal_actions", "legal_actions_np"]


def legal_actions(obs: Any) -> torch.Tensor | None:
    """The legal actions `[..., A]` bool of a (batch of) observation(s), or None when the
    observation carries no mask (every action legal)."""
    if isinstance(obs, Mapping) and ACTION_MASK_KEY in obs:
        return torch.as_tensor(obs[ACTION_MASK_KEY]).bool()
    return None


def legal_actions_np(obs: Any) -> np.ndarray | None:
    """`legal_actions` of numpy observations, as a numpy bool array."""
    if isinstance(obs, Mapping) and ACTION_MASK_KEY in obs:
        return np.asarray(obs[ACTION_MASK_KEY]).astype(bool)
    return None


class ObsPacking:
    """A Dict observation as one float32 vector `[..., D]` and back, for replays that store one
    array per observation (DQN's transitions, R2D2's and Agent57's sequences).

    Each entry is flattened and cast to float32 (exact for the 0/1 masks, one-hots, uint8 and
    float32 entries the observation conversion gives), in key order. Frames are not stored once
    each as for a Box of stacked Atari frames, so image entries cost 4 bytes a value.
    """

    def __init__(self, space: gym.spaces.Dict) -> None:
        self.keys = list(space.spaces)
        self.shapes = {k: tuple(int(d) for d in space[k].shape or ()) for k in self.keys}
        self.dtypes = {k: np.dtype(space[k].dtype) for k in self.keys}
        sizes = [math.prod(self.shapes[k]) for k in self.keys]
        self.size = int(sum(sizes))
        self.offsets = dict(zip(self.keys, np.cumsum([0, *sizes[:-1]]).tolist(), strict=True))
        self.sizes = dict(zip(self.keys, sizes, strict=True))

    def pack(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        """`{key: [..., *shape]}` -> `[..., D]` float32."""
        first = self.keys[0]
        lead = np.shape(obs[first])[: np.ndim(obs[first]) - len(self.shapes[first])]
        # Sizes spelled out rather than -1: a batch of none (an unroll without truncations has
        # no final observations) reshapes too.
        parts = [np.asarray(obs[k], np.float32).reshape(*lead, self.sizes[k]) for k in self.keys]
        return np.concatenate(parts, -1)

    def unpack(self, packed: torch.Tensor) -> dict[str, torch.Tensor]:
        """`[..., D]` -> `{key: [..., *shape]}` in each entry's dtype."""
        lead = packed.shape[:-1]
        out = {}
        for k in self.keys:
            part = packed[..., self.offsets[k] : self.offsets[k] + self.sizes[k]]
            dtype = torch.from_numpy(np.zeros(0, self.dtypes[k])).dtype
            out[k] = part.reshape(*lead, *self.shapes[k]).to(dtype)
        return out
