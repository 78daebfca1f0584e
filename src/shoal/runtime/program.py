"""A program: one agent, its configs and an environment, ready for a launcher to run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shoal.agents.base import Agent
from shoal.envs.config import EnvConfig
from shoal.envs.registry import EnvSource
from shoal.envs.spec import EnvSpec
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
