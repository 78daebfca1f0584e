"""The Ray actors of a ray run: the learner's process, actor processes, env-only actors, and
the updater processes of agents that have them (`Agent.updaters`).

Each wraps the parts every launcher shares (`Actor`, `LearnerLoop`, `CentralActing`) and only
adds what crossing a process boundary needs: weights travel as numpy arrays through the object
store (`ray.put` once per published version; an actor fetches them only when newer than its
own), items travel to a table in another process (`RemoteTable`), and the learner's process is
a threaded Ray actor, so actors' inserts that wait for room, central inference calls that wait
for their batch, the learner's updates and checkpoints all go on side by side.

Updaters (QT-Opt's Bellman updaters) sit between the replay shards and the learner: each samples
the shards as the learner would (the rate limiter counts its samples there, so the replay ratio
holds), labels the batch (`Updater.label`) with the weights the learner publishes for it
(`updater_weights()`, on a second board) and hands it to the learner's `LabelledBatches`, a
bounded queue the learner takes its batches from in place of the shards.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from functools import partial
from typing import Any, cast

import numpy as np
import torch

from shoal.agents.base import continue_from, learning_rates
from shoal.data import Batch, Inserter
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


def _items(data: Any) -> int:
    """The rows of a batch of `[B, ...]` arrays."""
    return len(next(iter(data.values()))) if isinstance(data, dict) and data else 0


class LabelledBatches:
    """The learner's table when updaters label its batches: a queue of at most `capacity`
    labelled batches, taken in the order they came (an updater's `put` waits while it is full).
    What came of each batch goes back to its shard (`shards`, the learner's view of them), and
    the table's stats are the shards' with the updaters' and the learner's rates:
    `labelled_items` and `labelled_per_s` (items the updaters handed over), `learned_items` and
    `learned_per_s` (items the learner took; rates since the last stats call),
    `labelled_queue` (batches waiting) and `target_lag` (learner updates between the weights a
    batch was labelled with and the update that learned from it, mean since the last row)."""

    def __init__(self, shards: ShardedTables, capacity: int) -> None:
        self.shards, self.capacity = shards, max(1, int(capacity))
        self.items: deque[tuple[Batch, int]] = deque()
        self.ready = threading.Condition()
        self.closed = False
        self.labelled = self.learned = 0
        self.taken = -1  # the labelling version of the batch handed out last
        self.lags: list[int] = []
        self._last = (time.perf_counter(), 0, 0)

    def put(self, batch: Batch, version: int) -> bool:
        """`batch`, labelled with the weights of learner `version`; False once closed."""
        with self.ready:
            self.ready.wait_for(lambda: self.closed or len(self.items) < self.capacity)
            if self.closed:
                return False
            self.items.append((batch, version))
            self.labelled += _items(batch.data)
            self.ready.notify_all()
            return True

    def insert(self, items: Any, version: int, block: bool = True, steps: int = 0) -> bool:
        raise RuntimeError("Actors insert into the replay shards; updaters put into this queue.")

    def can_sample(self) -> bool:
        with self.ready:
            return bool(self.items)

    def sample(self, progress: float, timeout: float | None) -> Batch | None:
        with self.ready:
            if not self.ready.wait_for(lambda: self.closed or bool(self.items), timeout):
                return None
            if not self.items:
                return None
            batch, self.taken = self.items.popleft()
            self.learned += _items(batch.data)
            self.ready.notify_all()
        return batch

    def after_update(self, batch: Batch, priorities: np.ndarray | None, version: int) -> None:
        self.lags.append(version - 1 - self.taken)
        self.shards.after_update(batch, priorities, version)

    def stats(self) -> dict[str, float]:
        now = time.perf_counter()
        then, labelled, learned = self._last
        seconds = max(now - then, 1e-9)
        with self.ready:
            self._last = (now, self.labelled, self.learned)
            row = {
                "labelled_items": float(self.labelled),
                "learned_items": float(self.learned),
                "labelled_per_s": (self.labelled - labelled) / seconds,
                "learned_per_s": (self.learned - learned) / seconds,
                "labelled_queue": float(len(self.items)),
            }
            if self.lags:
                row["target_lag"] = float(np.mean(self.lags))
                self.lags = []
        return self.shards.stats() | row

    @property
    def sample_weight(self) -> float:
        return float(self.can_sample())

    def close(self) -> None:
        with self.ready:
            self.closed = True
            self.ready.notify_all()
        self.shards.close()


class _UpdaterSide:
    """A learner as the updaters' board sees it: its version, and `updater_weights()`."""

    def __init__(self, learner: Any) -> None:
        self.learner = learner

    @property
    def version(self) -> int:
        return int(self.learner.version)

    def weights(self) -> Any:
        return self.learner.updater_weights()


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
        updaters: int = 0,
    ) -> None:
        """`steps`: env steps of the run so far (a resumed run's); `shards`: table shards' names;
        `policy_state`: the checkpointed policies' state (for the central server's policy);
        `updaters`: how many updater processes label the batches (`Agent.updaters`)."""
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
            if updaters:  # they sample the shards; the learner takes what they labelled
                self.table = LabelledBatches(self.table, capacity=2 * updaters)
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
        # The updaters' weights (`updater_weights()`), published as the actors' are.
        self.updater_board = WeightsBoard(pack=lambda weights: [_pack(weights)])
        self.updaters = updaters
        self._offer_updaters()

    def _offer_updaters(self) -> None:
        if self.updaters:
            self.updater_board.offer(cast(Any, _UpdaterSide(self.loop.learner)))

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

    # Updaters' calls.

    def updater_published(self, have: int) -> tuple[int, list[Any]] | None:
        return self.updater_board.take(have)

    def labelled(self, batch: Batch, version: int) -> bool:
        """An updater's batch, labelled with the weights of `version`, into the queue the
        learner takes its batches from; waits while it is full. False once the run ends."""
        return bool(self.table.put(batch, version))

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
                self._offer_updaters()
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
        self._offer_updaters()

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


class UpdaterProcess:
    """Labels batches of the replay shards for the learner (`Agent.updaters`, e.g. QT-Opt's
    Bellman updaters) with the newest weights the learner published for it, until the run
    ends."""

    def __init__(
        self, program: Program, index: int, seed: int, shards: list[str], learner: str, steps: int
    ) -> None:
        """`shards`, `learner`: the roles' names; `steps`: env steps of the run so far."""
        import ray

        die_on_sigterm()
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        agent = program.agent
        assert agent.make_updater is not None
        handles = [ray.get_actor(name) for name in shards]
        self.table = ShardedTables(handles, program.data_path().merge_stats, seed)
        self.learner = ray.get_actor(learner)
        net = agent.make_networks(program.spec, program.agent_config)
        self.updater = agent.make_updater(program.spec, program.agent_config, net)
        self.version = -1
        self.steps, self.total = steps, program.run.total_steps
        self.index = index

    def run(self) -> int:
        """Label batches until the learner's queue closes (the run's end): how many. The
        newest weights are asked for while the batch is sampled and labelled, and a labelled
        batch is handed over while the next is made, so neither round trip to the learner
        waits in line with the work (only the first weights are waited for)."""
        import ray

        labelled, handing = 0, None
        asking: Any = self.learner.updater_published.remote(self.version)
        while True:
            progress = min(1.0, (self.steps + int(self.table.steps.sum())) / self.total)
            batch = self.table.sample(progress, LEARN_SECONDS)
            if batch is None:
                continue
            while True:
                ready, _ = ray.wait([asking], timeout=None if self.version < 0 else 0)
                if not ready:
                    break
                newer = ray.get(asking)
                if newer is not None:
                    self.version, [ref] = newer
                    self.updater.load_weights(
                        {k: torch.from_numpy(v.copy()) for k, v in ray.get(ref).items()}
                    )
                asking = self.learner.updater_published.remote(self.version)
                if self.version >= 0:
                    break
                time.sleep(0.01)  # the learner publishes its first weights as it starts
            batch.data = self.updater.label(batch.data)
            if handing is not None and not ray.get(handing):
                return labelled
            handing = self.learner.labelled.remote(batch, self.version)
            labelled += 1

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
