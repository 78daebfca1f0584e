"""The ray launcher: the learner and N actors as Ray actors, on a local Ray or a cluster.

Data rules (DESIGN.md, from the peers' measurements): one remote call carries a whole `[T, E]`
unroll; weights are published once per learner version as numpy arrays (`ray.put` once, actors
fetch the reference only when the version is newer than theirs); unrolls go from actors to the
learner through the object store, and the driver sees only small episode statistics; each actor
has at most `max_inflight` unroll requests outstanding. Actors restart after a crash
(`max_restarts=-1`); their failed requests are counted and re-sent, and the learner never waits
on a dead actor. On-policy agents (PPO) collect one unroll from every live actor with the same
weights, then update; off-policy agents (IMPALA) update on unrolls as they arrive.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import torch

from shoal.agents.base import Transitions, combine, env_steps
from shoal.config import write_atomically
from shoal.envs.registry import make_vector_env
from shoal.errors import ConfigError, ShoalError
from shoal.runtime.central import EnvStep
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.counter import Counter
from shoal.runtime.driver import Driver
from shoal.runtime.program import Program
from shoal.runtime.ray_central import CentralLearning, EnvActorProcess, run_central_loop
from shoal.runtime.replay_service import ReplayShard, ShardedReplay

PLACEMENT_TIMEOUT_S = 120.0


class ActorProcess:
    """Steps `num_envs` environments with the newest weights it has been sent."""

    def __init__(self, program: Program, index: int, seed: int, replay_shard: Any = None) -> None:
        torch.set_num_threads(1)
        self.replay_shard = replay_shard  # replay agents: where this actor inserts
        torch.manual_seed(seed)
        agent, config = program.agent, program.agent_config
        net = agent.make_networks(program.spec, config)
        self.policy = agent.make_policy(program.spec, config, net, seed)
        set_index = getattr(self.policy, "set_actor_index", None)
        if set_index is not None:
            set_index(index, program.run.actors)
        env = make_vector_env(
            program.env_source, program.spec, program.env_config, program.run.num_envs, seed
        )
        self.collector = UnrollCollector(env, self.policy, agent.unroll_length(config))

    def where(self) -> tuple[int, str]:
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()

    def collect(self, published: list) -> tuple[Any, tuple]:
        # `published` is [(version, weights_ref)] inside a list, so Ray does not fetch the
        # weights before the call: they are fetched only when newer than the ones in use.
        import ray

        version, weights_ref = published[0]
        if version > self.policy.version:
            weights = {k: torch.from_numpy(v.copy()) for k, v in ray.get(weights_ref).items()}
            self.policy.load_weights(weights, version)
        unroll = self.collector.collect_for_learner()
        if self.replay_shard is not None and isinstance(unroll, Transitions):
            # Ape-X: transitions go straight to replay; the learner hears only the counts.
            # Waiting for the insert bounds what this actor has in flight.
            if unroll.count:
                ray.get(self.replay_shard.add.remote(unroll.data))
            unroll = unroll.receipt()
        returns, lengths = self.collector.drain_episodes()
        stats = (returns, lengths, env_steps(unroll), unroll.behaviour_version)
        return unroll, stats


class LearnerProcess:
    """Owns the learner; updates on unrolls fetched from the object store."""

    def __init__(
        self, program: Program, state: dict | None, threads: int, replay_shards: list | None
    ) -> None:
        torch.set_num_threads(threads)
        torch.manual_seed(program.seed)
        agent = program.agent
        device = program.learner_device(shares_network_with_actor=False)
        net = agent.make_networks(program.spec, program.agent_config).to(device)
        self.learner = agent.make_learner(program.spec, program.agent_config, net)
        if replay_shards:
            self.learner.replay = ShardedReplay(replay_shards)
        if state is not None:
            self.learner.load_state_dict(state)
        self.central = None  # central inference: the server lives here, next to the learner
        if program.run.inference == "central":
            self.central = CentralLearning(program, self.learner, device, replay_shards or [])

    def step(self, message: EnvStep) -> np.ndarray | None:
        """Central inference: an env actor's call for actions."""
        assert self.central is not None
        return self.central.step(message)

    def central_update(self, batch: int, progress: float) -> tuple | None:
        assert self.central is not None
        return self.central.update(batch, progress)

    def update(self, unroll_refs: list, progress: float) -> tuple[dict, int, float]:
        import ray

        unrolls = ray.get(unroll_refs)
        lag = self.learner.version - min(u.behaviour_version for u in unrolls)
        metrics = self.learner.update(combine(unrolls), progress)
        return metrics, self.learner.version, float(lag)

    def weights(self) -> dict[str, np.ndarray]:
        return {k: v.cpu().numpy() for k, v in self.learner.weights().items()}

    def version(self) -> int:
        return self.learner.version

    def where(self) -> tuple[int, str]:
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()

    def state_dict(self) -> dict:
        return self.learner.state_dict()


def parse_resources(text: str | None, flag: str) -> dict[str, float]:
    """'a=1,b=0.5' -> {'a': 1.0, 'b': 0.5}, or a ConfigError saying the format."""
    if not text:
        return {}
    out = {}
    for item in text.split(","):
        name, _, amount = item.partition("=")
        try:
            out[name.strip()] = float(amount)
        except ValueError:
            raise ConfigError(f"{flag} must look like 'name=1,other=0.5', got {text!r}.") from None
    return out


def run_ray(program: Program, resume: dict[str, Any] | None = None) -> Counter:
    import ray

    run = program.run
    torch.set_num_threads(run.torch_threads)
    started_here = not ray.is_initialized()
    if started_here:
        if run.address:
            ray.init(address=run.address, logging_level="ERROR", log_to_driver=False)
        else:
            # A local Ray counts logical CPUs: ask for at least what the roles reserve.
            # address="local" starts a new instance even if another Ray runs on this machine.
            wanted = run.learner_cpus + run.actors * run.actor_cpus
            if program.agent.make_replay is not None:
                wanted += run.replay_shards * run.replay_cpus
            ray.init(
                address="local",
                num_cpus=max(os.cpu_count() or 1, int(np.ceil(wanted))),
                include_dashboard=False,
                logging_level="ERROR",
                log_to_driver=False,
            )
    handles: list[Any] = []
    try:
        with Driver(program, resume) as driver:
            shards = _start_replay_shards(ray, program)
            handles += shards
            central = run.inference == "central"
            learner = (
                ray.remote(LearnerProcess)
                .options(
                    # Central inference: every env actor's call waits in a thread of its own.
                    max_concurrency=run.actors + 4 if central else 1,
                    num_cpus=run.learner_cpus,
                    num_gpus=run.learner_gpus,
                    resources=parse_resources(run.learner_resources, "--learner-resources"),
                )
                .remote(
                    program,
                    None if resume is None else resume["learner"],
                    run.torch_threads,
                    shards,
                )
            )
            handles.append(learner)
            actor_class = ray.remote(EnvActorProcess if central else ActorProcess).options(
                num_cpus=run.actor_cpus,
                memory=None if run.actor_memory_mb is None else run.actor_memory_mb * 2**20,
                resources=parse_resources(run.actor_resources, "--actor-resources"),
                max_restarts=-1,
                max_task_retries=0,
            )
            actors = [
                actor_class.remote(
                    program,
                    i,
                    driver.env_seed + 10_000 * i,
                    *([] if central else [shards[i % len(shards)] if shards else None]),
                )
                for i in range(run.actors)
            ]
            handles += actors
            _wait_placed(ray, [*actors, learner, *shards])
            _record_placement(ray, program, learner, actors, shards)
            if central:
                run_central_loop(ray, driver, learner, actors)
            else:
                loop = _Loop(ray, driver, learner, actors)
                loop.run(program.agent.on_policy, program.agent.batch_unrolls(program.agent_config))
            driver.checkpoint(ray.get(learner.state_dict.remote()))
    finally:
        for handle in handles:
            ray.kill(handle)
        if started_here:
            ray.shutdown()
    return driver.counter


def _start_replay_shards(ray: Any, program: Program) -> list:
    """Replay agents' shards as Ray actors, placed by the replay_* settings; [] for others."""
    if program.agent.make_replay is None:
        return []
    run = program.run
    shard_class = ray.remote(ReplayShard).options(
        num_cpus=run.replay_cpus,
        memory=None if run.replay_memory_mb is None else run.replay_memory_mb * 2**20,
        resources=parse_resources(run.replay_resources, "--replay-resources"),
    )
    return [shard_class.remote(program, run.replay_shards) for _ in range(run.replay_shards)]


def _record_placement(ray: Any, program: Program, learner: Any, actors: list, shards: list) -> None:
    """Write where each role runs (process id, Ray node) to the run directory."""
    roles = {"learner": learner, **{f"actor{i}": a for i, a in enumerate(actors)}}
    roles |= {f"replay{i}": shard for i, shard in enumerate(shards)}
    where = ray.get([handle.where.remote() for handle in roles.values()])
    placement = {
        role: {"pid": pid, "node_id": node} for role, (pid, node) in zip(roles, where, strict=True)
    }
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
    """The driver's side of a ray run: hand out unroll requests, feed the learner."""

    def __init__(self, ray: Any, driver: Driver, learner: Any, actors: list) -> None:
        self.ray, self.driver, self.learner, self.actors = ray, driver, learner, actors
        self.published = [(ray.get(learner.version.remote()), learner.weights.remote())]
        self.inflight: dict[Any, tuple[int, Any]] = {}  # stats ref -> (actor, unroll ref)
        self.died = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)
        # On-policy rounds go on without a failed actor; off-policy requests are re-sent.
        self.resend_failed = True

    def request(self, actor: int) -> None:
        unroll_ref, stats_ref = (
            self.actors[actor].collect.options(num_returns=2).remote(self.published)
        )
        self.inflight[stats_ref] = (actor, unroll_ref)

    def finished(self, timeout: float) -> tuple[int, Any, tuple] | None:
        """The next finished request (actor, unroll ref, stats); None on timeout or failure."""
        ready, _ = self.ray.wait(list(self.inflight), num_returns=1, timeout=timeout)
        if not ready:
            return None
        actor, unroll_ref = self.inflight.pop(ready[0])
        try:
            return actor, unroll_ref, self.ray.get(ready[0])
        except self.died:
            self.driver.count("actor_restarts")  # Ray restarts the process
            if self.resend_failed:
                self.request(actor)  # queued until the restart; the others keep feeding
            return None

    def learn(self, unroll_refs: list) -> None:
        progress = self.driver.counter.progress()
        metrics, version, lag = self.ray.get(self.learner.update.remote(unroll_refs, progress))
        self.published = [(version, self.learner.weights.remote())]
        self.driver.after_update(
            metrics, lag, lambda: self.ray.get(self.learner.state_dict.remote())
        )

    def run(self, on_policy: bool, batch: int) -> None:
        driver = self.driver
        if on_policy:
            self.resend_failed = False
            while not driver.should_stop():
                for actor in range(len(self.actors)):
                    self.request(actor)
                refs = []
                while self.inflight:
                    done = self.finished(timeout=1.0)
                    if done is not None:
                        refs.append(self._account(done))
                    if driver.should_stop() and not refs:
                        return
                if refs:
                    self.learn(refs)
            return
        for actor in range(len(self.actors)):
            for _ in range(driver.program.run.max_inflight):
                self.request(actor)
        pending: list = []
        while not driver.should_stop():
            done = self.finished(timeout=1.0)
            if done is None:
                continue
            pending.append(self._account(done))
            self.request(done[0])
            if len(pending) >= batch:
                self.learn(pending)
                pending = []

    def _account(self, done: tuple[int, Any, tuple]) -> Any:
        _, unroll_ref, (returns, lengths, steps, _) = done
        self.driver.add_experience(steps, returns, lengths)
        return unroll_ref
