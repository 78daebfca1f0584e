"""Settings of a run that do not belong to any one algorithm, in sections: the budget and the
runtime, placement on Ray, central inference, inline acting, logging, checkpoints and
evaluations.

Each section is a frozen dataclass of its own fields, with the checks of its own values;
`RunConfig` is all of them at once. Its fields stay flat (`run.actor_cpus`, not
`run.ray.actor_cpus`): the command line's flags (`--actor-cpus`), the keys under `run:` in
presets, config files and saved run directories, and the `run={...}` of `shoal.train` are one
name per field, and every one of them keeps working. A part of the runtime that needs one
section may take it alone (`ReplaySnapshots` takes the `CheckpointSettings`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from shoal.config import param
from shoal.telemetry.trackers import DEFAULT_LOGGERS, LoggerName

__all__ = [
    "BudgetSettings",
    "CentralInferenceSettings",
    "CheckpointSettings",
    "EvaluationSettings",
    "InlineSettings",
    "LoggingSettings",
    "RaySettings",
    "RunConfig",
    "check_run_name",
    "parse_resources",
]


def _positive(config: object, *names: str) -> None:
    for name in names:
        if getattr(config, name) <= 0:
            raise ValueError(f"{name} must be > 0, got {getattr(config, name)}.")


@dataclass(frozen=True, kw_only=True)
class BudgetSettings:
    """When the run stops, how many envs it steps, on which runtime, and where it is kept."""

    total_steps: int = param(100_000, "Stop after this many agent steps, summed over all envs.")
    max_time: float | None = param(None, "Stop after this many seconds of wall time.")
    stop_at_return: float | None = param(
        None, "Stop once the mean return of the last `return_window` episodes reaches this."
    )
    num_envs: int = param(8, "Environments stepped together by each actor.")
    runtime: Literal["inline", "ray"] = param(
        "inline", "inline: one process; ray: actors and learner as Ray actors (local or cluster)."
    )
    actors: int = param(
        2,
        "ray: actor processes, each stepping num_envs environments; inline with --inference "
        "central: actor threads.",
    )
    learner_device: Literal["auto", "cpu", "cuda"] = param(
        "auto",
        "Where off-policy learners (IMPALA, DQN, Ape-X) learn: auto picks cuda when the "
        "learner's process sees a GPU (on ray: with --learner-gpus), else cpu.",
    )
    torch_threads: int = param(1, "torch intra-op threads; small networks are fastest with 1.")
    runs_dir: str = param(
        "runs", "Folder that holds run directories, or a bucket URL (s3://BUCKET/runs, gs://...)."
    )
    run_name: str | None = param(None, "Run directory name (default: <algo>-<env>-<timestamp>).")

    def _check_budget(self) -> None:
        _positive(self, "total_steps", "num_envs", "actors", "torch_threads")
        if self.max_time is not None and self.max_time <= 0:
            raise ValueError(f"max_time must be > 0 seconds, got {self.max_time}.")
        if self.run_name is not None:
            check_run_name(self.run_name)


@dataclass(frozen=True, kw_only=True)
class RaySettings:
    """Placement on Ray (`--runtime ray`): the cluster, and what each role reserves."""

    address: str | None = param(None, "ray: cluster address (default: start a local Ray).")
    actor_cpus: float = param(1.0, "ray: CPUs reserved by each actor.")
    actor_memory_mb: int | None = param(None, "ray: memory reserved by each actor, in MB.")
    actor_resources: str | None = param(
        None, "ray: custom resources each actor needs, e.g. 'cpu_node=1' (places actors)."
    )
    learner_cpus: float = param(1.0, "ray: CPUs reserved by the learner.")
    learner_gpus: float = param(0.0, "ray: GPUs reserved by the learner.")
    learner_resources: str | None = param(None, "ray: custom resources the learner needs.")
    replay_shards: int = param(
        1, "ray, replay agents: replay shards, each a Ray actor holding capacity / shards."
    )
    replay_cpus: float = param(0.5, "ray: CPUs reserved by each replay shard.")
    replay_memory_mb: int | None = param(None, "ray: memory reserved by each replay shard, in MB.")
    replay_resources: str | None = param(
        None, "ray: custom resources each replay shard needs, e.g. 'big_memory=1'."
    )
    max_inflight: int = param(1, "ray: unroll requests queued per actor (backpressure).")
    max_learner_restarts: int = param(
        3,
        "ray: times a dead learner is restarted from the newest checkpoint (with every role) "
        "before the run stops; one whose node is gone is not.",
    )

    def _check_ray(self) -> None:
        _positive(self, "replay_shards", "max_inflight")
        if self.max_learner_restarts < 0:
            raise ValueError(
                f"max_learner_restarts must be >= 0 (0: a dead learner stops the run), got "
                f"{self.max_learner_restarts}."
            )
        for name in ("actor_resources", "learner_resources", "replay_resources"):
            parse_resources(getattr(self, name), "--" + name.replace("_", "-"))


@dataclass(frozen=True, kw_only=True)
class CentralInferenceSettings:
    """Central inference (SEED): actors only step envs, one server next to the learner acts."""

    inference: Literal["actor", "central"] = param(
        "actor",
        "actor: each actor runs the policy on its own CPU; central: actors only step envs and "
        "one inference server next to the learner batches their observations (SEED).",
    )
    inference_batch: int | None = param(
        None,
        "central: most observations in one inference batch (default: every env of every actor).",
    )
    inference_timeout_ms: float = param(
        2.0, "central: serve a partial batch once its oldest request waited this long."
    )

    def _check_central(self) -> None:
        if self.inference_batch is not None and self.inference_batch <= 0:
            raise ValueError(f"inference_batch must be > 0, got {self.inference_batch}.")
        if self.inference_timeout_ms < 0:
            raise ValueError(f"inference_timeout_ms must be >= 0, got {self.inference_timeout_ms}.")


@dataclass(frozen=True, kw_only=True)
class InlineSettings:
    """The inline runtime's overlap of acting and learning."""

    overlap: bool | None = param(
        None, "inline: act in a thread while learning (default: yes for off-policy agents)."
    )
    queue_capacity: int = param(2, "inline overlap: unrolls buffered between actor and learner.")

    def _check_inline(self) -> None:
        _positive(self, "queue_capacity")


@dataclass(frozen=True, kw_only=True)
class LoggingSettings:
    """Metrics rows, the console and the trackers they go to."""

    log_interval: int = param(5_000, "Agent steps between rows of metrics.jsonl.")
    return_window: int = param(20, "Episodes in the running mean return that is logged.")
    progress: bool = param(True, "Show a progress bar on the console.")
    tensorboard: bool = param(
        True, "Write TensorBoard event files (false: as if left out of logger)."
    )
    logger: tuple[LoggerName, ...] = param(
        DEFAULT_LOGGERS,
        "Where metrics rows go, comma-separated: tensorboard, jsonl (metrics.jsonl, read by "
        "shoal plot and report), csv (metrics.csv), wandb, mlflow.",
    )

    @property
    def loggers(self) -> tuple[str, ...]:
        """The trackers the run writes to: `logger`, without TensorBoard if `tensorboard` is
        false (the older flag)."""
        return tuple(
            n for n in dict.fromkeys(self.logger) if self.tensorboard or n != "tensorboard"
        )

    def _check_logging(self) -> None:
        _positive(self, "log_interval", "return_window")


@dataclass(frozen=True, kw_only=True)
class CheckpointSettings:
    """Checkpoints: how often, how many are kept, and the replay written with them."""

    checkpoint_interval: int = param(
        50_000, "Agent steps between checkpoints (one is also written at the end)."
    )
    keep_checkpoints: int = param(3, "How many of the newest checkpoints to keep.")
    checkpoint_replay: bool = param(
        True,
        "Replay agents: write the replay (frames once, priorities, counters) with each "
        "checkpoint, so --resume goes on with it; the newest checkpoint keeps its snapshot.",
    )
    replay_snapshot_budget: float = param(
        10.0,
        "Largest replay snapshot written, in GB over all shards (a 1M-transition Atari replay "
        "takes about 7); a bigger replay is not snapshotted, which the log says once.",
    )

    def _check_checkpoints(self) -> None:
        _positive(self, "checkpoint_interval", "keep_checkpoints")
        if self.replay_snapshot_budget < 0:
            raise ValueError(
                f"replay_snapshot_budget must be >= 0 GB (0 writes no replay snapshot), got "
                f"{self.replay_snapshot_budget}."
            )


@dataclass(frozen=True, kw_only=True)
class EvaluationSettings:
    """The final evaluations, the periodic ones (and what follows them), and videos."""

    eval_episodes: int = param(
        10,
        "Episodes of each final evaluation, greedy and sampling (0 skips them).",
    )
    eval_max_time: float | None = param(
        None,
        "Seconds the final evaluations may take together, taken out of --max-time (default: "
        "a tenth of it, at least 10 s or a third, at most 120 s); without --max-time, no bound.",
    )
    eval_every: int | None = param(
        None,
        "Evaluate the learner's weights greedily each time the run passes a multiple of this "
        "many agent steps (eval_* keys of metrics.jsonl, TensorBoard's eval/).",
    )
    eval_every_episodes: int = param(5, "Episodes of each --eval-every evaluation.")
    keep_best: bool = param(
        True, "With --eval-every: keep the policy of the best evaluation in RUN_DIR/best.pt."
    )
    early_stop_patience: int | None = param(
        None,
        "With --eval-every: stop once this many evaluations in a row have not beaten the best.",
    )
    video_every: int | None = param(
        None,
        "Record one greedy evaluation episode each time the run passes a multiple of this "
        "many agent steps, into RUN_DIR/videos/ and TensorBoard.",
    )

    def _check_evaluations(self) -> None:
        if self.eval_episodes < 0:
            raise ValueError(f"eval_episodes must be >= 0, got {self.eval_episodes}.")
        for name in ("eval_every", "eval_every_episodes", "early_stop_patience"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be > 0, got {value}.")
        if self.early_stop_patience is not None and self.eval_every is None:
            raise ValueError(
                "early_stop_patience counts --eval-every evaluations: set --eval-every N too."
            )
        if self.eval_max_time is not None and self.eval_max_time <= 0:
            raise ValueError(f"eval_max_time must be > 0 seconds, got {self.eval_max_time}.")
        if self.video_every is not None and self.video_every <= 0:
            raise ValueError(
                f"video_every must be > 0 agent steps (leave it out for no videos), got "
                f"{self.video_every}."
            )


# Fields are listed base by base from the last: the budget first, evaluations last.
@dataclass(frozen=True, kw_only=True)
class RunConfig(
    EvaluationSettings,
    CheckpointSettings,
    LoggingSettings,
    InlineSettings,
    CentralInferenceSettings,
    RaySettings,
    BudgetSettings,
):
    """Every setting of a run, flat; each section's fields are documented in its class."""

    @property
    def final_eval_time(self) -> float | None:
        """Seconds kept for the final evaluations (None: no bound)."""
        if self.eval_episodes == 0:
            return None
        if self.eval_max_time is not None:
            return self.eval_max_time
        if self.max_time is None:
            return None
        # A tenth, but time to make and reset the eval envs (Atari: about 3 s for 8 on a busy
        # CPU) and play a little even in a short run, and no more than two minutes in a long one.
        floor = min(10.0, self.max_time / 3)
        return min(max(self.max_time / 10, floor), 120.0)

    @property
    def train_time(self) -> float | None:
        """Seconds of --max-time that training may take: the rest is the final evaluations'."""
        if self.max_time is None:
            return None
        return self.max_time - (self.final_eval_time or 0.0)

    def __post_init__(self) -> None:
        self._check_budget()
        self._check_ray()
        self._check_central()
        self._check_inline()
        self._check_logging()
        self._check_checkpoints()
        self._check_evaluations()
        # What only two sections together can break.
        if self.runtime == "ray" and self.learner_device == "cuda" and self.learner_gpus <= 0:
            raise ValueError(
                "learner_device cuda on ray needs --learner-gpus 1 (or a fraction): Ray hides "
                "GPUs from processes that reserve none."
            )
        if self.max_time and self.eval_max_time and self.eval_max_time >= self.max_time:
            raise ValueError(
                f"eval_max_time ({self.eval_max_time:g} s) is taken out of max_time "
                f"({self.max_time:g} s), so it must be smaller; leave it out for a tenth."
            )


def check_run_name(name: str) -> None:
    """A run name is one folder inside --runs-dir: no path separators, not '.' or '..'."""
    if name.strip() in ("", ".", "..") or any(c in name for c in "/\\\0"):
        raise ValueError(
            f"run_name must be one folder name inside --runs-dir (no '/' or '\\', not '.' or "
            f"'..'), got {name!r}; to put runs in another folder, set --runs-dir."
        )


def parse_resources(text: str | None, flag: str) -> dict[str, float]:
    """'a=1,b=0.5' -> {'a': 1.0, 'b': 0.5}, or a ValueError that shows the format."""
    if not text:
        return {}
    out = {}
    for item in text.split(","):
        name, _, amount = item.partition("=")
        try:
            value = float(amount)
        except ValueError:
            value = math.nan
        if not name.strip() or not 0 <= value < math.inf:
            raise ValueError(
                f"{flag} must look like 'name=1,other=0.5' (resource names with amounts >= 0), "
                f"got {text!r}."
            )
        out[name.strip()] = value
    return out
