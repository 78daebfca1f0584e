"""AlphaZero's network: a residual tower with a policy head and a value head (Silver et al.
2017, "Mastering the game of Go without human knowledge", Methods; the 2018 paper's is the same
with other input planes), small by default: 2 blocks of 32 channels for tic-tac-toe.

Input: the board planes of the player to move, PettingZoo's `observation` `[B, H, W, 2]`
(channels last, as the env gives it). Output: policy logits `[B, A]` and a value `[B]` in
[-1, 1] for the player to move."""

from __future__ import annotations

import gymnasium as gym
import torch
from torch import nn

from shoal.agents.alphazero.config import AlphaZeroConfig
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError


class ResidualBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


class PolicyValueNet(nn.Module):
    """`forward(planes [B, H, W, C]) -> (logits [B, A], value [B])`."""

    def __init__(self, rows: int, cols: int, planes: int, actions: int, config: AlphaZeroConfig):
        super().__init__()
        c = config.channels
        self.stem = nn.Sequential(
            nn.Conv2d(planes, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()
        )
        self.tower = nn.Sequential(*(ResidualBlock(c) for _ in range(config.blocks)))
        self.policy_head = nn.Sequential(
            nn.Conv2d(c, 2, 1, bias=False),
            nn.BatchNorm2d(2),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(2 * rows * cols, actions),
        )
        self.value_head = nn.Sequential(
            nn.Conv2d(c, 1, 1, bias=False),
            nn.BatchNorm2d(1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(rows * cols, c),
            nn.ReLU(),
            nn.Linear(c, 1),
            nn.Tanh(),
        )

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.tower(self.stem(planes.float().permute(0, 3, 1, 2)))
        return self.policy_head(x), self.value_head(x).squeeze(-1)


def board_shape(spec: EnvSpec) -> tuple[int, int, int, int]:
    """(rows, cols, planes, actions) of a board game's spec, or a ConfigError saying what
    AlphaZero needs."""
    space = spec.observation_space
    ok = (
        isinstance(space, gym.spaces.Dict)
        and {"observation", "action_mask"} <= set(space.spaces)
        and len(space["observation"].shape) == 3
        and isinstance(spec.action_space, gym.spaces.Discrete)
    )
    if not ok:
        raise ConfigError(
            f"alphazero plays two-player board games whose observation is PettingZoo's dict of "
            f"`observation` [H, W, C] planes and `action_mask`; {spec.env_id} has "
            f"{space} and {spec.action_space}. Use --env tictactoe or --env connect_four."
        )
    rows, cols, planes = space["observation"].shape
    return rows, cols, planes, int(spec.action_space.n)


def make_networks(spec: EnvSpec, config: AlphaZeroConfig) -> PolicyValueNet:
    rows, cols, planes, actions = board_shape(spec)
    return PolicyValueNet(rows, cols, planes, actions, config)
