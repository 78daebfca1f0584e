"""The steps of `shoal.train`, each one screen: open the run (new, resumed, or found by
`resume="auto"`), launch it (`shoal.api`), summarise it.

`open_run` checks everything a run needs before it writes anything (the config, the env, the
network, the data path, the learner's device, the machine and the cluster), then makes the run
directory, or continues the stored run with its newest checkpoint. `failed` says what a run
that failed leaves; `summarise` writes `summary.json`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shoal import experiment, requeue, storage
from shoal.checkpoint import list_checkpoints, load_latest
from shoal.config import dump_yaml, write_atomically
from shoal.envs.registry import EnvSource
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError, ShoalError, ShoalWarning, StorageError
from shoal.run.layout import CHECKPOINT_DIR, checkpoint_dir
from shoal.run.summary import run_summary, write_summary
from shoal.runtime.budget import check_budget
from shoal.runtime.callbacks import Callback
from shoal.runtime.driver import Driver
from shoal.runtime.program import Program
from shoal.runtime.ray_connect import check_address
from shoal.storage import RunStore, UploadError
from shoal.telemetry.trackers import check_installed

__all__ = ["Finished", "Opened", "Upload", "check_machine", "failed", "open_run", "summarise"]


@dataclass(frozen=True)
class Opened:
    """A run ready to launch: its config, env spec, the checkpoint it continues from (None: a
    new run, or one with none kept) and its store (a folder, or a bucket's staging folder)."""

    resolved: experiment.Resolved
    spec: EnvSpec
    state: dict[str, Any] | None
    store: RunStore
    fresh: bool  # a new run directory (removed again if it fails before its first checkpoint)

    def program(self) -> Program:
        return experiment.program(self.resolved, self.store.local, self.spec)


@dataclass(frozen=True)
class Finished:
    """What `resume="auto"` found: a run that already ended on its budget, and its summary."""

    where: Path | str
    summary: dict[str, Any]


def open_run(
    algo: str | None,
    env: Any,
    seed: int | None,
    config: str | Path | None,
    agent: dict[str, Any] | None,
    run: dict[str, Any],
    env_config: dict[str, Any] | None,
    resume: str | Path | None,
    trust_run: bool,
) -> Opened | Finished:
    """The run `shoal.train`'s arguments name: a new one, the one in `resume`, or, with
    `resume="auto"`, the one a requeued job continues (or that it finds already ended)."""
    auto = resume == "auto"
    store: RunStore | None = None
    if auto:  # a requeued job's command: continue its run if there is one
        found = requeue.find(algo, env, seed, config, agent, run, env_config)
        if found.complete is not None:
            assert found.store is not None
            return Finished(found.store.where, found.complete)
        if found.store is not None:
            algo = config = agent = env_config = seed = None
            env = None if isinstance(env, str) else env  # an env object is passed again
            trust_run = trust_run or found.trusted
            store = found.store
        resume = None if store is None else store.where
    if resume is None:
        return _create(algo, env, seed, config, agent, run, env_config)
    if algo or config or agent or env_config or seed is not None:
        raise ConfigError(
            "--resume continues a run as configured; only run settings such as "
            "--total-steps or --max-time (and, from Python, the env object it was trained "
            "on) may be given with it."
        )
    store = store or storage.open_run(resume)
    try:
        resolved, spec, state = _resumed(store, run, trust_run, env, auto)
    except BaseException as err:
        store.close()
        if store.remote and isinstance(err, ShoalError):  # name the URL, not the staging
            raise type(err)(store.say(str(err))) from None
        raise
    return Opened(resolved, spec, state, store, fresh=False)


def _create(
    algo: str | None,
    env: Any,
    seed: int | None,
    config: str | Path | None,
    agent: dict[str, Any] | None,
    run: dict[str, Any],
    env_config: dict[str, Any] | None,
) -> Opened:
    """A new run, checked before its directory is made."""
    resolved = experiment.resolve(algo, env, seed, config, agent, run, env_config)
    spec = experiment.spec_of(resolved)
    resolved.agent.make_networks(spec, resolved.agent_config)  # a misfit fails before writing
    unwritten = experiment.program(resolved, Path(), spec)
    unwritten.data_path()  # so does data the agent's replay cannot store
    if resolved.run.runtime == "inline":  # and a learner device this machine lacks
        unwritten.learner_device()
    check_machine(unwritten)
    return Opened(resolved, spec, None, experiment.new_run_dir(resolved), fresh=True)


def _resumed(
    store: RunStore, run: dict[str, Any], trust_run: bool, env: Any, auto: bool
) -> tuple[experiment.Resolved, EnvSpec, dict[str, Any] | None]:
    """The stored config of the run in `store` with `run` applied, its env's spec and its
    newest checkpoint (None: none was kept), the replay snapshot it names pulled with it."""
    run_dir = store.local
    resolved = experiment.read_run_dir(run_dir, run, trust=trust_run, env=env)
    joins = resolved.run.runtime == "ray" and resolved.run.address
    if joins and "address" not in run and not trust_run:
        # A Ray cluster sends the driver pickled objects: joining one someone else runs lets
        # them run code here, so the address a run directory records is not joined unasked.
        raise ConfigError(
            f"{store.where} records the Ray cluster address {resolved.run.address!r}, which "
            "resuming would join, and a cluster someone else runs can run code in this "
            "process. Pass --address to name the cluster to join (Python: run={'address': "
            "...}), or --trust-run (trust_run=True) if you made this run or trust whoever did."
        )
    spec = experiment.spec_of(resolved)
    check_machine(experiment.program(resolved, run_dir, spec))
    state = load_latest(checkpoint_dir(run_dir), resolved.algo, set_aside=True)
    if state is None:
        # Nothing was kept (killed before or while writing its first checkpoint): the
        # same run from step 0, with the rows and events of the lost attempt dropped.
        warnings.warn(
            f"{store.where} has no complete checkpoint (it stopped before its first one was "
            "written), so it starts again from step 0; the metrics of the lost attempt are "
            "replaced.",
            ShoalWarning,
            stacklevel=4,  # the caller of shoal.train
        )
    # auto: a run killed after its final checkpoint stops at once, evaluated and summarised.
    if state is not None and state["env_steps"] >= resolved.run.total_steps and not auto:
        raise ConfigError(
            f"{store.where} already finished its budget of {resolved.run.total_steps} steps. "
            f"Pass a larger --total-steps to train it further."
        )
    budget = resolved.run.train_time  # --max-time less the final evaluation's share
    if state is not None and budget is not None and state["elapsed"] >= budget and not auto:
        max_time = resolved.run.max_time
        assert max_time is not None
        raise ConfigError(
            f"{store.where} already used its time budget: it trained for "
            f"{state['elapsed']:,.0f} s over its attempts, and --max-time {max_time:g} counts "
            f"them all (training gets {budget:,.0f} s of it, the final evaluation the rest). "
            f"Pass a larger --max-time with --resume to train it further, e.g. "
            f"`shoal train --resume {store.where} --max-time {2 * max_time:g}`."
        )
    if state is not None and state.get("replay"):
        store.pull(f"{CHECKPOINT_DIR}/{name}" for name in state["replay"]["files"])
    if run:
        write_atomically(run_dir / experiment.CONFIG_FILE, dump_yaml(resolved.as_dict()))
    return resolved, spec, state


def check_machine(program: Program) -> None:
    """What the run needs of the machine and the cluster, checked before anything is written:
    memory and time for its envs, the packages of the chosen trackers, and a Ray cluster that
    answers at --address."""
    check_budget(program)
    run = program.run
    check_installed(run.loggers)
    if run.runtime == "ray" and run.address:
        check_address(run.address)
    if run.runtime == "ray":
        _check_shippable(program.env_source)


def _check_shippable(source: EnvSource) -> None:
    """An env object goes to Ray's actor processes with Ray's cloudpickle: one that cannot be
    pickled (an open emulator, a lock, a socket) is refused before anything is written."""
    if source.family != "object":
        return  # ids and module:function factories are made by name in each process
    from ray import cloudpickle  # Ray is imported only for ray runs

    try:
        cloudpickle.dumps(source.factory)
    except Exception as err:
        raise ConfigError(
            f"The env {source.env_id} cannot be sent to Ray's actor processes: pickling it "
            f"failed ({type(err).__name__}: {err!s:.120}). Pass a factory instead, "
            "'package.module:function' naming a function that makes the env (installed or on "
            "the actors' PYTHONPATH), or use runtime='inline'."
        ) from None


class Upload(Callback):
    """Syncs a run staged for a bucket after each checkpoint (`shoal.storage`)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store

    def on_checkpoint(self, path: Path, env_steps: int) -> None:
        self.store.sync()


def failed(err: ShoalError, store: RunStore, fresh: bool) -> ShoalError:
    """What a run that stopped on `err` leaves: a new run with no checkpoint, nothing."""
    if isinstance(err, UploadError):
        return err  # it names the staging folder that holds the run, kept for the resume
    run_dir, where = store.local, store.where
    kept = list_checkpoints(checkpoint_dir(run_dir))
    if fresh and not kept:
        store.discard()
        return type(err)(
            f"{store.say(str(err))} Nothing was kept: {where} had no checkpoint "
            "yet, so it was removed."
        )
    try:
        store.sync()  # the rows up to the failure, beside the checkpoints already there
    except UploadError as upload:
        return type(err)(f"{store.say(str(err))} {upload}")
    store.close()
    if kept and isinstance(err, StorageError):
        return type(err)(store.say(str(err)))  # it names the newest checkpoint and what to do
    if kept:
        tail = (
            f"{where} keeps its checkpoints, the newest {kept[-1].name}; "
            f"`shoal eval {where}` evaluates it."
        )
    else:
        tail = f"{where} has no checkpoint yet."
    return type(err)(f"{store.say(str(err))} {tail}")


def summarise(opened: Opened, driver: Driver) -> dict[str, Any]:
    """Write `summary.json` of the run `driver` drove (synced to its store), tell the
    callbacks it ended, close the store; returns the summary."""
    resolved, store = opened.resolved, opened.store
    greedy, sampled = (driver.final.get(mode) for mode in ("greedy", "sample"))
    summary = run_summary(
        algo=resolved.algo,
        env=resolved.env_id,
        seed=resolved.seed,
        counter=driver.counter,
        evaluation=greedy.result.as_dict() if greedy else None,
        evaluation_sampled=sampled.result.as_dict() if sampled else None,
    )
    write_summary(store.local, summary)
    store.sync()
    driver.end(summary)
    store.close()
    return summary
