"""The actor's side of every launcher: newest weights, one unroll, its items into the table.

`Actor` is the same for every agent and placement: a thread of the inline launcher, a Ray actor
process, or the in-turn loop all run `run_unroll`. What differs between agents lives in the
data path (the adder that makes items, the table that decides when an insert may go on).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from shoal.data import Adder, Inserter
from shoal.envs.registry import make_vector_env
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.program import Program
from shoal.runtime.rows import Acting

__all__ = ["Actor", "ActorStats", "WeightsSource", "build_acting", "build_actor"]


@dataclass
class ActorStats:
    """What one unroll adds to the run's counts."""

    steps: int  # agent steps, summed over the actor's envs
    returns: list[float] = field(default_factory=list)  # episodes that ended in it
    lengths: list[int] = field(default_factory=list)
    version: int = 0  # learner version of the weights that acted
    # The acting policy's `state_dict` after the unroll, for the driver's checkpoints.
    policy_state: dict[str, Any] = field(default_factory=dict)
    # The env's named episode figures (`VectorStep.episode_metrics`), e.g. `team_return`.
    episode_metrics: dict[str, list[float]] = field(default_factory=dict)


class WeightsSource(Protocol):
    def take(self, have: int) -> tuple[int, Any] | None:
        """Newer published `(version, weights)` than `have`, or None."""
        ...


def build_acting(
    program: Program,
    net: Any,
    seed: int,
    actor: int,
    policy_state: dict[str, Any] | None = None,
    run_steps: int = 0,
) -> Acting:
    """Actor `actor`'s policy on `net` with its rows' store (slots `actor * E + j`), continuing
    from the run's checkpointed `policy_state` (see `Policy.state_dict`) if given, and from the
    `run_steps` env steps the run took before (each row's share counts as its own)."""
    agent, layout = program.agent, program.layout
    policy = agent.make_policy(program.spec, program.agent_config, net, seed, layout)
    if policy_state:
        policy.load_state_dict(policy_state)
    offset, start = actor * layout.envs_per_actor, run_steps // layout.total_envs
    return Acting(policy, program.spec, "train", slot_offset=offset, start_steps=start)


class Actor:
    """Steps one vector env with `acting` and inserts what its adder makes of each unroll."""

    def __init__(
        self,
        collector: UnrollCollector,
        adder: Adder,
        table: Inserter,
        weights: WeightsSource | None = None,
    ) -> None:
        self.collector, self.adder, self.table, self.weights = collector, adder, table, weights
        self.acting = collector.acting

    def run_unroll(self, block: bool = True) -> ActorStats | None:
        """One unroll; None if the run stopped during it (the collector's `stop`) or the table
        closed while it waited to insert: the run is ending."""
        if self.weights is not None:
            published = self.weights.take(self.acting.version)
            if published is not None:
                self.acting.load_weights(published[1], published[0])
        unroll = self.collector.collect()
        if unroll is None:
            return None
        items = self.adder.add(unroll)
        steps = unroll.length * unroll.batch_size
        version = unroll.behaviour_version
        # Inserted even when the adder made no items yet, so the table counts the steps.
        if not self.table.insert(items, version, block, steps):
            return None
        returns, lengths = self.collector.drain_episodes()
        policy_state = self.acting.policy.state_dict()
        metrics = self.collector.drain_episode_metrics()
        return ActorStats(steps, returns, lengths, unroll.behaviour_version, policy_state, metrics)

    def close(self) -> None:
        self.collector.env.close()


def build_actor(
    program: Program,
    index: int,
    seed: int,
    table: Inserter,
    weights: WeightsSource | None = None,
    net: Any = None,
    policy_state: dict[str, Any] | None = None,
    stop: Callable[[], bool] | None = None,
    run_steps: int = 0,
) -> Actor:
    """Actor `index`: its envs (env j seeded `seed + j`), policy, adder and table.

    `net` shares a network with the learner (inline, in turn); otherwise the actor builds its
    own and takes weights from `weights`. `policy_state`: the run's checkpointed policies';
    `run_steps`: the env steps the run took before (see `build_acting`).
    `stop`: the run's stop conditions, which end an unroll early (see `UnrollCollector`).
    """
    agent, config = program.agent, program.agent_config
    if net is None:
        net = agent.make_networks(program.spec, config)
    acting = build_acting(program, net, seed, index, policy_state, run_steps)
    env = make_vector_env(
        program.env_source, program.spec, program.env_config, program.run.num_envs, seed
    )
    data_path = program.data_path()
    collector = UnrollCollector(env, acting, data_path.unroll_length, stop)
    return Actor(collector, data_path.make_adder(acting.policy, index), table, weights)
