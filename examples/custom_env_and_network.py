"""Bring your own environment and network: an env factory, a torso and a config, nothing else.

The environment is a corridor whose goal moves every episode; the agent sees its position and
the goal as two one-hot vectors in a Dict observation. The network embeds each and mixes them.
shoal picks the policy and value heads from the action space and checks that the network fits
before training starts.

    python examples/custom_env_and_network.py [RUNS_DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

import shoal

# Factories are named by import path. Run as a script, this file imports itself under its own
# name, so the path also works in other processes (`PYTHONPATH=examples shoal eval RUN_DIR`).
if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
MODULE = Path(__file__).stem if __name__ == "__main__" else __name__


class Corridor(gym.Env):
    """Walk left (0) or right (1) to the goal: +1 on arrival, -0.01 per step, 4 x length steps."""

    def __init__(self, length: int = 8) -> None:
        one_hot = gym.spaces.Box(0.0, 1.0, (length,), np.float32)
        self.observation_space = gym.spaces.Dict({"position": one_hot, "goal": one_hot})
        self.action_space = gym.spaces.Discrete(2)
        self.length = length
        self.position = self.goal = self.steps = 0

    def _obs(self) -> dict[str, np.ndarray]:
        eye = np.eye(self.length, dtype=np.float32)
        return {"position": eye[self.position], "goal": eye[self.goal]}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.position, self.goal = self.np_random.choice(self.length, size=2, replace=False)
        self.steps = 0
        return self._obs(), {}

    def step(self, action: int):
        self.position = int(np.clip(self.position + (1 if action == 1 else -1), 0, self.length - 1))
        self.steps += 1
        arrived = self.position == self.goal
        reward = 1.0 if arrived else -0.01
        return self._obs(), reward, arrived, self.steps >= 4 * self.length and not arrived, {}


def make_corridor() -> gym.Env:
    return Corridor(length=8)


class CorridorNet(nn.Module):
    """`{"position": [B, L], "goal": [B, L]} -> [B, 64]`: embed each one-hot, then mix."""

    def __init__(self, observation_space: gym.spaces.Dict) -> None:
        super().__init__()
        length = observation_space["position"].shape[0]
        self.position = nn.Linear(length, 32)
        self.goal = nn.Linear(length, 32)
        self.mix = nn.Sequential(nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.out_features = 64  # shoal builds the heads on this width

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.mix(torch.cat([self.position(obs["position"]), self.goal(obs["goal"])], -1))


def make_network(observation_space: gym.spaces.Dict) -> nn.Module:
    return CorridorNet(observation_space)


AGENT_CONFIG = {
    "torso": f"{MODULE}:make_network",
    "learning_rate": 1e-3,
    "unroll_length": 32,
    "minibatch_size": 128,
    "num_epochs": 4,
    "gamma": 0.95,
}


def main(runs_dir: str = "runs") -> float:
    result = shoal.train(
        "ppo",
        f"{MODULE}:make_corridor",
        seed=0,
        total_steps=40_000,
        agent=AGENT_CONFIG,
        run={"runs_dir": runs_dir, "num_envs": 8, "log_interval": 4096, "eval_episodes": 20},
    )
    print(f"run directory: {result.run_dir}")
    print(result.evaluation.line(deterministic=True))
    return result.evaluation.mean_return


if __name__ == "__main__":
    main(*sys.argv[1:])
