"""The agent contract: what an algorithm hands the runtime, which wires it on any launcher.

An algorithm is a frozen config class, `make_networks`, an actor-side policy, a learner and a
data path. The runtime imports this module only, never a particular agent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import torch
from torch import nn

from shoal.envs.spec import EnvSpec
from shoal.tree import map_tree

Weights = dict[str, torch.Tensor]


@dataclass
class Unroll:
    """T steps of B environments, time-major, plus the step to bootstrap from.

    Observations keep the env's dtype (uint8 frames stay uint8). `final_obs[k]` is the last
    observation of the episode that was truncated at step `final_index[k] = (t, b)`: the
    observation in `obs[t + 1, b]` is already the next episode's first one.
    """

    obs: np.ndarray  # [T + 1, B, ...]
    actions: np.ndarray  # [T, B, ...] as the policy chose them (before clipping to bounds)
    rewards: np.ndarray  # [T, B] float32
    terminated: np.ndarray  # [T, B] bool
    truncated: np.ndarray  # [T, B] bool
    extras: dict[str, np.ndarray]  # [T, B, ...] what the policy returned while acting
    final_obs: np.ndarray  # [K, ...]
    final_index: np.ndarray  # [K, 2] int64 (t, b)
    behaviour_version: int = 0  # learner version of the weights that acted

    @property
    def length(self) -> int:
        return int(self.rewards.shape[0])

    @property
    def batch_size(self) -> int:
        return int(self.rewards.shape[1])


def concat_unrolls(unrolls: list[Unroll]) -> Unroll:
    """Unrolls of the same length side by side: `[T, B1] + [T, B2] -> [T, B1 + B2]`."""
    if len(unrolls) == 1:
        return unrolls[0]
    offsets = np.cumsum([0] + [u.batch_size for u in unrolls[:-1]])
    final_index = [
        u.final_index + np.array([0, off]) for u, off in zip(unrolls, offsets, strict=True)
    ]
    return Unroll(
        obs=map_tree(lambda *xs: np.concatenate(xs, axis=1), *[u.obs for u in unrolls]),
        actions=np.concatenate([u.actions for u in unrolls], axis=1),
        rewards=np.concatenate([u.rewards for u in unrolls], axis=1),
        terminated=np.concatenate([u.terminated for u in unrolls], axis=1),
        truncated=np.concatenate([u.truncated for u in unrolls], axis=1),
        extras={
            k: np.concatenate([u.extras[k] for u in unrolls], axis=1) for k in unrolls[0].extras
        },
        final_obs=map_tree(lambda *xs: np.concatenate(xs), *[u.final_obs for u in unrolls]),
        final_index=np.concatenate(final_index).astype(np.int64),
        behaviour_version=min(u.behaviour_version for u in unrolls),
    )


@dataclass
class Transitions:
    """n-step transitions an actor assembled from its unrolls, for a replay-based learner.

    `data` holds the fields `shoal.replay.TransitionReplay.add` takes (`[M, ...]` each, with an
    optional initial `priority`); `env_steps` counts the agent steps of the unroll they came
    from (transitions of an episode's last steps come out only when it ends, so M varies).
    """

    data: dict[str, np.ndarray] | None  # None once the actor put them in a remote replay
    env_steps: int
    behaviour_version: int = 0
    count: int = -1  # transitions; taken from `data` when not given

    def __post_init__(self) -> None:
        if self.count < 0:
            self.count = 0 if self.data is None else len(self.data["reward"])

    def receipt(self) -> Transitions:
        """What is left to send once `data` went to a replay shard: the counts."""
        return Transitions(None, self.env_steps, self.behaviour_version, self.count)


def env_steps(item: Unroll | Transitions) -> int:
    """Agent steps of experience in what an actor sent."""
    if isinstance(item, Transitions):
        return item.env_steps
    return item.length * item.batch_size


def combine(items: list[Any]) -> Any:
    """One learner batch from what actors sent: unrolls side by side, transitions as a list."""
    if all(isinstance(item, Unroll) for item in items):
        return concat_unrolls(items)
    return list(items)


class Policy(Protocol):
    """The actor side: acts on a batch of observations with the latest weights it was given."""

    version: int  # learner version of the weights in use

    def act(self, obs: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """`[E, ...] -> (env actions [E, ...], extras {name: [E, ...]})`."""
        ...

    # Optional, looked up with getattr by the runtime:
    # - `observe_rewards(rewards [E])` after each step, before `episode_ended` (policies that
    #   take the previous reward as an input);
    # - `episode_ended(mask [E])` after each step (recurrent policies reset their state);
    # - `prepare(unroll) -> Transitions` turns each unroll into what the learner takes (replay
    #   agents assemble n-step transitions and initial priorities on the actor);
    # - `set_actor_index(index, count)` says which of `count` actors this policy acts for
    #   (Ape-X gives each actor its own exploration rate);
    # - `acts_per_env` (attribute): True when `act` treats envs independently, so a
    #   double-buffered collector may call it on half of the envs at a time.

    def load_weights(self, weights: Weights, version: int) -> None: ...


class Learner(Protocol):
    """The learner side: owns the optimiser, consumes batches, publishes versioned weights."""

    version: int

    def update(self, batch: Any, progress: float) -> dict[str, float]:
        """One learning step on `batch`; `progress` in [0, 1] is the fraction of the budget used."""
        ...

    def weights(self) -> Weights: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...


class NetworkLearner:
    """Weights and checkpoints for learners that hold `net`, `optimizer` and `version`."""

    net: nn.Module
    optimizer: Any  # shoal.optim.Adam or anything with state_dict/load_state_dict
    version: int

    def weights(self) -> Weights:
        # CPU copies: actors act on CPU whatever device the learner is on.
        return {k: v.detach().to("cpu", copy=True) for k, v in self.net.state_dict().items()}

    def state_dict(self) -> dict[str, Any]:
        return {
            "network": self.net.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "version": self.version,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.net.load_state_dict(state["network"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.version = int(state["version"])


@dataclass(frozen=True)
class Agent:
    """Everything the runtime needs to run one algorithm."""

    name: str
    config_cls: type
    make_networks: Callable[[EnvSpec, Any], nn.Module]
    make_policy: Callable[[EnvSpec, Any, nn.Module, int], Policy]  # (spec, config, net, seed)
    make_learner: Callable[[EnvSpec, Any, nn.Module], Learner]
    make_eval_policy: Callable[[EnvSpec, Any, nn.Module, bool], EvalPolicy]
    data: Literal["unroll", "replay"]
    unroll_length: Callable[[Any], int]
    validate: Callable[[Any, int], None] = field(default=lambda config, num_envs: None)
    # On-policy agents learn from unrolls of the current weights only: launchers collect from
    # every actor with one version, then update. Off-policy ones (V-trace, replay) take unrolls
    # as they come while actors keep acting.
    on_policy: bool = True
    # How many unrolls make one learner batch when unrolls arrive one by one (off-policy).
    batch_unrolls: Callable[[Any], int] = field(default=lambda config: 1)
    # Replay agents: `(spec, config, shards) -> replay` holding 1/shards of the capacity.
    # Distributed launchers build replay shards with it, let actors insert there, and set
    # the learner's `replay` attribute to an object that samples from the shards
    # (`shoal.runtime.replay_service.ShardedReplay`).
    make_replay: Callable[[EnvSpec, Any, int], Any] | None = None


class EvalPolicy(Protocol):
    """A policy for evaluation and deployment: observations in, env actions out."""

    def act(self, obs: np.ndarray) -> np.ndarray: ...
