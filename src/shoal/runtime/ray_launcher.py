"""The ray launcher: the learner, actors and table shards as Ray actors, local or on a cluster.

It only decides placement; the parts are those of every launcher (`shoal.runtime.ray_processes`).
The driver (this process) keeps each actor busy with `max_inflight` unroll requests (or, with
central inference, each env-only actor's loop running), keeps one learn call of the learner in
flight, and counts, logs and checkpoints what they report. Acting and learning wait for each
other only through the data path's tables, exactly as inline. Actors restart after a crash
(`max_restarts=-1`); their failed requests are counted and sent again, and the learner never
waits on a dead actor (an on-policy batch waits for the restarted actor's unroll instead).
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import numpy as np
import torch

from shoal.config import write_atomically
from shoal.errors import ShoalError
from shoal.runtime.config import parse_resources
from shoal.runtime.counter import Counter
from shoal.runtime.driver import Driver
from shoal.runtime.program import Program
from shoal.runtime.ray_processes import (
    ActorProcess,
    EnvActorProcess,
    LearnerProcess,
)
from shoal.runtime.tables import TableProcess

PLACEMENT_TIMEOUT_S = 120.0
WAIT_S = 1.0  # the driver looks at the stop conditions at least this often


def run_ray(program: Program, resume: dict[str, Any] | None = None) -> Counter:
    import ray

    run = program.run
    torch.set_num_threads(run.torch_threads)
    sharded = program.data_path().sharded
    started_here = not ray.is_initialized()
    if started_here:
        if run.address:
            ray.init(address=run.address, logging_level="ERROR", log_to_driver=False)
        else:
            # A local Ray counts logical CPUs: ask for at least what the roles reserve.
            # address="local" starts a new instance even if another Ray runs on this machine.
            wanted = run.learner_cpus + run.actors * run.actor_cpus
            if sharded:
                wanted += run.replay_shards * run.replay_cpus
            ray.init(
                address="local",
                num_cpus=max(os.cpu_count() or 1, int(np.ceil(wanted))),
                include_dashboard=False,
                logging_level="ERROR",
                log_to_driver=False,
            )
    handles: list[Any] = []
    prefix = f"shoal-{uuid.uuid4().hex[:12]}"  # actors find each other by these names
    try:
        with Driver(program, resume) as driver:
            shards = _start_shards(ray, program, prefix) if sharded else []
            handles += shards
            central = run.inference == "central"
            learner = (
                ray.remote(LearnerProcess)
                .options(
                    # Actors' inserts and central inference calls each wait in a thread.
                    name=f"{prefix}-learner",
                    max_concurrency=run.actors * run.max_inflight + 8,
                    num_cpus=run.learner_cpus,
                    num_gpus=run.learner_gpus,
                    resources=parse_resources(run.learner_resources, "--learner-resources"),
                )
                .remote(
                    program,
                    None if resume is None else resume["learner"],
                    driver.counter.env_steps,
                    run.torch_threads,
                    [f"{prefix}-replay{i}" for i in range(len(shards))],
                    central,
                    driver.policy_state,
                )
            )
            handles.append(learner)
            actors = _start_actors(ray, program, driver, prefix, len(shards), central)
            handles += actors
            _wait_placed(ray, [*actors, learner, *shards])
            placement = _record_placement(ray, program, learner, actors, shards)
            _Loop(ray, driver, learner, actors, central, placement).run()
            driver.checkpoint(ray.get(learner.state_dict.remote()))
    finally:
        for handle in handles:
            ray.kill(handle)
        if started_here:
            ray.shutdown()
    return driver.counter


def _start_shards(ray: Any, program: Program, prefix: str) -> list:
    """The data path's table shards as Ray actors, placed by the replay_* settings."""
    run = program.run
    options = {
        "max_concurrency": run.actors + 4,  # inserts that wait beside the learner's samples
        "num_cpus": run.replay_cpus,
        "memory": None if run.replay_memory_mb is None else run.replay_memory_mb * 2**20,
        "resources": parse_resources(run.replay_resources, "--replay-resources"),
    }
    return [
        ray.remote(TableProcess)
        .options(name=f"{prefix}-replay{i}", **options)
        .remote(program, run.replay_shards, i)
        for i in range(run.replay_shards)
    ]


def _start_actors(
    ray: Any, program: Program, driver: Driver, prefix: str, shards: int, central: bool
) -> list:
    run = program.run
    actor_class = ray.remote(EnvActorProcess if central else ActorProcess).options(
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
                    program, i, seed, table, f"{prefix}-learner", driver.policy_state
                )
            )
    return actors


def _record_placement(ray: Any, program: Program, learner: Any, actors: list, shards: list) -> dict:
    """Write where each role runs (process id, Ray node) to the run directory; return it."""
    roles = {"learner": learner, **{f"actor{i}": a for i, a in enumerate(actors)}}
    roles |= {f"replay{i}": shard for i, shard in enumerate(shards)}
    where = ray.get([handle.where.remote() for handle in roles.values()])
    placement = {
        role: {"pid": pid, "node_id": node} for role, (pid, node) in zip(roles, where, strict=True)
    }
    _write_placement(program, placement)
    return placement


def _write_placement(program: Program, placement: dict) -> None:
    write_atomically(program.run_dir / "ray_actors.json", json.dumps(placement, indent=2))


def _wait_placed(ray: Any, handles: list) -> None:
    _, pending = ray.wait(
        [h.__ray_ready__.remote() for h in handles],
        num_returns=len(handles),
        timeout=PLACEMENT_TIMEOUT_S,
    )
    if pending:
        raise ShoalError(
            f"Ray could not place {len(pending)} of the learner, actors and replay shards within "
            f"{PLACEMENT_TIMEOUT_S:.0f} s: the cluster has {ray.available_resources()} free. "
            "Lower --actors or --actor-cpus, or add nodes with the resources named in "
            "--actor-resources / --learner-resources / --replay-resources."
        )


class _Loop:
    """The driver's side: keep actors and the learner busy, count what they report."""

    def __init__(
        self,
        ray: Any,
        driver: Driver,
        learner: Any,
        actors: list,
        central: bool,
        placement: dict,
    ):
        self.ray, self.driver, self.learner, self.actors = ray, driver, learner, actors
        self.central = central
        self.placement = placement  # ray_actors.json's roles, kept current after restarts
        # Actors with a failed call whose process has not answered a ping (`where`) since. Every
        # call in flight to a dead process fails, some after the new process is up: a restart is
        # counted when a ping answers from a process id not seen before for that actor.
        self.down: set[int] = set()
        self.pings: dict[Any, int] = {}
        self.died = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)
        self.calls: dict[Any, int] = {}  # in-flight actor call -> actor index

    def request(self, actor: int) -> None:
        handle = self.actors[actor]
        call = handle.run.remote(self.learner) if self.central else handle.collect.remote()
        self.calls[call] = actor

    def run(self) -> None:
        ray, driver = self.ray, self.driver
        per_actor = 1 if self.central else driver.program.run.max_inflight
        for actor in range(len(self.actors)):
            for _ in range(per_actor):
                self.request(actor)
        learning = self.learner.learn.remote(driver.counter.time_progress())
        while not driver.should_stop():
            waiting = [learning, *self.calls, *self.pings]
            ready, _ = ray.wait(waiting, num_returns=1, timeout=WAIT_S)
            for ref in ready:
                if ref == learning:
                    self.learned(ray.get(ref))
                    learning = self.learner.learn.remote(driver.counter.time_progress())
                elif ref in self.pings:
                    self.answered(ref)
                else:
                    self.acted(ref)

    def ping(self, actor: int) -> None:
        self.pings[self.actors[actor].where.remote()] = actor

    def answered(self, ref: Any) -> None:
        """A restarted actor's ping: it is back; record where its new process runs."""
        actor = self.pings.pop(ref)
        try:
            pid, node = self.ray.get(ref)
        except self.died:
            self.ping(actor)  # still restarting
            return
        self.down.discard(actor)
        role = f"actor{actor}"
        if self.placement[role]["pid"] != pid:
            self.driver.count("actor_restarts")
            self.placement[role] = {"pid": pid, "node_id": node}
            _write_placement(self.driver.program, self.placement)

    def learned(self, result: tuple) -> None:
        updates, metrics, lag, stats = result
        for item in stats:  # central inference: unrolls the server finished
            self.driver.add_experience(item)
        if updates:
            self.driver.after_update(
                lambda: metrics,
                lag,
                lambda: self.ray.get(self.learner.state_dict.remote()),
                updates,
            )

    def acted(self, ref: Any) -> None:
        actor = self.calls.pop(ref)
        try:
            result = self.ray.get(ref)
            if not self.central:  # an env actor's loop returns no counts: the server has them
                self.driver.add_experience(result)
        except self.died:
            if actor not in self.down:  # Ray restarts the process; the ping says when
                self.down.add(actor)
                self.ping(actor)
        # Sent again at once: queued until a restarted actor is back, while the others go on.
        # (A central env actor's loop ends only when it dies; the new one reconnects.)
        self.request(actor)
