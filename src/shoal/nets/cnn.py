"""Convolutional torsos for image observations `[B, C, H, W]`: the Nature DQN and MinAtar nets."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from shoal.errors import ConfigError

__all__ = ["MinAtarCNN", "NatureCNN", "image_shape", "observation_scale", "to_float"]

# ReLU halves the variance of its input; √2 restores it (He et al. 2015), as PPO's MLPs do.
_RELU_GAIN = 2**0.5


def observation_scale(space: gym.spaces.Box) -> float:
    """`1 / high.max()` for uint8 spaces, else 1.

    Atari frames (high 255) land in [0, 1]; MinAtar frames (high 1) are left as they are.
    """
    if space.dtype != np.uint8:
        return 1.0
    return 1.0 / max(float(np.max(space.high)), 1.0)


def to_float(obs: torch.Tensor, scale: float, module: nn.Module) -> torch.Tensor:
    """Raw observations (often uint8) as float32, times `scale`.

    shoal's networks are float32; checking `module`'s parameter dtype on every call would cost
    more than a small policy's whole forward pass on the acting path.
    """
    if obs.dtype == torch.float32:
        return obs * scale if scale != 1.0 else obs
    x = obs.float()  # a new tensor of our own, so it can be scaled in place
    return x.mul_(scale) if scale != 1.0 else x


def image_shape(space: gym.Space, name: str, min_size: int = 1) -> tuple[int, int, int]:
    """`(C, H, W)` of a channels-first image Box, or a ConfigError saying why `name` cannot."""
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 3:
        raise ConfigError(
            f"{name} needs an image observation space, a Box of shape (C, H, W), but got {space}. "
            "Use kind='mlp' (or kind='auto') for vector observations."
        )
    c, h, w = (int(n) for n in space.shape)
    if min(h, w) < min_size:
        raise ConfigError(
            f"{name} needs images of at least {min_size}x{min_size} pixels, but the observation "
            f"space {space} has H={h}, W={w}. Images are channels-first (C, H, W); if yours are "
            "(H, W, C), transpose them in an env wrapper. For small frames use kind='minatar_cnn'."
        )
    return c, h, w


def _conv_out(size: int, kernel: int, stride: int) -> int:
    return (size - kernel) // stride + 1


def _init(layer: nn.Conv2d | nn.Linear, gain: float) -> nn.Module:
    nn.init.orthogonal_(layer.weight, gain)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)
    return layer


class NatureCNN(nn.Module):
    """The DQN torso of Mnih et al. 2015, "Human-level control through deep RL".

    Conv 32 8x8 stride 4, conv 64 4x4 stride 2, conv 64 3x3 stride 1, each with ReLU, then a
    linear layer to `features` with ReLU. `[B, C, H, W] -> [B, features]`; H, W >= 36.
    uint8 input is scaled by `1 / high.max()` here.
    """

    # (out_channels, kernel, stride) per conv layer.
    _LAYERS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))
    # The smallest input for which the three convs leave at least one pixel.
    MIN_SIZE = 36

    def __init__(self, observation_space: gym.spaces.Box, features: int = 512) -> None:
        super().__init__()
        c, h, w = image_shape(observation_space, "NatureCNN", self.MIN_SIZE)
        self.scale = observation_scale(observation_space)
        layers: list[nn.Module] = []
        for out_channels, kernel, stride in self._LAYERS:
            layers += [_init(nn.Conv2d(c, out_channels, kernel, stride), _RELU_GAIN), nn.ReLU()]
            c, h, w = out_channels, _conv_out(h, kernel, stride), _conv_out(w, kernel, stride)
        layers += [
            nn.Flatten(),
            _init(nn.Linear(c * h * w, features), _RELU_GAIN),
            nn.ReLU(),
        ]
        self.layers = nn.Sequential(*layers)
        self.out_features = features

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """`[B, C, H, W]` raw observations -> `[B, features]`."""
        # Channels-last: oneDNN's convolutions ran 7-16% faster on this layout on a CPU (IMPALA
        # training on ViZDoom); the weights are as they were, the results equal to rounding.
        x = obs.contiguous(memory_format=torch.channels_last) if obs.dim() == 4 else obs
        return self.layers(to_float(x, self.scale, self))


class MinAtarCNN(nn.Module):
    """The MinAtar torso of Young & Tian 2019, "MinAtar: An Atari-inspired testbed".

    One conv 16 3x3 stride 1 with ReLU, then a linear layer to `features` with ReLU.
    `[B, C, H, W] -> [B, features]`; H, W >= 3. uint8 input is scaled by `1 / high.max()`,
    which is 1 for MinAtar's 0/1 frames.
    """

    MIN_SIZE = 3

    def __init__(self, observation_space: gym.spaces.Box, features: int = 128) -> None:
        super().__init__()
        c, h, w = image_shape(observation_space, "MinAtarCNN", self.MIN_SIZE)
        self.scale = observation_scale(observation_space)
        flat = 16 * _conv_out(h, 3, 1) * _conv_out(w, 3, 1)
        self.layers = nn.Sequential(
            _init(nn.Conv2d(c, 16, 3, 1), _RELU_GAIN),
            nn.ReLU(),
            nn.Flatten(),
            _init(nn.Linear(flat, features), _RELU_GAIN),
            nn.ReLU(),
        )
        self.out_features = features

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """`[B, C, H, W]` raw observations -> `[B, features]`."""
        return self.layers(to_float(obs, self.scale, self))
