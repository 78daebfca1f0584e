"""A program: one agent, its configs and an environment, ready for a launcher to run."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import torch

from shoal.agents.base import Agent
from shoal.data import DataPath, Layout
from shoal.envs.config import EnvConfig
from shoal.envs.registry import EnvSource
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.run.layout import checkpoint_dir
from shoal.runtime.config import RunConfig


def run_layout(run: RunConfig, actors_inline: bool = False, rows_per_env: int = 1) -> Layout:
    """How the run's envs are spread over actors: on ray, with central inference, or inline
    for a data path that asks for it (`DataPath.actors_inline`), `run.actors`; otherwise
    (inline, actor-side inference) one actor. The layout counts rows: a multi-agent env makes
    `rows_per_env` of them (its agents), each a slot of its own."""
    many = run.runtime == "ray" or run.inference == "central" or actors_inline
    actors = run.actors if many else 1
    capacity = run.queue_capacity
    if run.runtime == "ray":  # every actor may have its requests' unrolls waiting
        capacity = max(capacity, run.actors * run.max_inflight)
    elif actors_inline:  # every actor thread may have its item waiting
        capacity = max(capacity, run.actors)
    envs = run.num_envs * rows_per_env
    return Layout(actors=actors, envs_per_actor=envs, queue_capacity=capacity)


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
        return checkpoint_dir(self.run_dir)

    @property
    def layout(self) -> Layout:
        """How the run's envs are spread over actors (`run_layout`)."""
        return self._built[0]

    def data_path(self) -> DataPath:
        """The agent's data path for this run's layout, built once per process (the same
        object every call: its tables and adders are made by its factories)."""
        return self._built[1]

    @cached_property
    def _built(self) -> tuple[Layout, DataPath]:
        # The data path says whether inline runs one actor or `--actors`; which it says does
        # not depend on the layout it is built with (see `DataPath.actors_inline`), so it is
        # built again only where it asks for a layout other than the one it was built with
        # (A3C's gradient workers, inline).
        rows = self.spec.rows_per_env
        layout = run_layout(self.run, rows_per_env=rows)
        path = self.agent.make_data_path(self.spec, self.agent_config, layout)
        wanted = run_layout(self.run, path.actors_inline, rows)
        if wanted != layout:
            path = self.agent.make_data_path(self.spec, self.agent_config, wanted)
        return wanted, path

    def __getstate__(self) -> dict[str, Any]:
        # What is built from the program is built again in each process it is sent to: the
        # data path holds the agent's closures, which need not travel.
        return {k: v for k, v in self.__dict__.items() if k != "_built"}

    @property
    def overlaps(self) -> bool:
        """Inline: whether an actor thread acts while the learner learns (the data path's
        default unless --overlap says otherwise)."""
        return self.run.overlap if self.run.overlap is not None else self.data_path().overlap

    def learner_device(self) -> torch.device:
        """The device of the learner's network in the calling process: cuda when `auto` and
        the process sees a GPU (actors then act on CPU copies of its weights), else CPU."""
        wanted = self.run.learner_device
        if wanted != "cpu" and torch.cuda.is_available():
            return torch.device("cuda")
        if wanted == "cuda":
            raise ConfigError(
                "--learner-device cuda: this process sees no CUDA device. On ray, reserve one "
                "with --learner-gpus 1; inline, check the machine's GPU and CUDA build of torch."
            )
        return torch.device("cpu")
