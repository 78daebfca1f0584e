"""The inline launcher: the whole program in this process.

It only decides placement; the parts are the same for every agent (`Actor`, `LearnerLoop`,
`CentralActing` and the agent's data path):

- in turn (the data path's default for on-policy queues and replay): one unroll, then every
  update the table allows, deterministically under a seed (torch's generator, the policy's
  sampler and env i's seed `seed + i` all derive from it, and metrics rows are written at step
  counts, not on a clock), so how well a seed learns does not depend on how busy the machine
  is; on CPU actor and learner share one network, so no weights are copied;
- overlapped (`--overlap`, the default for off-policy unroll queues): an actor thread with
  its own copy of the network, taking the newest weights the learner publishes; the table makes
  each side wait for the other, so how much is learned per step does not depend on thread
  timing, though the runs are not bit-reproducible;
- a data path that asks for `--actors` actors inline (`DataPath.actors_inline`: A3C's gradient
  workers) gets that many, as threads when overlapped and in turn otherwise;
- central inference: env-only actor threads served by one inference server; for agents
  whose actors search (`Agent.central_inference == "network"`), `--actors` actor threads whose
  network calls that server serves (`central.ServedNetwork`).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch

from shoal.data import Table
from shoal.envs.registry import make_vector_env
from shoal.runtime.actor import Actor, ActorStats, build_actor
from shoal.runtime.callbacks import Callback
from shoal.runtime.central import CentralActing, EnvLoop, ServedNetwork, serves_network
from shoal.runtime.driver import TIMING_KEYS, Driver
from shoal.runtime.hooks import RunHook
from shoal.runtime.learning import LearnerLoop, WeightsBoard, build_learner
from shoal.runtime.program import Program
from shoal.runtime.snapshots import LocalTables

__all__ = ["TIMING_KEYS", "run_inline"]

WAIT_S = 0.05  # how long the learner waits for a batch before it looks at the stop conditions


def run_inline(
    program: Program,
    resume: dict[str, Any] | None = None,
    callbacks: Sequence[Callback] = (),
    started: float | None = None,
    hooks: Sequence[RunHook] = (),
) -> Driver:
    """Train until a stop condition holds, writing metrics and checkpoints to the run
    directory, then evaluate; the driver returned holds the counts and final evaluations.
    `hooks`: given the driver and the learner (`shoal tune`'s trials keep hold of them)."""
    run = program.run
    torch.set_num_threads(run.torch_threads)
    torch.manual_seed(program.seed)
    with Driver(program, resume, callbacks, started, hooks) as driver:
        if run.inference == "central":
            _central(driver, program)
        elif program.overlaps:
            _overlapped(driver, program)
        else:
            _in_turn(driver, program)
    return driver


def _in_turn(driver: Driver, program: Program) -> None:
    """One unroll, then every update the table allows. On CPU actor and learner share one
    network; a learner on a GPU publishes its weights to the actor's CPU copy each turn."""
    agent, config = program.agent, program.agent_config
    device = program.learner_device()
    net = agent.make_networks(program.spec, config).to(device)
    learner = agent.make_learner(program.spec, config, net)
    driver.restore(learner)
    table = _table(driver, program)
    shared = device.type == "cpu"
    board = None if shared else WeightsBoard()
    loop = LearnerLoop(learner, table, board, progress=_progress(driver))
    actors = _actors(driver, program, table, board, net if shared else None)
    try:
        while not driver.should_stop():
            for actor in actors:  # each in turn, when the data path asks for several
                if shared:  # one network: only the version moves
                    actor.acting.version = learner.version
                driver.add_experience(actor.run_unroll(block=False))
                while table.can_sample():
                    loop.try_update()
                    driver.after_update(loop.metrics, loop.lag, loop.state_dict)
        driver.finish(loop.state_dict())
    finally:
        for actor in actors:
            actor.close()


def _actors(
    driver: Driver,
    program: Program,
    table: Table,
    board: WeightsBoard | None,
    net: Any = None,
    hub: CentralActing | None = None,
) -> list[Actor]:
    """The layout's actors (one, unless the data path asks for `--actors`), actor i's envs
    seeded from `env_seed + 10_000 i` as on ray; `net`: the learner's, shared (in turn);
    `hub`: a central server whose network each actor's policy calls (`ServedNetwork`)."""
    served = (
        [ServedNetwork(hub.server.forward) for _ in range(program.layout.actors)] if hub else []
    )
    actors = [
        build_actor(
            program,
            i,
            driver.env_seed + 10_000 * i,
            table,
            weights=served[i] if served else board,
            net=served[i] if served else net,
            policy_state=driver.policy_state,
            stop=driver.should_stop,
            run_steps=driver.counter.env_steps,
        )
        for i in range(program.layout.actors)
    ]
    driver.acting_policies.extend(actor.acting.policy for actor in actors)
    return actors


def _table(driver: Driver, program: Program) -> Table:
    """The run's one table, holding the replay snapshot of the checkpoint being resumed."""
    table = program.data_path().make_table(1, program.seed)
    driver.attach_replay(LocalTables([table]))
    return table


def _progress(driver: Driver) -> Callable[[int], float]:
    """The budget used once the table has `steps` env steps (after those of a resumed run)."""
    start = driver.counter.env_steps
    return lambda steps: driver.counter.progress(start + steps)


class _Acting(Protocol):
    """Whatever acts beside the learner: an actor thread, or the central inference hub."""

    def drain(self) -> list[ActorStats]: ...


def _learn_beside(driver: Driver, loop: LearnerLoop, acting: _Acting) -> None:
    """Learn while `acting` acts elsewhere, counting what it reports, until a stop condition."""
    while not driver.should_stop():
        for stats in acting.drain():
            driver.add_experience(stats)
        if loop.try_update(WAIT_S):
            driver.after_update(loop.metrics, loop.lag, loop.state_dict)
    driver.finish(loop.state_dict())


class _ActorThread(threading.Thread):
    """Runs an `Actor` until stopped; its counts wait in a deque for the learner's thread."""

    def __init__(self, actor: Actor, name: str = "shoal-actor") -> None:
        super().__init__(name=name, daemon=True)
        self.actor = actor
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self._stats: deque[ActorStats] = deque()

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                stats = self.actor.run_unroll()
                if stats is None:  # the table closed: the run is over
                    return
                self._stats.append(stats)
        except BaseException as err:  # surfaced in the learner's thread
            self.error = err

    def drain(self) -> list[ActorStats]:
        if self.error is not None:
            raise self.error
        if not self.is_alive() and not self.stopping.is_set():
            raise RuntimeError("the actor thread stopped without an error")
        return [self._stats.popleft() for _ in range(len(self._stats))]


class _ActorThreads:
    """The actor threads beside the learner, drained together."""

    def __init__(self, actors: list[Actor]) -> None:
        self.threads = [_ActorThread(a, f"shoal-actor{i}") for i, a in enumerate(actors)]

    def drain(self) -> list[ActorStats]:
        return [stats for thread in self.threads for stats in thread.drain()]


def _overlapped(driver: Driver, program: Program) -> None:
    """Actor threads (one unless the data path asks for `--actors`), each with its own
    network; the learner in this thread."""
    learner = build_learner(program, program.learner_device())
    driver.restore(learner)
    table = _table(driver, program)
    board = WeightsBoard()
    loop = LearnerLoop(learner, table, board, progress=_progress(driver))
    _learn_beside_threads(driver, loop, _actors(driver, program, table, board), table)


def _learn_beside_threads(
    driver: Driver, loop: LearnerLoop, actors: list[Actor], table: Table, hub: Any = None
) -> None:
    """`actors` in threads while the learner learns in this one; then stop them (and the
    `hub` serving their network calls, if any)."""
    acting = _ActorThreads(actors)
    for thread in acting.threads:
        thread.start()
    try:
        _learn_beside(driver, loop, acting)
    finally:
        for thread in acting.threads:
            thread.stopping.set()
        if hub is not None:
            hub.stop()
        table.close()
        for thread in acting.threads:
            thread.join(timeout=30)
            thread.actor.close()


def _central(driver: Driver, program: Program) -> None:
    """Central inference in one process: actor threads step envs, a server thread acts (or,
    `serves_network`, actor threads act and the server thread runs their network calls)."""
    run = program.run
    device = program.learner_device()
    learner = build_learner(program, device)
    driver.restore(learner)
    table = _table(driver, program)
    board = WeightsBoard()
    net = program.agent.make_networks(program.spec, program.agent_config).to(device)
    hub = CentralActing(program, net, [table], board, driver.policy_state, driver.counter.env_steps)
    loop = LearnerLoop(learner, table, board, (hub.metrics,), _progress(driver))
    if serves_network(program):  # whole actors, their network calls served by the hub
        actors = _actors(driver, program, table, board, hub=hub)
        _learn_beside_threads(driver, loop, actors, table, hub)
        return
    driver.acting_policies.append(hub.acting.policy)
    envs = [
        make_vector_env(
            program.env_source,
            program.spec,
            program.env_config,
            run.num_envs,
            driver.env_seed + 10_000 * i,
        )
        for i in range(run.actors)
    ]
    threads = [_EnvThread(hub, EnvLoop(env, i)) for i, env in enumerate(envs)]
    for thread in threads:
        thread.start()
    try:
        _learn_beside(driver, loop, hub)
    finally:
        hub.stop()
        table.close()
        for thread in threads:
            thread.join(timeout=30)
        for env in envs:
            env.close()


class _EnvThread(threading.Thread):
    """Runs one env-only actor against the in-process server; its failure stops the run."""

    def __init__(self, hub: CentralActing, loop: EnvLoop) -> None:
        super().__init__(name=f"shoal-env-actor{loop.actor}", daemon=True)
        self.hub, self.loop = hub, loop

    def run(self) -> None:
        try:
            self.loop.run(self.hub.step)
        except BaseException as err:  # surfaced by the learner's next `drain`
            if self.hub.failure is None:
                self.hub.failure = err
