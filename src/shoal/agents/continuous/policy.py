"""The continuous-control family's acting (SAC's, TD3's and DDPG's): a warm-up of uniform random
actions, actions in [-1, 1] rescaled to the env's bounds, loading the actor's weights alone, and
exploration whose state the runtime keeps per row (DDPG's Ornstein-Uhlenbeck noise)."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from shoal.agents.base import ActMode, Layout, Policy, PolicyStep, State, StepInputs, Weights
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.tree import map_tree

__all__ = ["ActorNet", "BoundedActionPolicy", "WarmUpSettings"]


class WarmUpSettings(Protocol):
    learning_starts: int


class ActorNet(Protocol):
    actor: nn.Module


class BoundedActionPolicy(Policy):
    """Acts with the network's `actor` only.

    `train`: uniform random actions while `steps x total_envs < learning_starts` (each row's
    share of the run's first agent steps, SB3's `learning_starts`), then `actions(..., "train")`.
    The recorded action is in [-1, 1]; the env gets it rescaled to its bounds. No state by
    default; a policy whose exploration keeps some per row (a noise process) declares it in
    `initial_state` and acts through `actions_with_state`.
    """

    def __init__(
        self,
        spec: EnvSpec,
        config: WarmUpSettings,
        net: ActorNet,
        seed: int,
        layout: Layout | None = None,
    ) -> None:
        self.config, self.net = config, net
        self.layout = layout or Layout()
        self.rng = np.random.default_rng(seed)
        self.shape = spec.action_shape
        self.low = spec.action_space.low.astype(np.float32)
        self.high = spec.action_space.high.astype(np.float32)

    def actions(self, obs: torch.Tensor, mode: ActMode) -> np.ndarray:
        """Actions in [-1, 1], `[B, D]`, of the actor at `obs` (on the network's device)."""
        raise NotImplementedError

    def actions_with_state(
        self, obs: torch.Tensor, state: State, mode: ActMode
    ) -> tuple[np.ndarray, State]:
        """Actions as `actions` gives them, and the rows' new state (laid out as
        `initial_state`'s). The default, for policies without state: `actions(obs, mode)` and
        the state unchanged."""
        return self.actions(obs, mode), state

    def load_weights(self, weights: Weights) -> None:
        """The learner publishes the actor's weights only (`SACLearner.weights`)."""
        self.net.actor.load_state_dict(weights)

    @torch.inference_mode()
    def step(self, obs: Any, state: State, inputs: StepInputs, mode: ActMode) -> PolicyStep:
        n = len(inputs.slot)
        warm = np.zeros(n, bool)
        if mode == "train":
            warm = inputs.steps * self.layout.total_envs < self.config.learning_starts
        if warm.all():  # the network is not needed yet; the state waits with it
            action = self.rng.uniform(-1.0, 1.0, (n, *self.shape)).astype(np.float32)
            return PolicyStep(action, state=state, env_action=self.to_env(action))
        device = module_device(self.net)
        obs = map_tree(lambda x: torch.from_numpy(x).to(device), obs)
        action, state = self.actions_with_state(obs, state, mode)
        action = action.reshape(n, *self.shape)
        if warm.any():
            count = int(warm.sum())
            action[warm] = self.rng.uniform(-1.0, 1.0, (count, *self.shape))
        return PolicyStep(action, state=state, env_action=self.to_env(action))

    def to_env(self, action: np.ndarray) -> np.ndarray:
        """Actions in [-1, 1] rescaled to the env's bounds `[low, high]`."""
        scaled = self.low + (action + 1.0) * (0.5 * (self.high - self.low))
        return np.clip(scaled, self.low, self.high)
