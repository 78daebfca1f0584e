"""One shoal run inside a Tune trial's process, advanced one metrics row at a time.

The run is `shoal train`'s run (`run_inline` or `run_ray`, unchanged) in a thread of its own. A
hook (`RunHook`) keeps hold of the run's driver and learner, and a callback hands each metrics
row over and waits there until asked for the next one, so between
two rows the learner is idle: a checkpoint, an exploit (another member's learner state copied
in) or new settings (`Learner.apply_settings`) then act on a consistent learner, in place,
without building anything again.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from shoal import experiment
from shoal.agents.base import Policy, continue_from, learning_rates
from shoal.checkpoint import checkpoint_path
from shoal.config import dump_yaml, write_atomically
from shoal.errors import ShoalError, user_error
from shoal.run.summary import run_summary, write_summary
from shoal.runtime.callbacks import Callback
from shoal.runtime.driver import Driver
from shoal.runtime.hooks import RunHook
from shoal.runtime.inline import run_inline

__all__ = ["RemoteLearner", "TrialRun", "learning_rates"]


# The result key of a trial that ended on a user's mistake: its one paragraph.
ERROR_KEY = "shoal_error"


class _Abandon(BaseException):
    """Raised in the run's thread to leave the run where it is (its trial moved elsewhere)."""


class TrialRun:
    """A run of `resolved` in `run_dir`, trained row by row from `next_row`.

    `resume`: the checkpoint payload to continue from (None: a new run); `exploit`: another
    member's checkpoint payload to copy in before the first update (see `exploit`)."""

    def __init__(
        self,
        resolved: experiment.Resolved,
        run_dir: Path,
        resume: dict[str, Any] | None,
        exploit: dict[str, Any] | None = None,
    ) -> None:
        self.resolved = resolved
        self.run_dir = run_dir
        self.program = experiment.program(resolved, run_dir, experiment.spec_of(resolved))
        self._resume = resume
        self.pending_exploit = exploit
        self._out: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._go = threading.Semaphore(0)
        self._abandoned = False
        self._thread: threading.Thread | None = None
        self.driver: Driver | None = None
        self.learner: Any = None
        self.finishing = False  # the run's loop ended: its last row is not waited on
        self.finished = False
        # The learner's rates when the run handed over its last row: a `--runtime ray`
        # learner's process ends with the run, before the trial asks for them.
        self._final_rates: list[float] | None = None

    # The run's thread -------------------------------------------------------------------

    def _main(self) -> None:
        try:
            if self.resolved.run.runtime == "ray":  # the actors and learner as Ray actors
                from shoal.runtime.ray_launcher import run_ray as runner
            else:
                runner = run_inline
            driver = runner(
                self.program,
                self._resume,
                callbacks=[_HandOver(self)],
                started=time.time(),
                hooks=[_TrialHook(self)],
            )
            _write_summary(self.resolved, self.run_dir, driver)
            self._out.put(("done", None))
        except _Abandon:
            self._out.put(("abandoned", None))
        except ShoalError as err:
            self._out.put(("error", user_error(err)))
        except BaseException as err:
            self._out.put(("error", err))

    def _hand_over(self, row: dict[str, Any]) -> None:
        """In the run's thread: give `row` to `next_row` and wait to be asked for the next."""
        if self.finishing:  # the last row: the run ends without waiting
            if self.learner is not None:
                self._final_rates = self._rates_now()
            self._out.put(("last", row))
            return
        self._out.put(("row", row))
        self._go.acquire()
        if self._abandoned:
            raise _Abandon

    # The trial's side ---------------------------------------------------------------------

    def next_row(self) -> tuple[dict[str, Any] | None, bool]:
        """Train on to the next metrics row: (the row, whether the run has ended). An error
        of the run is raised here."""
        if self.finished:
            return None, True
        if self._thread is None:
            self._thread = threading.Thread(target=self._main, name="shoal-trial", daemon=True)
            self._thread.start()
        else:
            self._go.release()
        kind, value = self._out.get()
        if kind == "row":
            return value, False
        self.finished = True
        if kind == "last":  # the summary follows
            kind, after = self._out.get()
            if kind == "error":
                raise after
            return value, True
        if kind == "error":
            raise value
        return None, True

    def save(self, path: Path) -> None:
        """A checkpoint of the paused run (written to the run directory as every shoal
        checkpoint is, atomically) and a copy of it at `path`."""
        driver = self._paused_driver()
        driver.checkpoint(self.learner.state_dict())
        written = checkpoint_path(self.program.checkpoint_dir, driver.counter.env_steps)
        shutil.copyfile(written, path)

    def exploit(self, payload: dict[str, Any], agent_config: Any) -> None:
        """Continue from another member's learner (`payload`: its checkpoint) with this
        trial's settings `agent_config`: weights, optimiser and normaliser state are copied,
        then the settings are applied over them, so the optimiser learns at this trial's rate
        and not the one stored with the donor's optimiser (ray-project/ray#62173). The env
        step, episode and update counters stay this run's; the recent returns are the
        donor's (the policy they measure is now the donor's)."""
        driver = self._paused_driver()
        if isinstance(self.learner, RemoteLearner):
            self.learner.take_state(payload["learner"])
        else:
            continue_from(self.learner, payload["learner"])
        self.apply(agent_config)
        driver.policy_state.update(payload.get("policies", {}))
        counter = driver.counter
        counter.recent_returns.clear()
        counter.recent_returns.extend(payload["recent_returns"])
        counter.recent_lengths.clear()
        counter.recent_lengths.extend(payload["recent_lengths"])

    def apply(self, agent_config: Any) -> None:
        """Learn and act with `agent_config` from now on (fields outside `Agent.mutable`
        unchanged): the learner's settings, and the acting policies' (DQN's epsilon)."""
        if self.program.agent.mutable:
            self.learner.apply_settings(agent_config)
            for policy in self._paused_driver().acting_policies:
                policy.apply_settings(agent_config)
        resolved = dataclasses.replace(self.resolved, agent_config=agent_config)
        self.resolved = resolved
        write_atomically(self.run_dir / experiment.CONFIG_FILE, dump_yaml(resolved.as_dict()))

    def learning_rates(self) -> list[float]:
        """The rates the learner's optimisers step with now (a finished run's: at its end)."""
        if self.finished and self._final_rates is not None:
            return self._final_rates
        return self._rates_now()

    def _rates_now(self) -> list[float]:
        if isinstance(self.learner, RemoteLearner):
            return self.learner.learning_rates()
        return learning_rates(self.learner)

    def takes_live(self) -> bool:
        """Whether new settings reach everything that reads them without a rebuild: the
        learner always; a policy that reads settings (`Policy.apply_settings`, DQN's
        epsilon) only where it acts in this process (inline runs)."""
        reads = self.program.agent.make_policy
        reads_settings = getattr(reads, "apply_settings", Policy.apply_settings)
        return self.resolved.run.runtime != "ray" or reads_settings is Policy.apply_settings

    def abandon(self) -> None:
        """Stop the run where it is, without a final checkpoint or evaluation."""
        thread = self._thread
        if thread is None or self.finished:
            return
        self._abandoned = True
        self._go.release()
        thread.join(timeout=60)
        self.finished = True

    def _paused_driver(self) -> Driver:
        if self.driver is None or self.learner is None or self.finished:
            raise RuntimeError("the trial's run is not paused between two rows")
        return self.driver


class _TrialHook(RunHook):
    """Keeps hold of the trial's driver and learner, copies a pending exploit in before the
    first update, and says when the run is finishing (its last row is not waited on)."""

    def __init__(self, trial: TrialRun) -> None:
        self.trial = trial

    def on_driver(self, driver: Driver) -> None:
        # A ray run whose learner died goes on with a new driver (`run_ray`'s attempts).
        self.trial.driver, self.trial.finishing = driver, False

    def on_learner(self, learner: Any) -> None:
        self._take(learner)

    def on_remote_learner(self, handle: Any) -> None:
        """`--runtime ray`: the learner is a Ray actor, driven through its handle."""
        self._take(RemoteLearner(handle))

    def on_finish(self) -> None:
        self.trial.finishing = True

    def _take(self, learner: Any) -> None:
        trial = self.trial
        trial.learner = learner
        if trial.pending_exploit is not None:  # before the first update
            payload, trial.pending_exploit = trial.pending_exploit, None
            trial.exploit(payload, trial.resolved.agent_config)


class RemoteLearner:
    """The learner of a `--runtime ray` trial, in its Ray process (`LearnerProcess`): what a
    trial asks of a learner, as calls made while the driver waits between two rows (so no
    learn call is in flight and the learner is idle)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def _call(self, method: str, *args: Any) -> Any:
        import ray

        return ray.get(getattr(self.handle, method).remote(*args))

    def state_dict(self) -> dict[str, Any]:
        return self._call("state_dict")

    def take_state(self, state: dict[str, Any]) -> None:
        self._call("take_state", state)

    def apply_settings(self, config: Any) -> None:
        self._call("apply_settings", config)

    def learning_rates(self) -> list[float]:
        return self._call("learning_rates")


class _HandOver(Callback):
    def __init__(self, trial: TrialRun) -> None:
        self.trial = trial

    def on_row(self, row: dict[str, Any]) -> None:
        self.trial._hand_over(row)


def _write_summary(resolved: experiment.Resolved, run_dir: Path, driver: Driver) -> None:
    """summary.json by the run directory's one writer, with the trial's pid beside the keys
    every run's summary holds."""
    greedy, sampled = (driver.final.get(mode) for mode in ("greedy", "sample"))
    summary = run_summary(
        algo=resolved.algo,
        env=resolved.env_id,
        seed=resolved.seed,
        counter=driver.counter,
        evaluation=greedy.result.as_dict() if greedy else None,
        evaluation_sampled=sampled.result.as_dict() if sampled else None,
        extra={"pid": os.getpid()},
    )
    write_summary(run_dir, summary)
