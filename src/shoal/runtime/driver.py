"""What every launcher does around acting and learning: count, log, checkpoint, evaluate, stop.

A launcher owns where the actors and the learner run; the `Driver` owns the run directory side,
composed of parts with one job each:

- counting and stopping: the `Counter` and `StopSignals` (Ctrl-C: first press, stop after the
  current update and checkpoint; second, abort; SIGTERM is a first Ctrl-C) (`counter.py`);
- metrics rows at fixed step counts (`MetricsRows`, `metrics_rows.py`);
- periodic and final checkpoints, with replay snapshots, and the resume (`Checkpoints`,
  `checkpoints.py`);
- periodic and final evaluations and videos (`Evaluations`, `evaluations.py`);
- the callbacks (`Callbacks`, `callbacks.py`) and the hooks of code that drives the run from
  inside (`RunHook`, `hooks.py`: `shoal tune`'s trials).

A launcher calls `add_experience` for what actors report, `after_update` after updates and
`finish` once when its loop ends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from shoal.runtime.actor import ActorStats
from shoal.runtime.budget import never_learns
from shoal.runtime.callbacks import (
    BEST_POLICY,
    Callback,
    Callbacks,
    Evaluation,
    RunStart,
    ready_callbacks,
)
from shoal.runtime.checkpoints import Checkpoints
from shoal.runtime.counter import Counter, StopSignals
from shoal.runtime.evaluations import Evaluations, evaluation_row
from shoal.runtime.hooks import RunHook
from shoal.runtime.metrics_rows import TIMING_KEYS, MetricsRows
from shoal.runtime.program import Program
from shoal.runtime.snapshots import ReplaySnapshots, Tables
from shoal.telemetry import Console

__all__ = ["BEST_POLICY", "TIMING_KEYS", "Driver"]


class Driver:
    def __init__(
        self,
        program: Program,
        resume: dict[str, Any] | None,
        callbacks: Sequence[Callback] = (),
        started: float | None = None,
        hooks: Sequence[RunHook] = (),
    ) -> None:
        """`callbacks` run in this process after the ready ones the run's settings ask for;
        `started`: when the command began (`time.time()`), from which --max-time counts;
        `hooks`: told of the driver, the learner and the finish (`shoal tune`'s trials)."""
        self.program = program
        run = program.run
        self.counter = Counter(run) if started is None else Counter(run, started=started)
        self.counts = self.counter.counts  # launcher events, e.g. actor restarts
        # Launcher figures of the moment (e.g. `actors_live` on ray): in rows, not checkpoints.
        self.gauges: dict[str, float] = {}
        # The union of the acting policies' newest `Policy.state_dict`s (Agent57's bandits).
        self.policy_state: dict[str, Any] = {}
        # The policies acting in this process (inline runs), which take new settings while
        # the run goes on (`Policy.apply_settings`, from `shoal tune`'s exploits).
        self.acting_policies: list[Any] = []
        self.checkpoints = Checkpoints(program, self.counter, self.policy_state, resume)
        self.callbacks = Callbacks(
            [*ready_callbacks(run, program.run_dir), *callbacks], self.counter, self._say
        )
        self.evaluations = Evaluations(
            program,
            self.counter,
            self.policy_state,
            self._say,
            lambda evaluation: self.callbacks.tell("on_evaluation", evaluation),
        )
        self.rows = MetricsRows(program, self.counter, self.gauges, self.policy_state)
        steps = self.counter.env_steps
        self.console = Console(
            run.total_steps, steps, run.progress, program.run_dir.name, run.max_time
        )
        self.signals = StopSignals(self.counter)
        self.hooks = list(hooks)
        for hook in self.hooks:
            hook.on_driver(self)

    def _say(self, line: str) -> None:
        self.console.print(line)

    @property
    def resume_count(self) -> int:
        return self.checkpoints.resume_count

    @property
    def env_seed(self) -> int:
        """Seed of the first env; a resumed run meets new episodes rather than replaying them."""
        return self.program.seed + 1_000_003 * self.resume_count

    @property
    def final(self) -> dict[str, Evaluation]:
        """The final evaluations by mode ("greedy", "sample"); empty until `finish`."""
        return self.evaluations.final

    @property
    def replay(self) -> ReplaySnapshots | None:
        return self.checkpoints.replay

    def restore(self, learner: Any) -> None:
        """Load the learner (and torch's generator) from the checkpoint being resumed (inline
        runs; on ray the learner's process loads it), then hand it to the hooks."""
        self.checkpoints.restore(learner)
        for hook in self.hooks:
            hook.on_learner(learner)

    def attach_learner(self, handle: Any) -> None:
        """The learner's Ray actor (`--runtime ray`), before any learn call."""
        for hook in self.hooks:
            hook.on_remote_learner(handle)

    def attach_replay(self, tables: Tables) -> None:
        """Snapshot `tables` with every checkpoint, once the snapshot of the checkpoint being
        resumed is restored into them (call before any actor inserts)."""
        self.checkpoints.attach_replay(tables, self._say)

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
        learner_state: Callable[[], dict[str, Any]],
        updates: int = 1,
    ) -> None:
        """Count `updates` learner updates; evaluate, write a metrics row (asking `metrics`
        for the learner's figures), a checkpoint and a video when their step counts have been
        passed."""
        self.counter.updates += updates
        self.rows.update(metrics, policy_lag)
        # The row of the step a run ends at is written by `finish`, with the final evaluations
        # (which stand in for a periodic one due then).
        ending = self.counter.stop_reason() is not None
        if self.evaluations.periodic_due() and not ending:
            self.rows.pending.update(evaluation_row(self.evaluations.periodic(learner_state())))
        if self.rows.due() and not ending:
            self._write_row()
        if self.checkpoints.due():
            self.checkpoint(learner_state())
            self.checkpoints.scheduled()
        if self.evaluations.video_due():
            self.evaluations.video(learner_state())

    def finish(self, learner_state: dict[str, Any]) -> None:
        """The end of a run: the final checkpoint; unless Ctrl-C stopped it, the final greedy
        and sampling evaluations within what --max-time leaves (`RunConfig.final_eval_time`),
        cut short by a Ctrl-C or SIGTERM during them; then the last metrics row, with the
        evaluations' keys, if anything happened since the newest row."""
        for hook in self.hooks:
            hook.on_finish()
        if self.counter.updates == 0 and not self.stop_requested:
            self.console.print(
                f"warning: the run ended ({self.counter.stop_reason()}) at "
                f"{self.counter.env_steps:,} env steps before the learner's first update: it "
                "learned nothing. Raise --total-steps / --max-time, or lower the agent's unroll "
                "length or replay warm-up (min_replay_size, learning_starts)."
            )
        self.checkpoint(learner_state)
        if not self.stop_requested:
            for evaluation in self.evaluations.final_evaluations(learner_state, self._signalled):
                self.rows.pending.update(evaluation_row(evaluation))
        if self.counter.env_steps > self.rows.logged_step or self.rows.pending:
            self._write_row()

    def end_untrained(self, line: str) -> None:
        """The end of a run that --max-time left no time to train (a local Ray that started
        and placed its roles on a busy machine in all of it): `line` says so; stopped by
        max_time, with no checkpoint (no learner state exists) and no evaluation."""
        for hook in self.hooks:
            hook.on_finish()
        self.counter.stopped_by = "max_time"
        self.console.print(line)

    def end(self, summary: dict[str, Any]) -> None:
        """Tell the callbacks the run is over (`summary`: what summary.json holds)."""
        self.callbacks.end(summary)

    def _write_row(self) -> None:
        self.callbacks.tell("on_row", self.rows.write())

    def should_stop(self) -> bool:
        return self.stop_requested or self.counter.stop_reason() is not None

    def _signalled(self) -> str | None:
        """ "interrupted" (Ctrl-C) or "terminated" (SIGTERM) once a signal asked to stop."""
        return self.counter.interruption if self.stop_requested else None

    @property
    def stop_requested(self) -> bool:
        """Whether Ctrl-C or SIGTERM asked the run to stop (a launcher restarts nothing then)."""
        return self.signals.requested

    def checkpoint(self, learner_state: dict[str, Any]) -> None:
        """Write a checkpoint of the learner and the run's counters (`Checkpoints.write`)."""
        path = self.checkpoints.write(learner_state)
        self.callbacks.tell("on_checkpoint", path, self.counter.env_steps)

    def __enter__(self) -> Driver:
        self.signals.__enter__()
        program = self.program
        start = RunStart(
            program.run_dir,
            program.agent.name,
            program.env_id,
            program.seed,
            program.run.total_steps,
            self.counter.env_steps,
        )
        self.callbacks.tell("on_start", start)
        warning = never_learns(program, self.counter.env_steps)
        if warning is not None:  # on stdout: stderr is for what ends the run
            print(warning, flush=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.signals.__exit__(*exc)
        self.console.close()
        self.evaluations.close()
        self.rows.close(ok=exc[0] is None)
        if self.stop_requested:
            how = (
                "stopped by SIGTERM" if self.counter.interruption == "terminated" else "interrupted"
            )
            self.console.print(
                f"{how} at {self.counter.env_steps} steps; a checkpoint was written."
            )
