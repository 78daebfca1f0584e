"""IMPALA's actor side: sample actions, record the behaviour logits and the core state used."""

from __future__ import annotations

import numpy as np
import torch

from shoal import ops
from shoal.agents.base import Weights
from shoal.agents.impala.config import IMPALAConfig
from shoal.agents.impala.networks import IMPALANet
from shoal.envs.spec import EnvSpec
from shoal.nets import LSTMState
from shoal.tree import leaves, map_tree


class IMPALAPolicy:
    """Stochastic behaviour policy μ for E environments.

    `act(obs [E, ...]) -> (actions [E], extras)`, extras holding `"logits"` `[E, A]` float32
    (what V-trace needs to form π/μ), `"first"` `[E]` bool (this observation starts an episode)
    and, with an LSTM, `"core_h"`, `"core_c"` `[E, H]`: the state the core started this step
    from, so the learner can restart an unroll from its first step's state.

    With an LSTM the policy keeps each env's core state between calls; whoever steps the envs
    must call `episode_ended(terminated | truncated)` after every step, so the next `act`
    starts those envs from a zero state. A change in E starts every env afresh.
    """

    def __init__(self, spec: EnvSpec, config: IMPALAConfig, net: IMPALANet, seed: int) -> None:
        self.net = net
        self.version = 0
        self.generator = torch.Generator().manual_seed(seed)
        # Feed-forward: no per-env state, so a double-buffered collector may act on part of the
        # envs. With an LSTM every call must cover every env, in order.
        self.acts_per_env = not net.recurrent
        self._state: LSTMState | None = None
        self._first: np.ndarray | None = None  # [E] bool: the next observation starts an episode

    def act(self, obs: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        logits, extras = self.step(obs)
        with torch.inference_mode():
            actions = ops.categorical_sample(logits, self.generator)
        return actions.numpy(), extras

    @torch.inference_mode()
    def step(self, obs: np.ndarray) -> tuple[torch.Tensor, dict[str, np.ndarray]]:
        """Advance the core one step: logits `[E, A]` and the extras `act` returns."""
        width = leaves(obs)[0].shape[0]
        if self._first is None or self._first.shape[0] != width:
            self._first = np.ones(width, bool)
            self._state = self.net.initial_state(width)
        first = torch.from_numpy(self._first)
        extras: dict[str, np.ndarray] = {"first": self._first}
        state = self._state
        if state is not None:
            # Zeroed here as well as in the core, so the recorded state is the one this step used.
            h, c = (torch.where(first[:, None], 0.0, s) for s in state)
            state = (h, c)
            extras["core_h"], extras["core_c"] = h.numpy(), c.numpy()
        logits, _, self._state = self.net.unroll(
            map_tree(lambda x: torch.from_numpy(x)[None], obs), first[None], state
        )
        extras["logits"] = logits[0].float().numpy()
        self._first = np.zeros(width, bool)
        return logits[0], extras

    def episode_ended(self, mask: np.ndarray) -> None:
        """`mask [E]` bool (terminated | truncated): these envs start afresh at the next `act`."""
        if self._first is None:
            return  # nothing acted yet: every env starts afresh anyway
        mask = np.asarray(mask, bool)
        if mask.shape != self._first.shape:
            raise ValueError(
                f"episode_ended got a mask of shape {mask.shape}; the policy acts for "
                f"{self._first.shape[0]} envs"
            )
        self._first = self._first | mask

    def load_weights(self, weights: Weights, version: int) -> None:
        if version > self.version:
            self.net.load_state_dict(weights)
            self.version = version


class IMPALAEvalPolicy:
    """Policy for evaluation: the most likely action when deterministic, else a sample.

    With an LSTM, the state is carried between calls like `IMPALAPolicy`'s; the caller must call
    `episode_ended(terminated | truncated)` after each step, or a new episode starts from the
    previous one's state.
    """

    def __init__(
        self, spec: EnvSpec, config: IMPALAConfig, net: IMPALANet, deterministic: bool
    ) -> None:
        self.sampler = IMPALAPolicy(spec, config, net, seed=0)
        self.net = net
        self.deterministic = deterministic

    def act(self, obs: np.ndarray) -> np.ndarray:
        if not self.deterministic:
            return self.sampler.act(obs)[0]
        logits, _ = self.sampler.step(obs)
        return logits.argmax(-1).numpy()

    def episode_ended(self, mask: np.ndarray) -> None:
        self.sampler.episode_ended(mask)
