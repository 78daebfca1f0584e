"""Settings of a run that do not belong to any one algorithm: budget, envs, logging, checkpoints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shoal.config import param


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    total_steps: int = param(100_000, "Stop after this many agent steps, summed over all envs.")
    max_time: float | None = param(None, "Stop after this many seconds of wall time.")
    stop_at_return: float | None = param(
        None, "Stop once the mean return of the last `return_window` episodes reaches this."
    )
    num_envs: int = param(8, "Environments stepped together by each actor.")
    runtime: Literal["inline"] = param("inline", "Where the program runs: inline is one process.")
    log_interval: int = param(5_000, "Agent steps between rows of metrics.jsonl.")
    checkpoint_interval: int = param(
        50_000, "Agent steps between checkpoints (one is also written at the end)."
    )
    keep_checkpoints: int = param(3, "How many of the newest checkpoints to keep.")
    eval_episodes: int = param(
        10, "Episodes of the deterministic evaluation at the end (0 skips it)."
    )
    return_window: int = param(20, "Episodes in the running mean return that is logged.")
    torch_threads: int = param(1, "torch intra-op threads; small networks are fastest with 1.")
    runs_dir: str = param("runs", "Folder that holds run directories.")
    run_name: str | None = param(None, "Run directory name (default: <algo>-<env>-<timestamp>).")
    progress: bool = param(True, "Show a progress bar on the console.")
    tensorboard: bool = param(True, "Write TensorBoard event files.")

    def __post_init__(self) -> None:
        for name in (
            "total_steps",
            "num_envs",
            "log_interval",
            "checkpoint_interval",
            "keep_checkpoints",
            "return_window",
            "torch_threads",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}.")
        if self.eval_episodes < 0:
            raise ValueError(f"eval_episodes must be >= 0, got {self.eval_episodes}.")
        if self.max_time is not None and self.max_time <= 0:
            raise ValueError(f"max_time must be > 0 seconds, got {self.max_time}.")
