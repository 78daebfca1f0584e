"""The ray launcher: the learner, actors and table shards as Ray actors, local or on a cluster.

It only decides placement; the parts are those of every launcher (`shoal.runtime.ray_processes`).
The driver (this process) keeps each actor busy with `max_inflight` unroll requests (or, with
central inference, each env-only actor's loop running), keeps one learn call of the learner in
flight, and counts, logs and checkpoints what they report. Acting and learning wait for each
other only through the data path's tables, exactly as inline. Actors and replay shards restart
after a crash (`max_restarts=-1`): an actor's failed requests are sent again, and the learner
never waits on a dead actor (an on-policy batch waits for the restarted actor's unroll instead);
a shard comes back with its part of the newest checkpoint's replay snapshot while inserts into
it are sent again and the learner samples the others. Each restart is counted once
(`actor_restarts`, `replay_restarts`), when a ping answers from a new process (a run that
ends while Ray restarts one waits up to `RESTART_WAIT_S` for it); a shard's also
says in one line, and in `replay_items_lost`, what it lost. A dead learner is restarted, with
every other role, from the newest checkpoint in this process (what `--resume` does, at most
`--max-learner-restarts` times, counted as `learner_restarts`, its lost steps as
`learner_steps_lost`: `ray_supervision`); one whose node is gone ends the run with a message
naming the checkpoint `--resume` goes on from. An agent's updaters (`Agent.updaters`, QT-Opt's
Bellman updaters) are roles too, placed as actors are, each running its labelling loop in one
long call that the driver sends again when a restarted process is back.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from shoal.config import write_atomically
from shoal.errors import ConfigError, ShoalError
from shoal.run.layout import PLACEMENT_FILE
from shoal.runtime.callbacks import Callback
from shoal.runtime.central import serves_network
from shoal.runtime.config import parse_resources
from shoal.runtime.counter import Counter
from shoal.runtime.driver import Driver
from shoal.runtime.hooks import RunHook
from shoal.runtime.program import Program
from shoal.runtime.ray_connect import OutOfTime, connect, start_local
from shoal.runtime.ray_processes import (
    ActorProcess,
    EnvActorProcess,
    LearnerProcess,
    UpdaterProcess,
)
from shoal.runtime.ray_supervision import (
    LearnerDied,
    Outages,
    node_addresses,
    restart_from_checkpoint,
)
from shoal.runtime.tables import RemoteShards, TableProcess, died

PLACEMENT_TIMEOUT_S = 120.0
WAIT_S = 1.0  # the driver looks at the stop conditions at least this often
WATCH_S = 2.0  # a replay shard's watch call returns this often, with what the shard holds
# A run that ends while Ray restarts a role's process waits this long for it, so the summary
# counts the restart.
RESTART_WAIT_S = 30.0


def run_ray(
    program: Program,
    resume: dict[str, Any] | None = None,
    callbacks: Sequence[Callback] = (),
    started: float | None = None,
    hooks: Sequence[RunHook] = (),
) -> Driver:
    """`hooks`: given the driver and the learner's handle (`shoal tune`'s trials)."""
    import ray

    run = program.run
    torch.set_num_threads(run.torch_threads)
    updaters = _updaters(program)
    started_here = not ray.is_initialized()
    watchdog = None  # of a local Ray this run starts: never of a cluster it joins
    if started_here:
        if run.address:
            connect(run.address)
        else:
            # A local Ray counts logical CPUs: ask for at least what the roles reserve.
            wanted = run.learner_cpus + run.actors * run.actor_cpus
            if program.data_path().sharded:
                wanted += run.replay_shards * run.replay_cpus
            wanted += updaters * run.actor_cpus
            try:
                watchdog = start_local(
                    num_cpus=max(os.cpu_count() or 1, int(np.ceil(wanted))),
                    deadline=_last_start(program, resume, started),
                )
            except OutOfTime as late:
                return _untrained(program, resume, callbacks, started, hooks, late)
    try:
        carried: dict[str, int] = {}
        restarts = 0  # of the learner, by this command
        while True:
            launched = _launch(ray, program, resume, callbacks, started, carried, restarts, hooks)
            if isinstance(launched, Driver):
                return launched
            resume, started, carried = launched  # the learner died: again, from a checkpoint
            restarts += 1
    finally:
        if started_here:
            if watchdog is not None:
                _end_autoscaler_monitor(ray)
            ray.shutdown()
        if watchdog is not None:
            watchdog.end()


def _updaters(program: Program) -> int:
    """The agent's updater processes (`Agent.updaters`); a ConfigError if its data path keeps
    no replay shards for them to sample."""
    count = int(program.agent.updaters(program.agent_config))
    if count and not program.data_path().sharded:
        raise ConfigError(
            f"{program.agent.name} asks for {count} updater processes, which sample the replay "
            "shards, and this run's data path has none (it keeps its table in the learner's "
            "process). Set their count to 0 (for QT-Opt, --agent.bellman-updaters 0)."
        )
    return count


def _last_start(
    program: Program, resume: dict[str, Any] | None, started: float | None
) -> float | None:
    """When --max-time leaves no time to train (`Counter.last_start`), before the driver's
    counter exists: Ray's start is cut there."""
    counter = Counter(program.run) if started is None else Counter(program.run, started=started)
    if resume is not None:
        counter.elapsed_before = float(resume["elapsed"])
    return counter.last_start()


def _untrained(
    program: Program,
    resume: dict[str, Any] | None,
    callbacks: Sequence[Callback],
    started: float | None,
    hooks: Sequence[RunHook],
    late: OutOfTime,
) -> Driver:
    """The run ended by --max-time before Ray had started: its summary, with no step."""
    with Driver(program, resume, callbacks, started, hooks) as driver:
        _out_of_time(driver, late)
    return driver


def _out_of_time(driver: Driver, late: OutOfTime, restarts: int = 0) -> None:
    """End `driver`'s run, which --max-time left no time to train: say so in one line
    (`restarts`: of the learner, whose roles were being placed again)."""
    elapsed, max_time = driver.counter.elapsed, driver.program.run.max_time
    if restarts:
        driver.end_untrained(
            f"warning: the learner's restart used the budget: at {elapsed:.0f} s of --max-time "
            f"{max_time:g} shoal was {late.what} again, which leaves no time to train; the "
            "run ends at its checkpoint's steps."
        )
        return
    driver.end_untrained(
        f"warning: Ray's start used the budget: at {elapsed:.0f} s of --max-time {max_time:g} "
        f"shoal was {late.what}, which leaves no time to train, so the run ends with 0 steps. "
        "Raise --max-time (Ray's start and the placing of its roles count against it), or "
        "pass --address of a running Ray cluster (`ray start --head`), whose start does not "
        "count."
    )


def _end_autoscaler_monitor(ray: Any) -> None:
    """Kill the local Ray's autoscaler monitor before `ray.shutdown()`. Shutdown ends the GCS
    first and then gives each process a second after SIGTERM; the monitor's SIGTERM handler
    reports its end to the GCS, which is gone, and takes the whole second (1.0 of shutdown's
    1.4 s on a busy machine, and of the exit after a SIGTERM). It keeps nothing."""
    with contextlib.suppress(Exception):  # Ray's private node object; gone in another Ray
        from ray._private import ray_constants

        node = ray._private.worker._global_node
        for info in node.all_processes.get(ray_constants.PROCESS_TYPE_MONITOR, []):
            info.process.kill()


def _launch(
    ray: Any,
    program: Program,
    resume: dict[str, Any] | None,
    callbacks: Sequence[Callback],
    started: float | None,
    carried: dict[str, int],
    restarts: int,
    hooks: Sequence[RunHook] = (),
) -> Driver | tuple[dict[str, Any] | None, float, dict[str, int]]:
    """One attempt of the run: every role started (from `resume`), then the driver's loop.
    Returns the driver, or, when the learner's process died and may be restarted, what the
    next attempt starts from (`restart_from_checkpoint`). `carried`: the event counts of earlier
    attempts (with those since their checkpoints)."""
    run = program.run
    handles: list[Any] = []
    prefix = f"shoal-{uuid.uuid4().hex[:12]}"  # actors find each other by these names
    try:
        with Driver(program, resume, callbacks, started, hooks) as driver:
            driver.counts.update(carried)
            last_start = driver.counter.last_start()
            shards = _start_shards(ray, program, prefix) if program.data_path().sharded else []
            handles += shards
            if shards:  # the resumed replay is restored before any actor can insert
                if not _wait_placed(ray, shards, last_start):
                    _out_of_time(driver, OutOfTime("still placing the replay shards"), restarts)
                    return driver
                driver.attach_replay(RemoteShards(shards))
            central = run.inference == "central"
            learner = _options(
                ray.remote(LearnerProcess),
                # Actors' inserts and central inference calls each wait in a thread.
                name=f"{prefix}-learner",
                # ... and each updater's put of a labelled batch (waiting for room) and weights ask.
                max_concurrency=run.actors * run.max_inflight + 8 + 2 * _updaters(program),
                num_cpus=run.learner_cpus,
                num_gpus=run.learner_gpus,
                resources=parse_resources(run.learner_resources, "--learner-resources"),
            ).remote(
                program,
                None if resume is None else resume["learner"],
                driver.counter.env_steps,
                run.torch_threads,
                [f"{prefix}-replay{i}" for i in range(len(shards))],
                central,
                driver.policy_state,
                _updaters(program),
            )
            handles.append(learner)
            driver.attach_learner(learner)
            # Env-only actors, unless the agent's actors search with the served network.
            env_only = central and not serves_network(program)
            actors = _start_actors(ray, program, driver, prefix, len(shards), env_only)
            handles += actors
            updaters = _start_updaters(ray, program, driver, prefix, len(shards))
            handles += updaters
            if not _wait_placed(ray, [*actors, learner, *shards, *updaters], last_start):
                _out_of_time(driver, OutOfTime("still placing the learner and actors"), restarts)
                return driver
            roles = _roles(learner, actors, shards, updaters)
            placement = _record_placement(ray, program, roles)
            loop = _Loop(ray, driver, roles, env_only, placement)
            try:
                loop.run()
                driver.finish(loop.learner_state())
            except LearnerDied:
                return restart_from_checkpoint(ray, driver, learner, loop.placement, restarts)
        return driver
    finally:
        for handle in handles:
            ray.kill(handle)


def _start_shards(ray: Any, program: Program, prefix: str) -> list[Any]:
    """The data path's table shards as Ray actors, placed by the replay_* settings."""
    run = program.run
    options = {
        # Inserts that wait beside the learner's (or updaters') samples, and the driver's watch.
        "max_concurrency": run.actors + 5 + _updaters(program),
        "num_cpus": run.replay_cpus,
        "memory": None if run.replay_memory_mb is None else run.replay_memory_mb * 2**20,
        "resources": parse_resources(run.replay_resources, "--replay-resources"),
        # A dead shard comes back with the newest checkpoint's snapshot (`TableProcess`); its
        # calls in flight fail rather than run twice.
        "max_restarts": -1,
        "max_task_retries": 0,
    }
    return [
        _options(ray.remote(TableProcess), name=f"{prefix}-replay{i}", **options).remote(
            program, run.replay_shards, i, str(program.checkpoint_dir.resolve())
        )
        for i in range(run.replay_shards)
    ]


def _start_actors(
    ray: Any, program: Program, driver: Driver, prefix: str, shards: int, central: bool
) -> list[Any]:
    run = program.run
    actor_class = _options(
        ray.remote(EnvActorProcess if central else ActorProcess),
        num_cpus=run.actor_cpus,
        memory=None if run.actor_memory_mb is None else run.actor_memory_mb * 2**20,
        resources=parse_resources(run.actor_resources, "--actor-resources"),
        max_restarts=-1,
        max_task_retries=0,
    )
    actors = []
    for i in range(run.actors):
        seed = driver.env_seed + 10_000 * i
        if central:
            actors.append(actor_class.remote(program, i, seed))
        else:
            table = f"{prefix}-replay{i % shards}" if shards else f"{prefix}-learner"
            actors.append(
                actor_class.remote(
                    program,
                    i,
                    seed,
                    table,
                    f"{prefix}-learner",
                    driver.policy_state,
                    driver.counter.env_steps,
                )
            )
    return actors


def _start_updaters(
    ray: Any, program: Program, driver: Driver, prefix: str, shards: int
) -> list[Any]:
    """The agent's updater processes (`Agent.updaters`), placed and restarted as actors are."""
    run = program.run
    updater_class = _options(
        ray.remote(UpdaterProcess),
        num_cpus=run.actor_cpus,
        memory=None if run.actor_memory_mb is None else run.actor_memory_mb * 2**20,
        resources=parse_resources(run.actor_resources, "--actor-resources"),
        max_restarts=-1,
        max_task_retries=0,
        max_concurrency=2,  # its labelling loop, and the driver's pings
    )
    return [
        updater_class.remote(
            program,
            i,
            program.seed + 104_729 * (i + 1),
            [f"{prefix}-replay{j}" for j in range(shards)],
            f"{prefix}-learner",
            driver.counter.env_steps,
        )
        for i in range(_updaters(program))
    ]


def _options(remote_class: Any, **options: Any) -> Any:
    """`remote_class.options(**options)` with Ray's task events off. Each unroll, insert, weights
    fetch and learn call is a Ray task, and Ray's GCS keeps the events of the newest 100,000
    (`RAY_task_events_max_num_task_in_gcs`): hundreds of MB, filled over the first quarter hour
    of a run (the 1-hour soak, `benchmarks/soak.py`, saw it as growth), for a dashboard's task
    list that nobody reads at that rate. Failures still arrive as exceptions."""
    try:
        return remote_class.options(enable_task_events=False, **options)
    except ValueError:  # a Ray without the option (it came in 2.2x)
        return remote_class.options(**options)


def _roles(
    learner: Any, actors: list[Any], shards: list[Any], updaters: Sequence[Any] = ()
) -> dict[str, Any]:
    """Each role's handle by its name in ray_actors.json: learner, actorI, replayI, updaterI."""
    roles = {"learner": learner, **{f"actor{i}": a for i, a in enumerate(actors)}}
    roles |= {f"replay{i}": shard for i, shard in enumerate(shards)}
    return roles | {f"updater{i}": updater for i, updater in enumerate(updaters)}


def _kind(role: str) -> str:
    """'actor' for actor3, 'replay' for replay1: what its restarts are counted as."""
    return role.rstrip("0123456789")


def _record_placement(ray: Any, program: Program, roles: dict[str, Any]) -> dict[str, Any]:
    """Write where each role runs (process id, Ray node) to the run directory; return it."""
    where = ray.get([handle.where.remote() for handle in roles.values()])
    addresses = node_addresses(ray)
    placement = {
        role: {"pid": pid, "node_id": node, "address": addresses.get(node)}
        for role, (pid, node) in zip(roles, where, strict=True)
    }
    _write_placement(program, placement)
    return placement


def _write_placement(program: Program, placement: dict[str, Any]) -> None:
    write_atomically(program.run_dir / PLACEMENT_FILE, json.dumps(placement, indent=2))


def _wait_placed(ray: Any, handles: list[Any], deadline: float | None = None) -> bool:
    """Wait until Ray has placed and started `handles`: True once it has, False if
    `deadline` (a `time.time()`: where --max-time leaves no time to train) came first. A
    ShoalError after `PLACEMENT_TIMEOUT_S`: the cluster lacks the resources asked for."""
    timeout = PLACEMENT_TIMEOUT_S
    if deadline is not None:
        timeout = min(timeout, max(0.0, deadline - time.time()))
    _, pending = ray.wait(
        [h.__ray_ready__.remote() for h in handles],
        num_returns=len(handles),
        timeout=timeout,
    )
    if pending and timeout < PLACEMENT_TIMEOUT_S:
        return False
    if pending:
        raise ShoalError(
            f"Ray could not place {len(pending)} of the learner, actors and replay shards within "
            f"{PLACEMENT_TIMEOUT_S:.0f} s: the cluster has {ray.available_resources()} free. "
            "Lower --actors or --actor-cpus, or add nodes with the resources named in "
            "--actor-resources / --learner-resources / --replay-resources."
        )
    return True


class _Loop:
    """The driver's side: keep actors and the learner busy, count what they report, and see
    restarted actors and replay shards back in."""

    def __init__(
        self,
        ray: Any,
        driver: Driver,
        roles: dict[str, Any],
        central: bool,
        placement: dict[str, Any],
    ):
        self.ray, self.driver, self.roles, self.central = ray, driver, roles, central
        self.learner = roles["learner"]
        self.actors = [handle for role, handle in roles.items() if _kind(role) == "actor"]
        self.shards = [handle for role, handle in roles.items() if _kind(role) == "replay"]
        self.updaters = [handle for role, handle in roles.items() if _kind(role) == "updater"]
        self.updating: dict[Any, int] = {}  # each updater's labelling call -> its index
        self.placement = placement  # ray_actors.json's roles, kept current after restarts
        # Roles with a failed call whose process has not answered a ping (`where`) since. Every
        # call in flight to a dead process fails, some after the new process is up: a restart is
        # counted when a ping answers from a process id not seen before for that role.
        self.down: set[str] = set()
        self.pings: dict[Any, str] = {}
        self.died = died(ray)
        self.calls: dict[Any, int] = {}  # in-flight actor call -> actor index
        self.watches: dict[Any, int] = {}  # each live shard's watch call -> shard index
        self.held = [(0, 0)] * len(self.shards)  # each shard's (inserted, held), last heard
        run, path = driver.program.run, driver.program.data_path()
        self.outages = Outages(
            ray,
            driver,
            placement,
            [role for role in roles if role != "learner"],
            # A central env actor's half-made unroll is the server's, which drops it.
            0 if central else path.unroll_length * run.num_envs,
        )

    def request(self, actor: int) -> None:
        handle = self.actors[actor]
        call = handle.run.remote(self.learner) if self.central else handle.collect.remote()
        self.calls[call] = actor

    def watch(self, shard: int) -> None:
        self.watches[self.shards[shard].watch.remote(WATCH_S)] = shard

    def update(self, updater: int) -> None:
        self.updating[self.updaters[updater].run.remote()] = updater

    def updater_ended(self, ref: Any) -> None:
        """An updater's labelling call returned: it died (sent again: queued until Ray has
        restarted it), or failed (the error ends the run, as the learner's would)."""
        updater = self.updating.pop(ref)
        try:
            self.ray.get(ref)
        except self.died:
            self.went_down(f"updater{updater}")
        self.update(updater)

    def run(self) -> None:
        ray, driver = self.ray, self.driver
        per_actor = 1 if self.central else driver.program.run.max_inflight
        for actor in range(len(self.actors)):
            for _ in range(per_actor):
                self.request(actor)
        for shard in range(len(self.shards)):
            self.watch(shard)
        for updater in range(len(self.updaters)):
            self.update(updater)
        learning = self.learner.learn.remote(driver.counter.time_progress())
        while not driver.should_stop():
            waiting = [learning, *self.calls, *self.pings, *self.watches, *self.updating]
            ready, _ = ray.wait(waiting, num_returns=1, timeout=WAIT_S)
            for ref in ready:
                if ref == learning:
                    self.learned(self.from_learner(ref))
                    learning = self.learner.learn.remote(driver.counter.time_progress())
                elif ref in self.pings:
                    self.answered(ref)
                elif ref in self.watches:
                    self.watched(ref)
                elif ref in self.updating:
                    self.updater_ended(ref)
                else:
                    self.acted(ref)
        self.see_restarts_back()

    def see_restarts_back(self) -> None:
        """The run is over with roles down: wait up to `RESTART_WAIT_S` for those Ray is
        restarting on a live node, so `actor_restarts` and `replay_restarts` count every restart
        the run caused. Roles of a dead node wait for a node to join, and are not waited for;
        nor is any after Ctrl-C or SIGTERM, whose grace period is the checkpoint's."""
        if self.driver.stop_requested:
            return
        dead_nodes = self.outages.dead_nodes

        def restarting() -> list[Any]:
            return [
                ref
                for ref, role in self.pings.items()
                if self.placement[role]["node_id"] not in dead_nodes
            ]

        if not restarting():
            return
        names = ", ".join(sorted({self.pings[ref] for ref in restarting()}))
        self.driver.console.print(
            f"The run is done; waiting up to {RESTART_WAIT_S:.0f} s for {names}, which Ray is "
            "starting again, so the summary counts the restart."
        )
        deadline = time.monotonic() + RESTART_WAIT_S
        while (refs := restarting()) and (left := deadline - time.monotonic()) > 0:
            ready, _ = self.ray.wait(refs, num_returns=1, timeout=left)
            for ref in ready:
                self.answered(ref)

    def went_down(self, role: str, in_flight: int = 0) -> None:
        """`role`'s call failed; `in_flight`: its other calls still out, lost with it."""
        if role not in self.down:  # Ray restarts the process; the ping says when
            self.down.add(role)
            self.outages.down(role, in_flight)
            self.ping(role)

    def ping(self, role: str) -> None:
        self.pings[self.roles[role].where.remote()] = role

    def answered(self, ref: Any) -> None:
        """A restarted role's ping: it is back; record where its new process runs."""
        role = self.pings.pop(ref)
        try:
            pid, node = self.ray.get(ref)
        except self.died:
            self.ping(role)  # still restarting
            return
        self.down.discard(role)
        kind = _kind(role)
        restarted = self.placement[role]["pid"] != pid
        self.outages.back(role, pid, node)  # and into the placement
        if restarted:
            self.driver.count(f"{kind}_restarts")
            _write_placement(self.driver.program, self.placement)
            if kind == "replay":
                self.replay_back(int(role[len(kind) :]))
        if kind == "replay":
            self.watch(int(role[len(kind) :]))

    def watched(self, ref: Any) -> None:
        shard = self.watches.pop(ref)
        try:
            self.held[shard] = self.ray.get(ref)
        except self.died:
            self.went_down(f"replay{shard}")  # watched again once its ping answers
            return
        self.watch(shard)

    def replay_back(self, shard: int) -> None:
        """Say in one line and in the metrics what a restarted shard came back with and lost:
        the items it held that its snapshot does not (inserted since, as last heard)."""
        try:
            recovered = self.ray.get(self.shards[shard].recovery.remote())
        except self.died:
            recovered = {"steps": None, "items": "it died again", "inserted": 0}
        inserted, held = self.held[shard]
        lost = max(0, min(held, inserted - recovered["inserted"]))
        items = recovered["items"]
        self.held[shard] = (recovered["inserted"], items if isinstance(items, int) else 0)
        self.driver.count("replay_items_lost", lost)
        if isinstance(items, int):
            back = f"{items} items restored from the checkpoint at {recovered['steps']} steps"
        else:
            back = f"it starts empty ({items})"
        self.driver.console.print(
            f"replay shard {shard} was restarted after its process died: {back}; about {lost} "
            "items it held are lost."
        )

    def from_learner(self, ref: Any) -> Any:
        """The learner's answer; a dead learner's is `LearnerDied` (`ray_supervision`)."""
        try:
            return self.ray.get(ref)
        except self.died:
            self.settle()
            raise LearnerDied from None

    def settle(self, seconds: float = 2.0) -> None:
        """Take the answers of calls that failed with the learner (actors asking it for weights),
        so Ray does not log each as an unhandled error and the run's end says one thing."""
        calls = [*self.calls, *self.pings, *self.watches]
        ready, _ = self.ray.wait(calls, num_returns=len(calls), timeout=seconds)
        for ref in ready:
            with contextlib.suppress(self.ray.exceptions.RayError):
                self.ray.get(ref)  # what ended the run is said once, by the caller

    def learner_state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.from_learner(self.learner.state_dict.remote())
        return state

    def learned(self, result: tuple[Any, ...]) -> None:
        updates, metrics, lag, stats = result
        for item in stats:  # central inference: unrolls the server finished
            self.driver.add_experience(item)
        if updates:
            self.driver.after_update(lambda: metrics, lag, self.learner_state, updates)

    def acted(self, ref: Any) -> None:
        actor = self.calls.pop(ref)
        try:
            result = self.ray.get(ref)
            if not self.central:  # an env actor's loop returns no counts: the server has them
                self.driver.add_experience(result)
        except self.died:
            # This unroll and the others asked of the actor before it went down are lost.
            self.went_down(f"actor{actor}", 1 + sum(a == actor for a in self.calls.values()))
        # Sent again at once: queued until a restarted actor is back, while the others go on.
        # (A central env actor's loop ends only when it dies; the new one reconnects.)
        self.request(actor)
