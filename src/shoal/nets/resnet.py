"""The IMPALA residual torso for image observations `[B, C, H, W]`."""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import torch
from torch import nn

from shoal.errors import ConfigError
from shoal.nets.cnn import image_shape, observation_scale, to_float
from shoal.nets.mlp import orthogonal_init

__all__ = ["ImpalaResNet"]


class _ResidualBlock(nn.Module):
    """`x + conv(relu(conv(relu(x))))` with 3x3 same-padding convs; shape-preserving."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv1(torch.relu(self.conv0(torch.relu(x))))


class _Stage(nn.Module):
    """Conv 3x3, max-pool 3x3 stride 2, two residual blocks. `[B, C, H, W] -> [B, C', H', W']`.

    `H' = ceil(H / 2)`, `W' = ceil(W / 2)`.
    """

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.res0 = _ResidualBlock(out_channels)
        self.res1 = _ResidualBlock(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.res1(self.res0(self.pool(self.conv(x))))


class ImpalaResNet(nn.Module):
    """The deep IMPALA torso of Espeholt et al. 2018, "IMPALA", Fig. 3 (right).

    One stage per entry of `channels` (conv 3x3, max-pool 3x3 stride 2, two residual blocks),
    then ReLU, a linear layer to `features` and ReLU. `[B, C, H, W] -> [B, features]`; each stage
    halves H and W (rounding up), so 84x84 Atari frames reach the linear layer as 11x11.
    uint8 input is scaled by `1 / high.max()` here.

    Convs keep PyTorch's default init, as the reference implementations do: √2-gain orthogonal
    weights in both convs of every residual branch would grow activations with depth.
    """

    def __init__(
        self,
        observation_space: gym.spaces.Box,
        channels: Sequence[int] = (16, 32, 32),
        features: int = 256,
    ) -> None:
        super().__init__()
        c, h, w = image_shape(observation_space, "ImpalaResNet")
        if not channels or min(channels) < 1:
            raise ConfigError(
                f"ImpalaResNet needs at least one stage with a positive channel count, but got "
                f"channels={tuple(channels)}; the paper uses (16, 32, 32)."
            )
        self.scale = observation_scale(observation_space)
        stages: list[nn.Module] = []
        for out_channels in channels:
            stages.append(_Stage(c, out_channels))
            c, h, w = out_channels, (h + 1) // 2, (w + 1) // 2
        self.stages = nn.Sequential(*stages)
        self.head = nn.Sequential(
            nn.ReLU(),
            nn.Flatten(),
            orthogonal_init(nn.Linear(c * h * w, features), 2**0.5),
            nn.ReLU(),
        )
        self.out_features = features

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """`[B, C, H, W]` raw observations -> `[B, features]`."""
        return self.head(self.stages(to_float(obs, self.scale, self)))
