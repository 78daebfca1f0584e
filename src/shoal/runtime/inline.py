"""The inline launcher: the whole program in this process.

On-policy agents (PPO) act and learn in turn, deterministically under a seed: torch's generator,
the policy's sampler and env i's seed (seed + i) all derive from it, and metrics rows are written
at step counts, not on a clock. Off-policy agents (IMPALA) overlap: an actor thread fills a
bounded queue of unrolls with its own copy of the network, and picks up each new version of the
weights the learner publishes; the queue's capacity bounds the policy lag. Thread timing makes
overlapped runs not bit-reproducible; set `run.overlap=false` for that.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

import torch

from shoal.agents.base import Transitions, Unroll, combine, env_steps
from shoal.envs.registry import make_vector_env
from shoal.runtime.central import CentralActing, EnvLoop
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.counter import Counter
from shoal.runtime.driver import TIMING_KEYS, Driver
from shoal.runtime.program import Program

__all__ = ["TIMING_KEYS", "run_inline"]

# What the actor thread queues: an unroll (or its transitions) and the episodes that ended.
Item = tuple[Unroll | Transitions, list[float], list[int]]


def run_inline(program: Program, resume: dict[str, Any] | None = None) -> Counter:
    """Train until a stop condition holds; write metrics and checkpoints to the run directory."""
    agent, config, run = program.agent, program.agent_config, program.run
    torch.set_num_threads(run.torch_threads)
    torch.manual_seed(program.seed)
    with Driver(program, resume) as driver:
        if run.inference == "central":
            _run_central(driver, program)
            return driver.counter
        overlap = program.overlaps
        device = program.learner_device(shares_network_with_actor=not overlap)
        net = agent.make_networks(program.spec, config).to(device)
        learner = agent.make_learner(program.spec, config, net)
        driver.restore(learner)
        # Acting in turn shares the learner's network; overlapping needs a copy of its own.
        actor_net = agent.make_networks(program.spec, config) if overlap else net
        policy = agent.make_policy(program.spec, config, actor_net, driver.env_seed)
        if overlap:
            policy.load_weights(learner.weights(), learner.version)
        env = make_vector_env(
            program.env_source, program.spec, program.env_config, run.num_envs, driver.env_seed
        )
        collector = UnrollCollector(env, policy, agent.unroll_length(config))
        try:
            if overlap:
                _overlapped(driver, collector, learner, agent.batch_unrolls(config))
            else:
                _in_turn(driver, collector, learner, policy)
            driver.checkpoint(learner.state_dict())
        finally:
            env.close()
    return driver.counter


def _in_turn(driver: Driver, collector: UnrollCollector, learner: Any, policy: Any) -> None:
    while not driver.should_stop():
        unroll = collector.collect_for_learner()
        driver.add_experience(env_steps(unroll), *collector.drain_episodes())
        metrics = learner.update(unroll, driver.counter.progress())
        policy.version = learner.version  # one shared network: only the version moves
        driver.after_update(metrics, 0, learner.state_dict)


class _ActorThread(threading.Thread):
    """Collects unrolls into a bounded queue, loading the newest published weights first."""

    def __init__(self, collector: UnrollCollector, capacity: int) -> None:
        super().__init__(name="shoal-actor", daemon=True)
        self.collector = collector
        self.unrolls: queue.Queue[Item] = queue.Queue(capacity)
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self._published: tuple[int, Any] | None = None
        self._lock = threading.Lock()

    def publish(self, version: int, weights: Any) -> None:
        with self._lock:
            self._published = (version, weights)

    def run(self) -> None:
        policy = self.collector.policy
        try:
            while not self.stopping.is_set():
                with self._lock:
                    published = self._published
                if published is not None and published[0] > policy.version:
                    policy.load_weights(published[1], published[0])
                item = (self.collector.collect_for_learner(), *self.collector.drain_episodes())
                while not self.stopping.is_set():
                    try:
                        self.unrolls.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except BaseException as err:  # surfaced in the learner's thread
            self.error = err

    def take(self) -> Item:
        while True:
            try:
                return self.unrolls.get(timeout=0.1)
            except queue.Empty:
                if self.error is not None:
                    raise self.error from None
                if not self.is_alive():
                    raise RuntimeError("the actor thread stopped without an error") from None


def _overlapped(driver: Driver, collector: UnrollCollector, learner: Any, batch: int) -> None:
    actor = _ActorThread(collector, driver.program.run.queue_capacity)
    actor.start()
    try:
        _learn_from(driver, actor, learner, batch)
    finally:
        actor.stopping.set()
        actor.join(timeout=30)


def _learn_from(driver: Driver, source: Any, learner: Any, batch: int) -> None:
    """Update on `batch` items at a time from `source.take()`; publish each new version."""
    report = getattr(source, "metrics", None)  # central inference: server and actor figures
    while not driver.should_stop():
        unrolls = []
        for _ in range(batch):
            unroll, returns, lengths = source.take()
            driver.add_experience(env_steps(unroll), returns, lengths)
            unrolls.append(unroll)
        lag = learner.version - min(u.behaviour_version for u in unrolls)
        metrics = learner.update(combine(unrolls), driver.counter.progress())
        source.publish(learner.version, learner.weights())
        if report is not None:
            metrics |= report()
        driver.after_update(metrics, lag, learner.state_dict)


def _run_central(driver: Driver, program: Program) -> None:
    """Central inference in one process: actor threads step envs, a server thread acts."""
    agent, config, run = program.agent, program.agent_config, program.run
    device = program.learner_device(shares_network_with_actor=False)
    learner = agent.make_learner(
        program.spec, config, agent.make_networks(program.spec, config).to(device)
    )
    driver.restore(learner)
    hub = CentralActing(
        program, agent.make_networks(program.spec, config).to(device), run.queue_capacity
    )
    hub.publish(learner.version, learner.weights())
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
        # On-policy: one unroll of every actor, all acted by the same weights, per update.
        batch = run.actors if agent.on_policy else agent.batch_unrolls(config)
        _learn_from(driver, hub, learner, batch)
        driver.checkpoint(learner.state_dict())
    finally:
        hub.stop()
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
        except BaseException as err:  # surfaced by the learner's next `take`
            if self.hub.failure is None:
                self.hub.failure = err
