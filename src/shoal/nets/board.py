"""A small convolutional torso for board games whose planes come channels-last.

PettingZoo's classic games observe the board as `[H, W, planes]` (connect four `6 x 7 x 2`, tic-
tac-toe `3 x 3 x 2`: the mover's stones, the opponent's), which the image torsos (channels-first
`[C, H, W]`, `shoal.nets.cnn`) refuse. Lines of stones are local patterns that convolutions
see wherever they are on the board, which an MLP over the flattened board must learn square by
square.
"""

from __future__ import annotations

import gymnasium as gym
import torch
from torch import nn

from shoal.errors import ConfigError
from shoal.nets.cnn import _RELU_GAIN, _init, observation_scale, to_float

__all__ = ["BoardCNN"]


class BoardCNN(nn.Module):
    """Two 3x3 convolutions (`channels`, padding 1, ReLU) over the whole board, then a linear
    layer to `features` with ReLU. `[B, H, W, P] -> [B, features]` (channels-last planes)."""

    def __init__(
        self, observation_space: gym.spaces.Box, channels: int = 32, features: int = 128
    ) -> None:
        super().__init__()
        shape = tuple(observation_space.shape or ())
        if len(shape) != 3:
            raise ConfigError(
                f"BoardCNN takes boards [H, W, planes] (channels-last), got shape {shape}."
            )
        h, w, planes = shape
        self.scale = observation_scale(observation_space)
        self.layers = nn.Sequential(
            _init(nn.Conv2d(planes, channels, 3, 1, 1), _RELU_GAIN),
            nn.ReLU(),
            _init(nn.Conv2d(channels, channels, 3, 1, 1), _RELU_GAIN),
            nn.ReLU(),
            nn.Flatten(),
            _init(nn.Linear(channels * h * w, features), _RELU_GAIN),
            nn.ReLU(),
        )
        self.out_features = features

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """`[B, H, W, P]` raw boards -> `[B, features]`."""
        out: torch.Tensor = self.layers(to_float(obs, self.scale, self).permute(0, 3, 1, 2))
        return out
