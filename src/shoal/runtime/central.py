"""Central inference (SEED RL, Espeholt et al. 2020): env-only actors, acting next to the learner.

`EnvLoop` is all an actor runs: step its vector env with the actions it is sent, and send back
observations, rewards and episode ends (`EnvStep`). `CentralActing` lives in the learner's
process (a thread of the inline launcher, the learner's Ray actor on the ray launcher): for each
call it records the step in that actor's `TrajectoryAssembler`, asks the `InferenceServer` for
actions, and hands each finished unroll to that actor's adder and table, exactly as an actor-side
`Actor` would, so trajectories never travel back and forth and weights never leave the learner.

The table decides when an actor may go on: an on-policy queue holds an actor's call until the
learner has learned from its unroll (so its next step acts with the new weights), an off-policy
queue or a replay table until there is room. An actor that restarts reconnects with a newer
`session`: its envs' state is reset and its half-built unroll is dropped; calls of the old
session still in flight are answered with None, which ends that loop.

Agents whose acting is more than one network call per step declare `Agent.central_inference =
"network"` (AlphaZero: a tree search of many simulations per move). Their actors stay whole
actors (`Actor`: envs, the policy's step, the adder, inserts), but the policy's network is a
`ServedNetwork`: each call of it, a search's batch of leaf positions, is a `forward` request to
the same server, which batches the calls of all actors into one forward pass of the learner
side's copy of the network (SEED RL's design applied to search leaves). The server's hub is
the same `CentralActing`; only its `forward` is used.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from shoal.data import Adder, Inserter, Unroll
from shoal.envs.vector import VectorEnv
from shoal.runtime.actor import ActorStats
from shoal.runtime.inference import InferenceServer, ServerStopped
from shoal.runtime.program import Program
from shoal.runtime.rows import Acting
from shoal.runtime.trajectory import TrajectoryAssembler


def serves_network(program: Program) -> bool:
    """Whether this run's actors search with the server's network (`ServedNetwork`) rather
    than only stepping envs (see the module docstring)."""
    return program.run.inference == "central" and program.agent.central_inference == "network"


class ServedNetwork(nn.Module):
    """An actor's stand-in for the agent's network: calling it sends its inputs to the central
    server (`send`: `InferenceServer.forward`, or a remote call of it) and returns the outputs
    of the server's network as tensors. It has no weights: the server's network takes the
    learner's. It is also the actor's weights source (`take`): the version of the weights that
    answered its newest call, with nothing to load, so unrolls record what acted."""

    def __init__(self, send: Any) -> None:
        super().__init__()
        self.send = send
        self.version = -1

    def forward(self, *inputs: torch.Tensor) -> Any:
        outputs, self.version = self.send(tuple(x.detach().cpu().numpy() for x in inputs))
        if isinstance(outputs, tuple | list):
            return tuple(torch.from_numpy(np.asarray(out)) for out in outputs)
        return torch.from_numpy(np.asarray(outputs))

    def take(self, have: int) -> tuple[int, Any] | None:
        return (self.version, {}) if self.version > have else None


@dataclass
class EnvStep:
    """What an env-only actor sends per call: observations and what led to them."""

    actor: int
    session: int  # grows when the actor's process restarts
    obs: Any  # [E, ...]
    reward: np.ndarray | None = None  # [E]; None on (re)connect: `obs` starts every episode
    terminated: np.ndarray | None = None
    truncated: np.ndarray | None = None
    final_obs: dict[int, Any] = field(default_factory=dict)  # truncated envs' last obs
    episode_returns: list[float] = field(default_factory=list)
    episode_lengths: list[int] = field(default_factory=list)
    env_seconds: float = 0.0  # spent stepping the envs for this call
    active: np.ndarray | None = None  # [E] rows whose `obs` is real (`VectorEnv.active`)
    episode_metrics: dict[str, list[float]] = field(default_factory=dict)


class EnvLoop:
    """The actor side: step `env` with whatever actions `send(EnvStep)` returns, until None."""

    def __init__(self, env: VectorEnv, actor: int) -> None:
        self.env, self.actor = env, actor
        self.session = time.time_ns()

    def run(self, send: Any) -> int:
        """Loop until the server answers None; the number of vector steps taken."""
        message = EnvStep(self.actor, self.session, self.env.reset(), active=self._active())
        steps = 0
        while (actions := send(message)) is not None:
            started = time.perf_counter()
            step = self.env.step(actions)
            message = EnvStep(
                self.actor,
                self.session,
                step.obs,
                step.reward,
                step.terminated,
                step.truncated,
                step.final_obs,
                step.episode_returns,
                step.episode_lengths,
                time.perf_counter() - started,
                self._active(),
                step.episode_metrics,
            )
            steps += 1
        return steps

    def _active(self) -> np.ndarray | None:
        active = getattr(self.env, "active", None)  # rows that can be empty say which are not
        return None if active is None else active.copy()


class _Actor:
    """The server side's record of one actor: its rows, half-built unroll and statistics."""

    def __init__(self, index: int, num_envs: int, spec: Any, length: int, adder: Adder) -> None:
        self.index = index
        self.rows = np.arange(index * num_envs, (index + 1) * num_envs)
        self.spec, self.length = spec, length
        self.adder = adder
        self.lock = threading.Lock()  # one call of this actor at a time
        self.reset(-1)
        self.env_seconds = 0.0
        self.env_calls = 0

    def reset(self, session: int) -> None:
        self.session = session
        self.assembler = TrajectoryAssembler(self.spec, self.length, int(self.rows[0]))
        self.returns: list[float] = []
        self.lengths: list[int] = []
        self.metrics: dict[str, list[float]] = {}


class CentralActing:
    """Serves env-only actors and puts what their unrolls make into the actors' tables.

    `tables[i]` is actor i's table (one for all inline; a replay shard each on ray); `weights`
    is where the server takes the learner's newest weights from.
    """

    def __init__(
        self,
        program: Program,
        net: Any,
        tables: Sequence[Inserter],
        weights: Any,
        policy_state: dict[str, Any] | None = None,
        run_steps: int = 0,
    ) -> None:
        agent, config, run = program.agent, program.agent_config, program.run
        layout, data_path = program.layout, program.data_path()
        policy = agent.make_policy(program.spec, config, net, program.seed, layout)
        if policy_state:  # a resumed run's checkpointed policy state (`Policy.state_dict`)
            policy.load_state_dict(policy_state)
        # A resumed run's rows go on from their share of its steps (see `build_acting`).
        start = run_steps // layout.total_envs
        self.acting = Acting(policy, program.spec, "train", start_steps=start)
        self.actors = [
            _Actor(i, layout.envs_per_actor, program.spec, data_path.unroll_length, adder)
            for i, adder in enumerate(data_path.make_adder(policy, i) for i in range(run.actors))
        ]
        self.tables = list(tables)
        self.server = InferenceServer(
            self.acting,
            run.inference_batch or layout.total_envs,
            run.inference_timeout_ms / 1e3,
            weights,
        )
        self.reconnects = 0
        self.failure: BaseException | None = None
        self._stats: list[ActorStats] = []
        self._stats_lock = threading.Lock()
        self._stopping = threading.Event()

    # The actors' side.

    def step(self, message: EnvStep) -> np.ndarray | None:
        """Actions for `message.obs`, or None when the run is over (or the session is stale)."""
        actor = self.actors[message.actor]
        with actor.lock:
            if message.session < actor.session or self._stopping.is_set():
                return None
            rewards = ended = None
            if message.session > actor.session or message.reward is None:
                if actor.session >= 0:
                    self.reconnects += 1
                actor.reset(message.session)
                actor.assembler.observe(message.obs)
            else:
                assert message.terminated is not None and message.truncated is not None
                actor.returns += message.episode_returns
                actor.lengths += message.episode_lengths
                for name, values in message.episode_metrics.items():
                    actor.metrics.setdefault(name, []).extend(values)
                actor.env_seconds += message.env_seconds
                actor.env_calls += 1
                rewards, ended = message.reward, message.terminated | message.truncated
                unroll = actor.assembler.result(
                    message.reward,
                    message.terminated,
                    message.truncated,
                    message.final_obs,
                    message.obs,
                )
                if unroll is not None and not self._hand_on(actor, unroll):
                    return None
            try:
                served = self.server.infer(actor.rows, message.obs, rewards, ended)
            except ServerStopped:
                return None
            except BaseException as err:  # e.g. observations the network cannot take
                self.failure = err
                raise
            extras = served.extras
            if message.active is not None:
                extras = {**extras, "active": message.active}
            actor.assembler.acted(served.actions, extras, served.version)
            return served.env_actions

    def _hand_on(self, actor: _Actor, unroll: Unroll) -> bool:
        """The unroll's items into the actor's table (waiting as the table says); its counts
        for the driver. False once the run is ending."""
        with self.server.locked():  # the adder may use the server's network (priorities)
            items = actor.adder.add(unroll)
            policy_state = self.acting.policy.state_dict()
        stats = ActorStats(
            unroll.length * unroll.batch_size,
            actor.returns,
            actor.lengths,
            unroll.behaviour_version,
            policy_state,
            actor.metrics,
        )
        actor.returns, actor.lengths, actor.metrics = [], [], {}
        with self._stats_lock:
            self._stats.append(stats)
        table = self.tables[actor.index % len(self.tables)]
        inserted = table.insert(items, unroll.behaviour_version, steps=stats.steps)
        return inserted and not self._stopping.is_set()

    # The learner's side.

    def drain(self) -> list[ActorStats]:
        """Counts of the unrolls finished since the last call; raises what an actor failed with."""
        if self.failure is not None:
            raise self.failure
        with self._stats_lock:
            stats, self._stats = self._stats, []
        return stats

    def metrics(self) -> dict[str, float]:
        row = self.server.stats.report()
        for actor in self.actors:
            if actor.env_calls:
                row[f"env_step_ms/actor{actor.index}"] = 1e3 * actor.env_seconds / actor.env_calls
            actor.env_seconds, actor.env_calls = 0.0, 0
        row["actor_reconnects"] = float(self.reconnects)
        return row

    def stop(self) -> None:
        self._stopping.set()
        self.server.stop()
