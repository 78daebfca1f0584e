"""`ShoalTrainable`: a Tune trial that is one inline shoal run, reporting its metrics rows.

The trial's config is `{"shoal": the experiment's fixed settings, "agent": {...}, "run":
{...}}` (the space's draws). One `step` is one metrics row of the run (`--log-interval` env
steps). Checkpoints are shoal's own files (`checkpoint.py`: atomic, weights only), one per Tune
checkpoint directory. With `reuse_actors=True` a PBT exploit reaches the trial's live process
as `reset_config(new settings)` then `load_checkpoint(the donor's)`: the learner takes the
donor's state and then the new settings, in place, so no Ray actor or env is made again.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from ray import tune

from shoal import config as configs
from shoal import experiment
from shoal.checkpoint import load_checkpoint, load_latest
from shoal.errors import ShoalError, user_error
from shoal.tune.trial import ERROR_KEY, TrialRun

__all__ = ["CHECKPOINT_FILE", "ShoalTrainable", "resolve_trial"]

CHECKPOINT_FILE = "shoal.pt"
_OWNER = "trial.json"  # beside it: the run directory whose checkpoint it is
_NOT_STARTED = "not-started"  # a Tune checkpoint taken before the run's first row


def resolve_trial(config: dict[str, Any], run_name: str) -> experiment.Resolved:
    """The trial's full settings: the experiment's, with the space's draws over them."""
    base = config["shoal"]
    run = {
        **base["run"],
        **config.get("run", {}),
        "runs_dir": base["runs_dir"],
        "run_name": run_name,
        "progress": False,
    }
    return experiment.resolve(
        base["algo"],
        base["env"],
        base["seed"],
        base.get("config_file"),
        {**base["agent"], **config.get("agent", {})},
        run,
        base["env_config"],
    )


class ShoalTrainable(tune.Trainable):
    def setup(self, config: dict[str, Any]) -> None:
        self._run: TrialRun | None = None
        self._exploits = 0
        self._counts: dict[Path, int] = {}  # exploits of other trials this process served
        self._last: dict[str, Any] = {}
        # Exploit timing: from the step before it (the trial paused) to the step after it
        # (resumed), and the copy itself (the donor's state in, the new settings applied).
        self._step_ended = 0.0
        self._exploit_copy = math.nan
        self._exploit_pending = False
        self._take(config)

    def _take(self, config: dict[str, Any]) -> None:
        base = config["shoal"]
        self._metric = base["metric"]
        name = base.get("run_name") or f"{base['algo']}-{self.trial_id}"
        self._resolved = resolve_trial(config, name)
        self._run_dir = Path(base["runs_dir"]) / name

    # Training ---------------------------------------------------------------------------

    def step(self) -> dict[str, Any]:
        began = time.perf_counter()
        exploit_time = math.nan
        if self._exploit_pending:
            exploit_time, self._exploit_pending = began - self._step_ended, False
        if self._run is None:
            self._start()
        run = self._run
        assert run is not None
        rates = run.learning_rates() if run.learner is not None else []
        while True:
            try:
                row, done = run.next_row()
            except ShoalError as err:
                # A user's mistake (an env that raises, a bad setting): the trial ends with
                # the one paragraph, which the final table shows, not with Tune's traceback.
                return {
                    "done": True,
                    ERROR_KEY: str(user_error(err)),
                    "env_steps": self._last.get("env_steps", 0),
                    self._metric: math.nan,
                }
            if row is not None:
                self._last = row
            if done or _finite(self._last.get(self._metric)):
                break
        result = {k: v for k, v in self._last.items() if _number(v)}
        result.setdefault(self._metric, math.nan)
        if not rates and run.learner is not None:
            rates = run.learning_rates()
        result.update(
            {
                # What the optimisers stepped with after the last reset or restore.
                "optimizer_lr": rates[0] if rates else math.nan,
                "exploits": self._exploits,
                "exploit_time_s": exploit_time,
                "exploit_copy_s": self._exploit_copy,
                "pid": os.getpid(),
                "done": done,
            }
        )
        self._step_ended = time.perf_counter()
        return result

    def _start(self, resume: dict[str, Any] | None = None, exploit: Any = None) -> None:
        """Start the trial's run: a new one, or `resume` (a checkpoint payload of its own)."""
        if resume is None and exploit is None and self._run_dir.exists():
            # Tune starts this trial from nothing (no checkpoint of it survived): so does shoal.
            shutil.rmtree(self._run_dir)
        if resume is None and exploit is not None and self._run_dir.exists():
            # An exploit into a trial whose process was replaced: its own counters go on.
            resume = load_latest(self._run_dir / "checkpoints", self._resolved.algo)
        if resume is None:
            if self._run_dir.exists():
                shutil.rmtree(self._run_dir)
            experiment.new_run_dir(self._resolved)
        else:
            text = configs.dump_yaml(self._resolved.as_dict())
            configs.write_atomically(self._run_dir / experiment.CONFIG_FILE, text)
            resume = {k: v for k, v in resume.items() if k != "replay"}
        self._run = TrialRun(self._resolved, self._run_dir, resume, exploit)

    # Checkpoints --------------------------------------------------------------------------

    def save_checkpoint(self, checkpoint_dir: str) -> None:
        path = Path(checkpoint_dir) / CHECKPOINT_FILE
        owner = json.dumps({"run_dir": str(self._run_dir)})
        configs.write_atomically(Path(checkpoint_dir) / _OWNER, owner)
        run = self._run
        if run is None or run.learner is None or run.finished:
            if run is not None and run.finished:
                self._copy_newest(path)
            else:
                (Path(checkpoint_dir) / _NOT_STARTED).write_text(str(self._run_dir))
            return
        run.save(path)

    def _copy_newest(self, path: Path) -> None:
        """The newest checkpoint of the run directory (a finished run's: its final one)."""
        from shoal.checkpoint import list_checkpoints

        kept = list_checkpoints(self._run_dir / "checkpoints")
        if kept:
            shutil.copyfile(kept[-1], path)

    def restore(self, checkpoint_path: Any) -> None:
        """Tune's restore, also for a checkpoint of this trial that Tune has since deleted.

        A trial checkpoints every row and Tune keeps the newest four, while the experiment's
        state, which names the checkpoint `--resume` restores, is saved every few seconds. A
        `shoal tune` killed between two saves can leave a state naming a deleted checkpoint;
        Tune then errors the trial ("does not exist on storage anymore"). Here the trial goes on
        from the newest checkpoint of its own run directory instead (or afresh if it has none)."""
        checkpoint = getattr(checkpoint_path, "checkpoint", None)
        if checkpoint is None or not self._own_and_gone(checkpoint):
            super().restore(checkpoint_path)
            return
        with tempfile.TemporaryDirectory(prefix="shoal-restore-") as stand_in:
            self._stand_in(Path(stand_in))
            found = type(checkpoint_path)(
                checkpoint=tune.Checkpoint.from_directory(stand_in),
                metrics=checkpoint_path.metrics,
            )
            super().restore(found)

    def _own_and_gone(self, checkpoint: Any) -> bool:
        """Whether `checkpoint` is one of this trial's (not a PBT donor's) and no longer exists."""
        from pyarrow.fs import FileType

        own = f"_{self.trial_id}_" in Path(checkpoint.path).parent.name
        gone = checkpoint.filesystem.get_file_info(checkpoint.path).type == FileType.NotFound
        return own and gone

    def _stand_in(self, directory: Path) -> None:
        """In `directory`, a Tune checkpoint of this trial made from its run directory."""
        owner = json.dumps({"run_dir": str(self._run_dir)})
        configs.write_atomically(directory / _OWNER, owner)
        self._copy_newest(directory / CHECKPOINT_FILE)

    def load_checkpoint(self, checkpoint_dir: str | dict) -> None:
        path = Path(str(checkpoint_dir)) / CHECKPOINT_FILE
        if not path.is_file():  # taken before its run's first row: start afresh
            self._drop()
            return
        began = time.perf_counter()
        payload = load_checkpoint(path, self._resolved.algo)
        self._load_time = time.perf_counter() - began
        owner = json.loads((path.parent / _OWNER).read_text())
        own = owner["run_dir"] == str(self._run_dir)
        run = self._run
        if run is not None and run.learner is not None and not run.finished:
            began = time.perf_counter()
            run.exploit(payload, self._resolved.agent_config)
            if not own:
                self._exploits += 1
                self._exploit_copy = time.perf_counter() - began + self._load_time
                self._exploit_pending = True
            return
        self._drop()
        if own:
            self._start(resume=payload)
        else:
            self._start(exploit=payload)  # in a new process: not timed as in place
            self._exploits += 1

    # Reuse --------------------------------------------------------------------------------

    def reset_config(self, new_config: dict[str, Any]) -> bool:
        old_dir, old = self._run_dir, self._resolved
        self._take(new_config)
        run = self._run
        same_trial = self._run_dir == old_dir
        if not same_trial:  # Tune hands this process to another trial: its own count
            self._counts[old_dir] = self._exploits
            self._exploits = self._counts.get(self._run_dir, 0)
            self._exploit_copy, self._exploit_pending = math.nan, False
        if run is None or run.finished or run.learner is None or not same_trial:
            self._drop()
            return True
        changed = _changed(old, self._resolved)
        if changed and changed <= {f"agent.{n}" for n in old.agent.mutable} and run.takes_live():
            run.apply(self._resolved.agent_config)
            return True
        if changed:  # a setting the live run cannot take: built again from its checkpoint
            self._drop()
        return True

    def _drop(self) -> None:
        if self._run is not None:
            self._run.abandon()
            self._run = None

    def cleanup(self) -> None:
        self._drop()


def _changed(old: experiment.Resolved, new: experiment.Resolved) -> set[str]:
    """The `section.field` names whose values differ between two resolved configs."""
    found = set()
    for section, a, b in (("agent", old.agent_config, new.agent_config), ("run", old.run, new.run)):
        for field in dataclasses.fields(a):
            if getattr(a, field.name) != getattr(b, field.name):
                found.add(f"{section}.{field.name}")
    return found - {"run.run_name"}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    return _number(value) and math.isfinite(value)
