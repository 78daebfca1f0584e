"""What every launcher does around acting and learning: count, log, checkpoint, evaluate, stop.

A launcher owns where the actors and the learner run; the `Driver` owns the run directory side:
the `Counter`, metrics rows at fixed step counts, the console, periodic and final checkpoints,
periodic and final evaluations, the callbacks, and Ctrl-C (first press: stop after the current
update and checkpoint; second: abort). A launcher calls `after_update` after updates and
`finish` once when its loop ends.
SIGTERM, what Slurm and Kubernetes send a job they preempt, is a first Ctrl-C however often it
comes (the scheduler's SIGKILL follows its grace period anyway).
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from shoal.checkpoint import save_checkpoint
from shoal.errors import DivergenceError
from shoal.runtime.actor import ActorStats
from shoal.runtime.callbacks import Callback, EarlyStopping, Evaluation, KeepBest, RunStart
from shoal.runtime.counter import Counter
from shoal.runtime.evaluations import Evaluator, evaluation_row
from shoal.runtime.learning import ADVICE, non_finite
from shoal.runtime.program import Program
from shoal.runtime.recording import TrainingVideos
from shoal.runtime.snapshots import ReplaySnapshots, Tables
from shoal.telemetry import Console, MetricsWriter

# Only these fields of a metrics row depend on the clock; everything else is reproducible.
TIMING_KEYS = ("time", "steps_per_second")


BEST_POLICY = "best.pt"  # --keep-best: the best evaluated policy, in the run directory


class Driver:
    def __init__(
        self,
        program: Program,
        resume: dict[str, Any] | None,
        callbacks: Sequence[Callback] = (),
        started: float | None = None,
    ) -> None:
        """`callbacks` run in this process after the ready ones the run's settings ask for;
        `started`: when the command began (`time.time()`), from which --max-time counts."""
        self.program = program
        run = program.run
        self.resume = resume
        self.resume_count = 0 if resume is None else int(resume["resume_count"]) + 1
        self.counter = Counter(run) if started is None else Counter(run, started=started)
        self.counts = self.counter.counts  # launcher events, e.g. actor restarts
        # Launcher figures of the moment (e.g. `actors_live` on ray): in rows, not checkpoints.
        self.gauges: dict[str, float] = {}
        # The union of the acting policies' newest `Policy.state_dict`s (Agent57's bandits).
        self.policy_state: dict[str, Any] = {}
        # The policies acting in this process (inline runs), which take new settings while
        # the run goes on (`Policy.apply_settings`, from `shoal tune`'s exploits).
        self.acting_policies: list[Any] = []
        if resume is not None:
            self.policy_state.update(resume.get("policies", {}))
            counter = self.counter
            counter.env_steps = int(resume["env_steps"])
            counter.episodes = int(resume["episodes"])
            counter.updates = int(resume["updates"])
            counter.elapsed_before = float(resume["elapsed"])
            counter.recent_returns.extend(resume["recent_returns"])
            counter.recent_lengths.extend(resume["recent_lengths"])
            self.counts.update(resume.get("counts", {}))
        # --video-every: an env that cannot render stops the run here, before it trains.
        self.videos = (
            TrainingVideos(program, lambda line: self.console.print(line))
            if run.video_every
            else None
        )
        self._next_video = _next_multiple(self.counter.env_steps, run.video_every or 1)
        # From the step resumed (0 for a run restarted without a checkpoint), not appended to.
        self.writer = MetricsWriter(program.run_dir, run.loggers, self.counter.env_steps)
        self.console = Console(
            run.total_steps,
            self.counter.env_steps,
            run.progress,
            program.run_dir.name,
            run.max_time,
        )
        self._next_log = _next_multiple(self.counter.env_steps, run.log_interval)
        self._next_checkpoint = _next_multiple(self.counter.env_steps, run.checkpoint_interval)
        self._next_eval = _next_multiple(self.counter.env_steps, run.eval_every or 1)
        self._last_log = (time.time(), self.counter.env_steps)
        self._logged_step = self.counter.env_steps  # the step of the newest metrics row
        # The newest update's metrics and policy lag, for the row written at the end.
        self._metrics: Callable[[], dict[str, float]] = dict
        self._lag = math.nan
        self.callbacks = [*_ready_callbacks(program), *callbacks]
        self.evaluator = Evaluator(program)
        self.final: dict[str, Evaluation] = {}  # the final evaluations by mode
        self._evaluated: dict[str, float] = {}  # evaluations' keys for the next row
        self._stop_requested = False
        self._previous_handlers: dict[int, Any] = {}
        self.replay: ReplaySnapshots | None = None  # the launcher's tables, once attached

    @property
    def env_seed(self) -> int:
        """Seed of the first env; a resumed run meets new episodes rather than replaying them."""
        return self.program.seed + 1_000_003 * self.resume_count

    def attach_learner(self, handle: Any) -> None:
        """The learner's Ray actor (`--runtime ray`), before any learn call; inline runs hand
        the learner itself to `restore`. Nothing to do here: `shoal tune`'s trials keep it."""
        return None

    def restore(self, learner: Any) -> None:
        """Load the learner (and torch's generator) from the checkpoint being resumed."""
        if self.resume is not None:
            learner.load_state_dict(self.resume["learner"])
            torch.set_rng_state(self.resume["torch_rng"])

    def attach_replay(self, tables: Tables) -> None:
        """Snapshot `tables` with every checkpoint, once the snapshot of the checkpoint being
        resumed is restored into them (call before any actor inserts)."""
        self.replay = ReplaySnapshots(tables, self.program.run, self.console.print)
        self.replay.restore(self.resume, self.program.checkpoint_dir)

    def add_experience(self, stats: ActorStats | None) -> None:
        """Count what one unroll of an actor added (None: nothing, the run is ending)."""
        if stats is None:
            return
        self.counter.env_steps += stats.steps
        self.counter.add_episodes(stats.returns, stats.lengths)
        self.counter.add_episode_metrics(stats.episode_metrics)
        self.policy_state.update(stats.policy_state)
        self.console.update(self.counter.env_steps, self.counter.mean_return)

    def count(self, event: str, n: int = 1) -> None:
        self.counts[event] = self.counts.get(event, 0) + n

    def after_update(
        self,
        metrics: Callable[[], dict[str, float]],
        policy_lag: float,
        learner_state: Callable[[], dict],
        updates: int = 1,
    ) -> None:
        """Count `updates` learner updates; write a metrics row (asking `metrics` for the
        learner's figures) and a checkpoint when their step counts have been passed."""
        counter, run = self.counter, self.program.run
        counter.updates += updates
        self._metrics, self._lag = metrics, policy_lag
        # The row of the step a run ends at is written by `finish`, with the final evaluations
        # (which stand in for a periodic one due then).
        ending = counter.stop_reason() is not None
        if run.eval_every and counter.env_steps >= self._next_eval and not ending:
            evaluation = self._evaluate(
                learner_state(), "greedy", run.eval_every_episodes, final=False
            )
            self._evaluated.update(evaluation_row(evaluation))
            self._next_eval = _next_multiple(counter.env_steps, run.eval_every)
        if (counter.env_steps >= self._next_log or self._evaluated) and not ending:
            self._write_row()
            self._next_log = _next_multiple(counter.env_steps, run.log_interval)
        if counter.env_steps >= self._next_checkpoint:
            self.checkpoint(learner_state())
            self._next_checkpoint = _next_multiple(counter.env_steps, run.checkpoint_interval)
        if self.videos is not None and counter.env_steps >= self._next_video:
            self.videos.record(counter.env_steps, learner_state(), self.policy_state)
            self._next_video = _next_multiple(counter.env_steps, run.video_every or 1)

    def finish(self, learner_state: dict[str, Any]) -> None:
        """The end of a run: the final checkpoint; unless Ctrl-C stopped it, the final greedy
        and sampling evaluations within what --max-time leaves (`RunConfig.final_eval_time`);
        then the last metrics row, with the evaluations' keys, if anything happened since the
        newest row."""
        self.checkpoint(learner_state)
        run = self.program.run
        if not self._stop_requested and run.eval_episodes > 0:
            bound = run.final_eval_time
            if bound is not None and run.max_time is not None:  # what training left of it
                bound = max(bound, run.max_time - self.counter.elapsed)
            deadline = None if bound is None else time.monotonic() + bound
            self.evaluator.prepare(run.eval_episodes)  # then the two share what is left
            for share, mode in ((0.5, "greedy"), (1.0, "sample")):
                left = None if deadline is None else share * (deadline - time.monotonic())
                evaluation = self._evaluate(
                    learner_state, mode, run.eval_episodes, final=True, max_time=left
                )
                self.final[mode] = evaluation
                self._evaluated.update(evaluation_row(evaluation))
        if self.counter.env_steps > self._logged_step or self._evaluated:
            self._write_row()

    def end(self, summary: dict[str, Any]) -> None:
        """Tell the callbacks the run is over (`summary`: what summary.json holds)."""
        for callback in self.callbacks:
            callback.on_end(summary)

    def _evaluate(
        self,
        learner_state: dict[str, Any],
        mode: str,
        episodes: int,
        final: bool,
        max_time: float | None = None,
    ) -> Evaluation:
        evaluation = self.evaluator.evaluate(
            self.counter.env_steps,
            learner_state,
            self.policy_state,
            mode=mode,  # type: ignore[arg-type]
            episodes=episodes,
            final=final,
            max_time=max_time,
            progress=final and self.program.run.progress,
        )
        if not final:
            self.console.print(
                f"evaluation at {self.counter.env_steps} steps: mean return "
                f"{evaluation.mean_return:.2f} over {evaluation.result.episodes} episodes"
            )
        self._tell("on_evaluation", evaluation)
        return evaluation

    def _write_row(self) -> None:
        """A metrics row of the run so far, with the evaluations made since the last one."""
        counter, now = self.counter, time.time()
        then, steps_then = self._last_log
        rate = (counter.env_steps - steps_then) / max(now - then, 1e-9)
        row = self._row(self._metrics(), self._lag, rate)
        row.update(self._evaluated)
        self._evaluated = {}
        self.writer.write(row)
        self._last_log = (now, counter.env_steps)
        self._logged_step = counter.env_steps
        self._tell("on_row", row)

    def _tell(self, method: str, *args: Any) -> None:
        """Call `method` of every callback; one that returns False stops the run."""
        for callback in self.callbacks:
            if getattr(callback, method)(*args) is False and self.counter.stopped_by is None:
                self.counter.stopped_by = "callback"
                self.console.print(
                    f"{type(callback).__name__}.{method} stopped the run at "
                    f"{self.counter.env_steps} steps."
                )

    def should_stop(self) -> bool:
        return self._stop_requested or self.counter.stop_reason() is not None

    @property
    def stop_requested(self) -> bool:
        """Whether Ctrl-C or SIGTERM asked the run to stop (a launcher restarts nothing then)."""
        return self._stop_requested

    def checkpoint(self, learner_state: dict[str, Any]) -> None:
        """Write a checkpoint of the learner and the run's counters; never one whose weights
        hold NaN or inf (that raises a DivergenceError and keeps the checkpoints before it)."""
        counter = self.counter
        bad = non_finite(learner_state)
        if bad:
            names = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
            raise DivergenceError(
                f"Training diverged by update {counter.updates} ({counter.env_steps} steps): the "
                f"learner's {names} hold NaN or inf, so no checkpoint was written of them. "
                + ADVICE
            )
        payload = {
            "algo": self.program.agent.name,
            "env": self.program.env_id,
            "env_steps": counter.env_steps,
            "episodes": counter.episodes,
            "updates": counter.updates,
            "elapsed": counter.elapsed,
            "recent_returns": list(counter.recent_returns),
            "recent_lengths": list(counter.recent_lengths),
            "resume_count": self.resume_count,
            "counts": dict(self.counts),
            "torch_rng": torch.get_rng_state(),
            "learner": learner_state,
            "policies": dict(self.policy_state),
        }
        run = self.program.run
        path = save_checkpoint(
            self.program.checkpoint_dir,
            counter.env_steps,
            payload,
            run.keep_checkpoints,
            self.replay.save if self.replay is not None else None,
        )
        self._tell("on_checkpoint", path, counter.env_steps)

    def _row(self, metrics: dict[str, float], policy_lag: float, rate: float) -> dict[str, Any]:
        counter = self.counter
        lengths = counter.recent_lengths
        return {
            "env_steps": counter.env_steps,
            "frames": counter.env_steps * self.program.spec.frames_per_step,
            "episodes": counter.episodes,
            "updates": counter.updates,
            "return_mean": counter.mean_return,
            "episode_length_mean": sum(lengths) / len(lengths) if lengths else None,
            **counter.metric_means(),
            "policy_lag": policy_lag,
            **self.counts,
            **self.gauges,
            **metrics,
            **self.program.agent.policy_metrics(self.policy_state),
            "time": round(counter.elapsed, 3),
            "steps_per_second": round(rate, 1),
        }

    def __enter__(self) -> Driver:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous_handlers[signum] = signal.signal(signum, self._on_signal)
        program = self.program
        start = RunStart(
            program.run_dir,
            program.agent.name,
            program.env_id,
            program.seed,
            program.run.total_steps,
            self.counter.env_steps,
        )
        self._tell("on_start", start)
        return self

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self._stop_requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        if not self._stop_requested and signum == signal.SIGTERM:
            self.counter.interruption = "terminated"
        self._stop_requested = True

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous_handlers.items():
            if handler is not None:  # None: a handler not set from Python, which stays
                signal.signal(signum, handler)
        self.console.close()
        self.evaluator.close()
        self.writer.close(ok=exc[0] is None)
        if self.videos is not None:
            self.videos.close()
        if self._stop_requested:
            how = (
                "stopped by SIGTERM" if self.counter.interruption == "terminated" else "interrupted"
            )
            self.console.print(
                f"{how} at {self.counter.env_steps} steps; a checkpoint was written."
            )


def _ready_callbacks(program: Program) -> list[Callback]:
    """The callbacks the run's settings ask for: --keep-best and --early-stop-patience."""
    run, ready = program.run, []
    if run.eval_every and run.keep_best:
        ready.append(KeepBest(program.run_dir / BEST_POLICY))
    if run.early_stop_patience:
        ready.append(EarlyStopping(run.early_stop_patience))
    return ready


def _next_multiple(value: int, interval: int) -> int:
    return (value // interval + 1) * interval
