"""The Ray actors of a ray run: the learner's process, actor processes, env-only actors.

Each wraps the parts every launcher shares (`Actor`, `LearnerLoop`, `CentralActing`) and only
adds what crossing a process boundary needs: weights travel as numpy arrays through the object
store (`ray.put` once per published version; an actor fetches them only when newer than its
own), items travel to a table in another process (`RemoteTable`), and the learner's process is
a threaded Ray actor, so actors' inserts that wait for room, central inference calls that wait
for their batch, the learner's updates and checkpoints all go on side by side.
"""

from __future__ import annotations

import os
import time
from functools import partial
from typing import Any

import numpy as np
import torch

from shoal.agents.base import continue_from, learning_rates
from shoal.data import Inserter
from shoal.envs.registry import make_vector_env
from shoal.runtime.actor import ActorStats, build_actor
from shoal.runtime.central import CentralActing, EnvLoop, EnvStep, ServedNetwork, serves_network
from shoal.runtime.learning import LearnerLoop, WeightsBoard, build_learner
from shoal.runtime.program import Program
from shoal.runtime.ray_signals import die_on_sigterm
from shoal.runtime.tables import InsertOrder, RemoteTable, ShardedTables

LEARN_SECONDS = 0.1  # a driver's learn call returns after about this long with updates


def where() -> tuple[int, str]:
    import ray

    return os.getpid(), ray.get_runtime_context().get_node_id()


def _pack(weights: dict[str, torch.Tensor]) -> Any:
    import ray

    return ray.put({k: v.cpu().numpy() for k, v in weights.items()})


class RemoteWeights:
    """The learner's board, seen from another process."""

    def __init__(self, learner: Any) -> None:
        self.learner = learner

    def take(self, have: int) -> tuple[int, Any] | None:
        import ray

        published = ray.get(self.learner.published.remote(have))
        if published is None:
            return None
        version, [ref] = published
        return version, {k: torch.from_numpy(v.copy()) for k, v in ray.get(ref).items()}


class LearnerProcess:
    """The learner, its side of the data path and, with central inference, the server."""

    def __init__(
        self,
        program: Program,
        state: dict[str, Any] | None,
        steps: int,
        threads: int,
        shards: list[str],
        central: bool,
        policy_state: dict[str, Any] | None = None,
    ) -> None:
        """`steps`: env steps of the run so far (a resumed run's); `shards`: table shards' names;
        `policy_state`: the checkpointed policies' state (for the central server's policy)."""
        import ray

        die_on_sigterm()
        handles = [ray.get_actor(name) for name in shards]
        torch.set_num_threads(threads)
        torch.manual_seed(program.seed)
        device = program.learner_device()
        learner = build_learner(program, device)
        if state is not None:
            learner.load_state_dict(state)
        data_path = program.data_path()
        if handles:
            self.table: Any = ShardedTables(handles, data_path.merge_stats, program.seed)
        else:
            self.table = data_path.make_table(1, program.seed)
        self.hub = None
        sources: tuple[Any, ...] = ()
        if central:  # the server, in this process, takes the weights as tensors
            self.board = WeightsBoard()
            net = program.agent.make_networks(program.spec, program.agent_config).to(device)
            tables: list[Inserter] = [RemoteTable(shard) for shard in handles] or [self.table]
            self.hub = CentralActing(program, net, tables, self.board, policy_state, steps)
            sources = (self.hub.metrics,)
        else:  # actors in other processes fetch them from the object store
            self.board = WeightsBoard(pack=lambda weights: [_pack(weights)])
        self.order = InsertOrder()  # actors' inserts into the table held here
        self.time_progress = 0.0  # the driver's, at its last learn call
        total = program.run.total_steps

        def progress(table_steps: int) -> float:
            return min(1.0, max((steps + table_steps) / total, self.time_progress))

        self.loop = LearnerLoop(learner, self.table, self.board, sources, progress)

    # Actors' calls.

    def insert(
        self,
        items: Any,
        version: int,
        block: bool = True,
        steps: int = 0,
        order: tuple[int, int, int] | None = None,
    ) -> bool:
        """Items into the table held here (data paths whose tables live with the learner);
        `order`: see `InsertOrder`."""
        return self.order.apply(order, partial(self.table.insert, items, version, block, steps))

    def published(self, have: int) -> tuple[int, list[Any]] | None:
        return self.board.take(have)

    def step(self, message: EnvStep) -> np.ndarray | None:
        """Central inference: an env actor's call for actions."""
        assert self.hub is not None
        return self.hub.step(message)

    def forward(self, inputs: Any) -> tuple[Any, int]:
        """Central inference of the network: an actor's call of it (`ServedNetwork`)."""
        assert self.hub is not None
        return self.hub.server.forward(inputs)

    # The driver's calls.

    def learn(
        self, time_progress: float
    ) -> tuple[int, dict[str, Any] | None, float, list[ActorStats]]:
        """Updates for about `LEARN_SECONDS`: how many, the metrics, the lag, and (central) the
        counts of the unrolls the server finished. `time_progress`: the fraction of `max_time`
        used."""
        self.time_progress = time_progress
        started, updates = time.monotonic(), 0
        while time.monotonic() - started < LEARN_SECONDS:
            if self.loop.try_update(LEARN_SECONDS):
                updates += 1
        metrics = self.loop.metrics() if updates else None
        stats = self.hub.drain() if self.hub is not None else []
        return updates, metrics, self.loop.lag, stats

    def state_dict(self) -> dict[str, Any]:
        return self.loop.state_dict()

    # `shoal tune`'s calls, made while the driver waits between two metrics rows (no learn
    # call in flight).

    def take_state(self, state: dict[str, Any]) -> None:
        """Continue from another member's learner state (a PBT exploit), published at once."""
        continue_from(self.loop.learner, state)
        self.board.offer(self.loop.learner)

    def apply_settings(self, config: Any) -> None:
        """Learn with `config` from now on (`Learner.apply_settings`)."""
        # Optional in the Learner protocol: only agents that name `Agent.mutable` have it.
        self.loop.learner.apply_settings(config)  # type: ignore[attr-defined]

    def learning_rates(self) -> list[float]:
        return learning_rates(self.loop.learner)

    def close(self) -> None:
        if self.hub is not None:
            self.hub.stop()
        self.table.close()

    def where(self) -> tuple[int, str]:
        return where()


class ActorProcess:
    """Steps `num_envs` environments with the newest weights it can get (or, when the agent's
    network is served centrally, `serves_network`, with the learner's server answering its
    policy's network calls); inserts into `table` (a replay shard, or the learner's process)."""

    def __init__(
        self,
        program: Program,
        index: int,
        seed: int,
        table: str,
        learner: str,
        policy_state: dict[str, Any] | None = None,
        run_steps: int = 0,
    ) -> None:
        """`policy_state`: the checkpointed policies' state the actor's policy continues from
        (a restarted process starts from it again: what it learned since is lost); `run_steps`:
        the env steps the run took before it started (see `build_acting`)."""
        import ray

        die_on_sigterm()
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        # Handles by name, so a restarted actor finds them again (handles as constructor
        # arguments would live in the object store).
        table_handle, learner_handle = ray.get_actor(table), ray.get_actor(learner)
        weights: Any = RemoteWeights(learner_handle)
        net = None
        if serves_network(program):  # the policy's network calls go to the learner's server
            weights = net = ServedNetwork(
                lambda inputs: ray.get(learner_handle.forward.remote(inputs))
            )
        self.actor = build_actor(
            program,
            index,
            seed,
            RemoteTable(table_handle, source=index),
            weights=weights,
            net=net,
            policy_state=policy_state,
            run_steps=run_steps,
        )

    def collect(self) -> ActorStats | None:
        return self.actor.run_unroll()

    def where(self) -> tuple[int, str]:
        return where()


class EnvActorProcess:
    """Steps `num_envs` environments with actions from the learner's inference server."""

    def __init__(self, program: Program, index: int, seed: int) -> None:
        die_on_sigterm()
        torch.set_num_threads(1)
        env = make_vector_env(
            program.env_source, program.spec, program.env_config, program.run.num_envs, seed
        )
        self.loop = EnvLoop(env, index)

    def run(self, learner: Any) -> int:
        import ray

        return self.loop.run(lambda message: ray.get(learner.step.remote(message)))

    def where(self) -> tuple[int, str]:
        return where()
