"""A program: one agent, its configs and an environment, ready for a launcher to run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from shoal.agents.base import Agent
from shoal.envs.config import EnvConfig
from shoal.envs.registry import EnvSource
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.runtime.config import RunConfig


@dataclass(frozen=True)
class Program:
    agent: Agent
    agent_config: Any
    run: RunConfig
    env_config: EnvConfig
    env_source: EnvSource
    spec: EnvSpec
    seed: int
    run_dir: Path

    @property
    def env_id(self) -> str:
        return self.env_source.env_id

    @property
    def checkpoint_dir(self) -> Path:
        return self.run_dir / "checkpoints"

    @property
    def overlaps(self) -> bool:
        """Inline: whether an actor thread acts while the learner learns (off-policy default)."""
        return self.run.overlap if self.run.overlap is not None else not self.agent.on_policy

    def learner_device(self, shares_network_with_actor: bool) -> torch.device:
        """The device of the learner's network in the calling process.

        Off-policy learners keep their own network, so it can live on a GPU while actors act on
        CPU copies; on-policy learners (PPO) and in-turn runs, whose network the actor shares
        (or which learn on CPU-sized networks), stay on CPU.
        """
        wanted = self.run.learner_device
        if self.agent.on_policy or shares_network_with_actor or wanted == "cpu":
            if wanted == "cuda":
                raise ConfigError(
                    f"--learner-device cuda needs an off-policy agent with its own learner "
                    f"network; {self.agent.name} learns on CPU here (in turn with its actor, or "
                    "on-policy). Leave --learner-device at auto."
                )
            return torch.device("cpu")
        if torch.cuda.is_available():
            return torch.device("cuda")
        if wanted == "cuda":
            raise ConfigError(
                "--learner-device cuda: this process sees no CUDA device. On ray, reserve one "
                "with --learner-gpus 1; inline, check the machine's GPU and CUDA build of torch."
            )
        return torch.device("cpu")
