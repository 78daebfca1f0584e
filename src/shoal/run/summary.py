"""`summary.json`: how a run ended, written once when it stops and read by `--resume auto`,
`shoal plot`, `shoal report` and `shoal tune`.

One writer, with one declared set of keys (`SUMMARY_KEYS`), for `shoal train` and a `shoal
tune` trial alike. Beside the declared keys a summary holds the launcher's event counts (e.g.
`actor_restarts`, as in the metrics rows) and what its writer adds of its own (a trial: `pid`);
neither may shadow a declared key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from shoal.config import write_atomically
from shoal.run.layout import SUMMARY_FILE

__all__ = ["SUMMARY_FILE", "SUMMARY_KEYS", "read_summary", "run_summary", "write_summary"]

# In the order written; the event counts follow `stop_reason`.
SUMMARY_KEYS = (
    "algo",
    "env",
    "seed",
    "env_steps",
    "episodes",
    "updates",
    "wall_time",  # seconds, over every attempt of a resumed run
    "stop_reason",  # a Counter's stop reason, or "interrupted" / "terminated"
    "train_return_mean",  # of the last training episodes; None before the first ends
    "target_reached_step",  # --stop-at-return: the step it was first reached, else None
    "target_reached_unix_time",
    "evaluation",  # the final greedy evaluation (EvalResult.as_dict()), or None
    "evaluation_sampled",  # the final evaluation sampling actions, or None
)


class Counted(Protocol):
    """What a summary reads of a run's counter (`shoal.runtime.counter.Counter`)."""

    @property
    def env_steps(self) -> int: ...

    @property
    def episodes(self) -> int: ...

    @property
    def updates(self) -> int: ...

    @property
    def counts(self) -> Mapping[str, int]: ...

    @property
    def interruption(self) -> str: ...  # why a run stopped that no stop condition ended

    @property
    def target_reached_step(self) -> int | None: ...

    @property
    def target_reached_at(self) -> float | None: ...

    @property
    def elapsed(self) -> float: ...

    @property
    def mean_return(self) -> float | None: ...

    def stop_reason(self) -> str | None: ...


def run_summary(
    *,
    algo: str,
    env: str,
    seed: int,
    counter: Counted,
    evaluation: Mapping[str, Any] | None,
    evaluation_sampled: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The summary of a run that stopped with `counter`: every key of SUMMARY_KEYS, the
    counter's event counts, then `extra` (the writer's own keys)."""
    head = {
        "algo": algo,
        "env": env,
        "seed": seed,
        "env_steps": counter.env_steps,
        "episodes": counter.episodes,
        "updates": counter.updates,
        "wall_time": round(counter.elapsed, 3),
        "stop_reason": counter.stop_reason() or counter.interruption,
    }
    tail = {
        "train_return_mean": counter.mean_return,
        "target_reached_step": counter.target_reached_step,
        "target_reached_unix_time": counter.target_reached_at,
        "evaluation": None if evaluation is None else dict(evaluation),
        "evaluation_sampled": None if evaluation_sampled is None else dict(evaluation_sampled),
    }
    extra = dict(extra or {})
    for what, keys in (("event count", counter.counts), ("extra key", extra)):
        shadowed = sorted(set(keys) & set(SUMMARY_KEYS))
        if shadowed:
            raise ValueError(f"The summary's {what} {shadowed} would replace a declared key.")
    return {**head, **counter.counts, **tail, **extra}


def write_summary(run_dir: Path, summary: Mapping[str, Any]) -> Path:
    """Write `summary` (from `run_summary`) as the run's summary.json, atomically."""
    missing = [key for key in SUMMARY_KEYS if key not in summary]
    if missing:
        raise ValueError(f"A summary must hold every key of SUMMARY_KEYS; it lacks {missing}.")
    path = run_dir / SUMMARY_FILE
    write_atomically(path, json.dumps(dict(summary), indent=2) + "\n")
    return path


def read_summary(run_dir: Path) -> dict[str, Any] | None:
    """The run's summary, or None: none yet (the run has not stopped), or one a kill cut while
    it was written (the run's other files still count). A summary of an older shoal may lack
    keys declared since; read them with `.get`."""
    try:
        data = json.loads((run_dir / SUMMARY_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
