"""Stacked frames of a sequence stored once each: Atari's `k` stacked frames change by one frame
per step, so a sequence of `T` stacks holds only `T + k - 1` distinct frames.

`pack_stacks` keeps the first stack whole and the newest frame of each later one;
`unpack_stacks` rebuilds the stacks, padding where an episode starts inside the sequence the
way the env's frame stack does: the episode's first frame repeated (`"reset"`, gymnasium's
`FrameStackObservation` default) or zeros (`"zero"`). This is the frame sharing of the DQN
replay (Mnih et al. 2015, and `TransitionReplay`) applied within a sequence.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

__all__ = ["pack_stacks", "unpack_stacks"]

Padding = Literal["reset", "zero"]


def pack_stacks(stacks: np.ndarray) -> np.ndarray:
    """`[B, T, k, *frame]` stacks -> `[B, T + k - 1, *frame]` frames."""
    return np.concatenate([stacks[:, 0], stacks[:, 1:, -1]], axis=1)


def unpack_stacks(
    frames: np.ndarray, first: np.ndarray, k: int, padding: Padding = "reset"
) -> np.ndarray:
    """`[B, T + k - 1, *frame]` frames and `first [B, T]` -> `[B, T, k, *frame]` stacks.

    Stack t holds frames `t .. t + k - 1` (frame `t + k - 1` is step t's newest). Frames older
    than the latest episode start `s <= t` belong to the previous episode: they are replaced by
    frame `s + k - 1` (the episode's first) or zeros. An episode that starts at step 0 is
    already padded in the first stack, which is stored whole.
    """
    batch, steps = first.shape
    t = np.arange(steps)[:, None]
    source = t + np.arange(k)[None, :]  # [T, k] frame index
    step_of = source - (k - 1)  # the step whose newest frame it is (< 0: in the first stack)
    starts = np.maximum.accumulate(np.where(first, np.arange(steps), -1), axis=1)  # [B, T]
    start = starts[:, :, None]
    pad = (start >= 1) & (step_of[None] < start)  # [B, T, k]
    index = np.where(pad, start + k - 1, source[None])
    stacks = frames[np.arange(batch)[:, None, None], index]
    if padding == "zero":
        stacks[pad] = 0
    return stacks
