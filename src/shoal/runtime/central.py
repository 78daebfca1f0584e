"""Central inference (SEED RL, Espeholt et al. 2020): env-only actors, acting next to the learner.

`EnvLoop` is all an actor runs: step its vector env with the actions it is sent, and send back
observations, rewards and episode ends (`EnvStep`). `CentralActing` lives in the learner's
process (a thread of the inline launcher, the learner's Ray actor on the ray launcher): for each
call it records the step in that actor's `TrajectoryAssembler`, asks the `InferenceServer` for
actions, and queues each finished unroll (or what the agent's `prepare` makes of it) for the
learner, so trajectories never travel back and forth and weights never leave the learner.

On-policy agents (PPO) learn from unrolls acted by one version of the weights: an actor that
finished an unroll waits until the learner has published the next version. Off-policy agents
are bounded by the queue's capacity instead. An actor that restarts reconnects with a newer
`session`: its envs' state is reset and its half-built unroll is dropped; calls of the old
session still in flight are answered with None, which ends that loop.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shoal.agents.base import Transitions, Unroll
from shoal.envs.vector import VectorEnv
from shoal.errors import ConfigError
from shoal.runtime.inference import InferenceServer, ServerStopped
from shoal.runtime.program import Program
from shoal.runtime.trajectory import TrajectoryAssembler

# What the learner takes: an unroll (or its transitions) and the episodes that ended in it.
Item = tuple[Unroll | Transitions, list[float], list[int]]


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


class EnvLoop:
    """The actor side: step `env` with whatever actions `send(EnvStep)` returns, until None."""

    def __init__(self, env: VectorEnv, actor: int) -> None:
        self.env, self.actor = env, actor
        self.session = time.time_ns()

    def run(self, send: Any) -> int:
        """Loop until the server answers None; the number of vector steps taken."""
        message = EnvStep(self.actor, self.session, self.env.reset())
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
            )
            steps += 1
        return steps


class _Actor:
    """The server side's record of one actor: its rows, half-built unroll and statistics."""

    def __init__(self, index: int, num_envs: int, spec: Any, length: int, preparer: Any) -> None:
        self.index = index
        self.rows = np.arange(index * num_envs, (index + 1) * num_envs)
        self.spec, self.length = spec, length
        self.preparer = preparer  # a policy of this actor whose `prepare` runs here (replay)
        self.lock = threading.Lock()  # one call of this actor at a time
        self.gated_version = -1  # on-policy: acts again once the version is newer than this
        self.reset(-1)
        self.env_seconds = 0.0
        self.env_calls = 0

    def reset(self, session: int) -> None:
        self.session = session
        self.assembler = TrajectoryAssembler(self.spec, self.length)
        self.returns: list[float] = []
        self.lengths: list[int] = []


class CentralActing:
    """Serves env-only actors and queues the unrolls they produce for the learner."""

    def __init__(self, program: Program, net: Any, queue_capacity: int) -> None:
        agent, config, run = program.agent, program.agent_config, program.run
        self.on_policy = agent.on_policy
        policy = agent.make_policy(program.spec, config, net, program.seed)
        if not getattr(policy, "central_inference", False):
            raise ConfigError(
                f"--inference central is not supported by {agent.name}: its policy does not "
                "keep per-row state. Use --inference actor, or ppo, impala or r2d2."
            )
        set_index = getattr(policy, "set_actor_index", None)
        actors, num_envs = run.actors, run.num_envs
        self.actors = []
        for i in range(actors):
            preparer = None
            if getattr(policy, "prepare", None) is not None:
                preparer = agent.make_policy(program.spec, config, net, program.seed + i)
                if set_index is not None:
                    preparer.set_actor_index(i, actors)
            actor = _Actor(i, num_envs, program.spec, agent.unroll_length(config), preparer)
            if set_index is not None:
                set_index(i, actors, actor.rows)
            self.actors.append(actor)
        self.server = InferenceServer(
            policy, run.inference_batch or actors * num_envs, run.inference_timeout_ms / 1e3
        )
        self.items: queue.Queue[Item] = queue.Queue(queue_capacity)
        self.reconnects = 0
        self.failure: BaseException | None = None
        self._stopping = threading.Event()
        self._published = threading.Condition()

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
                if unroll is not None and not self._emit(actor, unroll):
                    return None
            if self.on_policy and not self._wait_for_version(actor):
                return None
            try:
                answer = self.server.infer(actor.rows, message.obs, rewards, ended)
            except ServerStopped:
                return None
            except BaseException as err:  # e.g. observations the network cannot take
                self.failure = err
                raise
            actor.assembler.acted(*answer)
            return answer[0]

    def _emit(self, actor: _Actor, unroll: Unroll) -> bool:
        item: Unroll | Transitions = unroll
        if actor.preparer is not None:
            with self.server.locked():  # the preparer shares the server's network
                item = actor.preparer.prepare(unroll)
        entry = (item, actor.returns, actor.lengths)
        actor.returns, actor.lengths = [], []
        actor.gated_version = unroll.behaviour_version
        while not self._stopping.is_set():
            try:
                self.items.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _wait_for_version(self, actor: _Actor) -> bool:
        """On-policy: after an unroll, wait until the learner published newer weights."""
        with self._published:
            while self.server.version <= actor.gated_version and not self._stopping.is_set():
                self._published.wait(0.1)
        return not self._stopping.is_set()

    # The learner's side.

    def take(self, timeout: float | None = None) -> Item | None:
        """The next queued unroll (None after `timeout` seconds without one); raises what an
        actor failed with."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                return self.items.get(timeout=0.1)
            except queue.Empty:
                if self.failure is not None:
                    raise self.failure from None
                if deadline is not None and time.monotonic() > deadline:
                    return None

    def publish(self, version: int, weights: Any) -> None:
        self.server.load_weights(weights, version)
        with self._published:
            self._published.notify_all()

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
        with self._published:
            self._published.notify_all()
