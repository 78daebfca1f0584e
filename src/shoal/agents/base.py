"""The agent contract: what an algorithm hands the runtime, which wires it the same way on every
launcher (DESIGN.md, "The agent contract").

An algorithm is five things: a frozen config class; `make_networks(spec, config)`; a `Policy`
whose `step` is pure (observation, recurrent state, previous action and reward in; action,
extras, new state out); a `Learner` that takes batches; and its `DataPath` (`shoal.data`). The
runtime holds every env's recurrent state, once, for the actor loop, the central inference
server, the evaluator and `shoal.load` (`shoal.runtime.rows`), and imports this module only,
never a particular agent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Protocol

import numpy as np
import torch
from torch import nn

from shoal.data import DataPath, Layout, Unroll, concat_unrolls
from shoal.envs.spec import EnvSpec

__all__ = [
    "ActMode",
    "Agent",
    "DataPath",
    "Layout",
    "Learner",
    "NetworkLearner",
    "Policy",
    "PolicyStep",
    "State",
    "StepInputs",
    "Unroll",
    "Update",
    "Updater",
    "Weights",
    "concat_unrolls",
    "set_learning_rate",
]

Weights = dict[str, torch.Tensor]
State = dict[str, torch.Tensor]
"""A policy's recurrent state for n rows: `{name: [n, ...]}` tensors on the policy's device."""

ActMode = Literal["train", "sample", "greedy"]
"""train: act to collect experience (with the agent's exploration); sample: evaluate with the
stochastic policy (DQN-style agents: their small evaluation epsilon); greedy: evaluate with the
most likely action."""


_NOTHING: Mapping[str, Any] = MappingProxyType({})


class StepInputs(NamedTuple):
    """What the runtime keeps for each row besides the state, `[n]` (or `[n, ...]`) each."""

    first: np.ndarray  # bool: the observation starts an episode (the state was just reset)
    prev_action: np.ndarray  # the row's previous action, zeros where `first`
    prev_reward: np.ndarray  # float32, the reward that action earned, 0 where `first`
    slot: np.ndarray  # int64: the row's env slot, actor a's env j is a * E + j (see Layout)
    steps: np.ndarray  # int64: actions this row took before this one


class PolicyStep(NamedTuple):
    """What a policy's step returns for n rows."""

    action: np.ndarray  # [n, ...] what is recorded and learned from (e.g. before clipping)
    extras: Mapping[str, np.ndarray] = _NOTHING  # [n, ...] recorded with the step (log-probs)
    state: Mapping[str, torch.Tensor] = _NOTHING  # the new state, as `initial_state` lays it out
    env_action: np.ndarray | None = None  # what the env gets, when not `action` (clipped)


class Policy:
    """The actor side: a pure step over n rows; the runtime holds the rows' state.

    Subclasses implement `step`; the defaults suit a policy without recurrent state whose
    weights are its network's state dict.
    """

    net: nn.Module

    def initial_state(self, slots: np.ndarray) -> State:
        """The state of rows starting an episode (`slots [n]`, see `StepInputs.slot`)."""
        return {}

    def step(self, obs: Any, state: State, inputs: StepInputs, mode: ActMode) -> PolicyStep:
        """Act on `obs [n, ...]` (numpy, or a dict of such) from `state`, given `inputs`."""
        raise NotImplementedError

    def load_weights(self, weights: Weights) -> None:
        """Take weights published by the learner (`Learner.weights`)."""
        self.net.load_state_dict(weights)

    def apply_settings(self, config: Any) -> None:
        """Act with `config` from the next step on: a PBT exploit's new settings (fields in
        `Agent.mutable`; the others equal the policy's). Policies whose acting reads none of
        them (most) ignore it; DQN's epsilon-greedy takes its exploration rates here."""
        return None

    def observe(self, slots: np.ndarray, rewards: np.ndarray, ended: np.ndarray) -> None:
        """What the rows' last actions led to (`[n]` each): every reward reaches the policy
        here, the last of an episode too, which `step` never sees (Agent57's meta-controller
        learns from whole episodes' returns). Most policies need nothing from it."""
        return None

    def state_dict(self) -> dict[str, Any]:
        """What the policy learned while acting and a resumed run must continue from (Agent57's
        bandits and novelty statistics), as tensors and plain Python values. Keys name the
        actors or env slots they belong to, so the states of the policies of several actors
        merge into the run's by a dict union; the runtime checkpoints that union."""
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a checkpointed union of policies' states, taking the entries of the
        actors and slots this policy serves (absent ones start afresh)."""
        return None


class Update(NamedTuple):
    """What one learner update returns."""

    metrics: dict[str, float]
    priorities: np.ndarray | None = None  # new priorities of the sampled items (replay)


class Learner(Protocol):
    """The learner side: owns its optimisers, takes batches, publishes versioned weights."""

    version: int  # grows with every update; actors record the version they acted with

    def update(self, batch: Any, progress: float) -> Update:
        """One learning step on `batch` (a `Batch.data`); `progress` in [0, 1] is the fraction
        of the budget used."""
        ...

    def weights(self) -> Weights:
        """CPU copies of what the policy needs (`Policy.load_weights`)."""
        ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...

    # Agents that name live settings (`Agent.mutable`) also give
    # `apply_settings(config) -> None`: learn from now on with `config`, whose fields outside
    # `Agent.mutable` equal the learner's current ones (`shoal tune`'s PBT exploits).


class Updater(Protocol):
    """A process between the replay and the learner that labels each sampled batch for the
    learner (QT-Opt's Bellman updaters: the targets of its transitions), on the ray launcher
    (`Agent.updaters`). It works with weights the learner publishes for it
    (`updater_weights()`, which such a learner gives beside `weights()`); the learner's
    `update` takes a labelled batch, and labels an unlabelled one itself (inline)."""

    def load_weights(self, weights: Weights) -> None:
        """The learner's `updater_weights()`."""
        ...

    def label(self, batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """`batch` (a replay sample) with the learner's labels added."""
        ...


def set_learning_rate(optimizer: Any, learning_rate: float) -> None:
    """Put `learning_rate` into `optimizer`: every param group of a torch optimiser, or the
    one `lr` of shoal's flat-buffer `Adam`."""
    groups = getattr(optimizer, "param_groups", None)
    if groups is not None:
        for group in groups:
            group["lr"] = learning_rate
    else:
        optimizer.lr = learning_rate


def learning_rates(learner: Any) -> list[float]:
    """The learning rates the learner's optimisers will step with: every param group of
    every torch optimiser, and the `lr` of shoal's `Adam`. A learner that declares its state
    (`shoal.agents.common.DeclaredState`) names its optimisers; for others they are found
    among its attributes whose names contain "optim"."""
    declared = getattr(learner, "declared_optimizers", None)
    if declared is not None:
        optimizers = list(declared())
    else:
        optimizers = [
            value
            for name, value in sorted(vars(learner).items())
            if "optim" in name and value is not None
        ]
    rates: list[float] = []
    for value in optimizers:
        groups = getattr(value, "param_groups", None)
        if groups is not None:
            rates.extend(float(group["lr"]) for group in groups)
        elif hasattr(value, "lr"):
            rates.append(float(value.lr))
    return rates


def continue_from(learner: Any, state: Mapping[str, Any]) -> None:
    """Load another learner's `state` (a PBT exploit) into `learner`, keeping its version
    growing: actors take weights newer than theirs, and an on-policy queue drops unrolls older
    than the learner."""
    version = learner.version
    learner.load_state_dict(state)
    learner.version = max(version, learner.version)


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

    def apply_settings(self, config: Any) -> None:
        """Learn with `config` from the next update on, its learning rate from now: for
        learners that read every setting from `self.config` at each update (PPO, IMPALA,
        DQN). The learning rate goes into the optimiser at once, so a checkpoint loaded
        before (whose optimiser state carries its own rate) does not keep the old one."""
        self.config = config
        set_learning_rate(self.optimizer, config.learning_rate)


def _no_checks(config: Any, layout: Layout) -> None:
    return None


def _no_metrics(policy_state: Mapping[str, Any]) -> dict[str, float]:
    return {}


def _no_updaters(config: Any) -> int:
    return 0


@dataclass(frozen=True)
class Agent:
    """Everything the runtime needs to run one algorithm."""

    name: str
    config_cls: type
    make_networks: Callable[[EnvSpec, Any], nn.Module]
    # (spec, config, net, seed, layout) -> the acting policy.
    make_policy: Callable[[EnvSpec, Any, nn.Module, int, Layout], Policy]
    make_learner: Callable[[EnvSpec, Any, nn.Module], Learner]
    # (spec, config, layout) -> how experience flows to the learner.
    make_data_path: Callable[[EnvSpec, Any, Layout], DataPath]
    # Checks that need the run's layout as well as the config; raise ValueError.
    validate: Callable[[Any, Layout], None] = field(default=_no_checks)
    # Metrics from the run's merged `Policy.state_dict`s (Agent57: its bandits' arms), added to
    # every metrics row by the driver.
    policy_metrics: Callable[[Mapping[str, Any]], dict[str, float]] = field(default=_no_metrics)
    # Config fields the learner can take while it runs (`Learner.apply_settings`): what PBT
    # may change in place. Empty: none, and `shoal tune --scheduler pbt` refuses to mutate any.
    mutable: frozenset[str] = field(default=frozenset())
    # What `--inference central` serves next to the learner. "policy": the actors only step
    # envs and the server runs the policy's `step` on their observations (SEED RL). "network":
    # the actors run the policy themselves (AlphaZero's tree search) and each call of its
    # `net` (positional tensors in, a tensor or a tuple out; weights by `load_state_dict`) is a
    # request to the server, batched there with the other actors' calls.
    central_inference: Literal["policy", "network"] = "policy"
    # Updater processes the ray launcher starts between the replay shards and the learner
    # (`Updater`; QT-Opt's Bellman updaters): (config) -> how many (0: none); and
    # (spec, config, net) -> what each runs. Inline, and with 0, the learner labels its own
    # batches in turn.
    updaters: Callable[[Any], int] = field(default=_no_updaters)
    make_updater: Callable[[EnvSpec, Any, nn.Module], Updater] | None = None
