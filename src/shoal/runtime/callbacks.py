"""Callbacks: user code the driver calls at fixed points of a run, on every launcher.

A callback overrides any of five methods; each runs in the driver's process (where
`shoal.train` was called), between updates, so it sees a consistent run and may take its time.
Returning False from any method but `on_end` stops the run as its budget would: a final
metrics row, a checkpoint and the final evaluation follow, and `stop_reason` is "callback".

Ready ones: `KeepBest` (`--keep-best`, on with `--eval-every`) and `EarlyStopping`
(`--early-stop-patience`); `--eval-every N` itself is the driver's periodic evaluation
(`runtime/evaluations.py`), whose results reach `on_evaluation`. `Callbacks` is the driver's
part that calls them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from shoal.run.layout import BEST_POLICY  # --keep-best: the best evaluated policy
from shoal.runtime.config import RunConfig
from shoal.runtime.counter import Counter
from shoal.runtime.evaluate import EvalResult

__all__ = [
    "BEST_POLICY",
    "Callback",
    "Callbacks",
    "EarlyStopping",
    "Evaluation",
    "KeepBest",
    "RunStart",
    "ready_callbacks",
]


@dataclass(frozen=True)
class RunStart:
    """What `on_start` is told about the run."""

    run_dir: Path
    algo: str
    env_id: str
    seed: int
    total_steps: int
    env_steps: int  # where the run starts: 0, or the step a resumed run continues from


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of the learner's weights at `env_steps`: `result` over whole episodes,
    acting greedily or by sampling (`mode`); `final` for the one at the end of the run."""

    env_steps: int
    mode: Literal["greedy", "sample"]
    result: EvalResult
    final: bool
    # Writes the evaluated policy to one file that `shoal.load` reads (as LoadedPolicy.save).
    save: Callable[[Path], None] = field(repr=False)

    @property
    def mean_return(self) -> float:
        return self.result.mean_return


class Callback:
    """Override what you need; a method returning False stops the run (None or True go on).

    Example, stopping once an evaluation reaches a return:

        class StopAt(shoal.Callback):
            def on_evaluation(self, evaluation):
                return evaluation.mean_return < 475

        shoal.train("ppo", "CartPole-v1", run={"eval_every": 10_000}, callbacks=[StopAt()])
    """

    def on_start(self, run: RunStart) -> bool | None:
        """Before the first step (of this process: after a resume too)."""

    def on_row(self, row: dict[str, Any]) -> bool | None:
        """After each metrics row is written (the keys of metrics.jsonl)."""

    def on_evaluation(self, evaluation: Evaluation) -> bool | None:
        """After each evaluation: every `--eval-every` steps, and the final ones."""

    def on_checkpoint(self, path: Path, env_steps: int) -> bool | None:
        """After a checkpoint is written (a periodic one or the final one)."""

    def on_end(self, summary: dict[str, Any]) -> None:
        """Once the run has stopped and been evaluated: what summary.json holds of it."""


class KeepBest(Callback):
    """Keep the policy of the best greedy evaluation so far in `path` (`RUN_DIR/best.pt` with
    `--keep-best`): a saved policy, loaded with `shoal.load(path)` or `shoal eval path`."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.best = -math.inf
        self.best_step: int | None = None

    def on_evaluation(self, evaluation: Evaluation) -> None:
        if evaluation.mode == "greedy" and evaluation.mean_return > self.best:
            evaluation.save(self.path)
            self.best, self.best_step = evaluation.mean_return, evaluation.env_steps


class EarlyStopping(Callback):
    """Stop when `patience` periodic greedy evaluations in a row have not beaten the best one
    before them by more than `min_delta` (as Keras's and Stable-Baselines3's)."""

    def __init__(self, patience: int, min_delta: float = 0.0) -> None:
        if patience <= 0:
            raise ValueError(f"patience must be > 0 evaluations, got {patience}.")
        self.patience, self.min_delta = patience, min_delta
        self.best = -math.inf
        self.stale = 0  # evaluations since the best

    def on_evaluation(self, evaluation: Evaluation) -> bool | None:
        if evaluation.mode != "greedy" or evaluation.final:
            return None
        if evaluation.mean_return > self.best + self.min_delta:
            self.best, self.stale = evaluation.mean_return, 0
            return None
        self.stale += 1
        return self.stale < self.patience


def ready_callbacks(run: RunConfig, run_dir: Path) -> list[Callback]:
    """The callbacks the run's settings ask for: --keep-best and --early-stop-patience."""
    ready: list[Callback] = []
    if run.eval_every and run.keep_best:
        ready.append(KeepBest(run_dir / BEST_POLICY))
    if run.early_stop_patience:
        ready.append(EarlyStopping(run.early_stop_patience))
    return ready


class Callbacks:
    """The driver's callbacks, in order; one that returns False stops the run `counter`
    counts (its stop reason: "callback"), said by `say` in one line."""

    def __init__(
        self, callbacks: Sequence[Callback], counter: Counter, say: Callable[[str], None]
    ) -> None:
        self.callbacks, self.counter, self.say = list(callbacks), counter, say

    def __iter__(self) -> Iterator[Callback]:
        return iter(self.callbacks)

    def tell(self, method: str, *args: Any) -> None:
        """Call `method` of every callback; one that returns False stops the run."""
        for callback in self.callbacks:
            if getattr(callback, method)(*args) is False and self.counter.stopped_by is None:
                self.counter.stopped_by = "callback"
                self.say(
                    f"{type(callback).__name__}.{method} stopped the run at "
                    f"{self.counter.env_steps} steps."
                )

    def end(self, summary: dict[str, Any]) -> None:
        """Tell every callback the run is over (`summary`: what summary.json holds)."""
        for callback in self.callbacks:
            callback.on_end(summary)
