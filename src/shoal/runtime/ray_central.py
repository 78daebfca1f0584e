"""Central inference on the ray launcher: env-only actors call the learner's inference server.

The learner's Ray actor is threaded: each env actor's `step` call runs in one of its threads
and waits there for its batch, while the driver's `update` calls consume the unrolls that the
server assembled in the same process (`shoal.runtime.central`). Env actors restart after a
crash and reconnect with a new session; the driver re-sends their loop.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from shoal.agents.base import Transitions, combine, env_steps
from shoal.envs.registry import make_vector_env
from shoal.runtime.central import CentralActing, EnvLoop, EnvStep
from shoal.runtime.driver import Driver
from shoal.runtime.program import Program

# How long one driver call waits for unrolls before it returns to look after the actors.
TAKE_TIMEOUT_S = 1.0


class EnvActorProcess:
    """Steps `num_envs` environments with actions from the learner's inference server."""

    def __init__(self, program: Program, index: int, seed: int) -> None:
        torch.set_num_threads(1)
        env = make_vector_env(
            program.env_source, program.spec, program.env_config, program.run.num_envs, seed
        )
        self.loop = EnvLoop(env, index)

    def run(self, learner: Any) -> int:
        import ray

        return self.loop.run(lambda message: ray.get(learner.step.remote(message)))

    def where(self) -> tuple[int, str]:
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()


class CentralLearning:
    """The learner process's side: the server, and updates on the unrolls it assembled."""

    def __init__(self, program: Program, learner: Any, device: torch.device, shards: list):
        agent, config = program.agent, program.agent_config
        self.learner, self.shards = learner, shards
        net = agent.make_networks(program.spec, config).to(device)
        self.hub = CentralActing(program, net, program.run.queue_capacity)
        self.hub.publish(learner.version, learner.weights())
        self._pending: list[tuple[Any, list[float], list[int]]] = []
        self._inserted = 0

    def step(self, message: EnvStep) -> Any:
        return self.hub.step(message)

    def update(self, batch: int, progress: float) -> tuple[dict, float, tuple] | None:
        """Update once `batch` unrolls arrived; None if they did not within the timeout."""
        while len(self._pending) < batch:
            item = self.hub.take(TAKE_TIMEOUT_S)
            if item is None:
                return None
            self._pending.append(item)
        taken, self._pending = self._pending[:batch], self._pending[batch:]
        unrolls = [self._to_replay(unroll) for unroll, _, _ in taken]
        lag = self.learner.version - min(u.behaviour_version for u in unrolls)
        metrics = self.learner.update(combine(unrolls), progress)
        self.hub.publish(self.learner.version, self.learner.weights())
        metrics |= self.hub.metrics()
        returns = [r for _, rs, _ in taken for r in rs]
        lengths = [n for _, _, ns in taken for n in ns]
        stats = (sum(env_steps(u) for u in unrolls), returns, lengths)
        return metrics, float(lag), stats

    def _to_replay(self, item: Any) -> Any:
        """Replay agents with shards: insert here, hand the learner the receipt."""
        if not self.shards or not isinstance(item, Transitions) or item.data is None:
            return item
        import ray

        if item.count:
            shard = self.shards[self._inserted % len(self.shards)]
            ray.get(shard.add.remote(item.data))
            self._inserted += 1
        return item.receipt()

    def stop(self) -> None:
        self.hub.stop()


def run_central_loop(ray: Any, driver: Driver, learner: Any, actors: list) -> None:
    """The driver's side: keep every env actor's loop running, feed the learner."""
    program = driver.program
    agent, run = program.agent, program.run
    batch = run.actors if agent.on_policy else agent.batch_unrolls(program.agent_config)
    died = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)
    loops = {actor.run.remote(learner): i for i, actor in enumerate(actors)}
    while not driver.should_stop():
        done = ray.get(learner.central_update.remote(batch, driver.counter.progress()))
        if done is not None:
            metrics, lag, (steps, returns, lengths) = done
            driver.add_experience(steps, returns, lengths)
            driver.after_update(metrics, lag, lambda: ray.get(learner.state_dict.remote()))
        finished, _ = ray.wait(list(loops), num_returns=len(loops), timeout=0)
        for ref in finished:
            index = loops.pop(ref)
            try:
                ray.get(ref)  # a loop ends on its own only when the server stops it
            except died:
                driver.count("actor_restarts")  # Ray restarts the process; it reconnects
            loops[actors[index].run.remote(learner)] = index
