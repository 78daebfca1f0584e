"""IMPALA's actor side: sample actions, record the behaviour logits and the core state used."""

from __future__ import annotations

import numpy as np
import torch

from shoal import ops
from shoal.agents.base import Weights
from shoal.agents.impala.config import IMPALAConfig
from shoal.agents.impala.networks import IMPALANet
from shoal.envs.spec import EnvSpec
from shoal.nets import LSTMState, module_device
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

    Central inference: an inference server acts for many actors' envs at once, each env a
    fixed row of the state; it passes `rows` (slot ids, any subset, in any order) to `act` and
    `episode_ended`, and the state grows to the highest row seen.
    """

    central_inference = True

    def __init__(self, spec: EnvSpec, config: IMPALAConfig, net: IMPALANet, seed: int) -> None:
        self.net = net
        self.version = 0
        self.generator = torch.Generator().manual_seed(seed)
        # Feed-forward: no per-env state, so a double-buffered collector may act on part of the
        # envs. With an LSTM every call must cover every env, in order.
        self.acts_per_env = not net.recurrent
        self._state: LSTMState | None = None  # [R, H] each, on the network's device
        self._first = np.zeros(0, bool)  # [R]: the row's next observation starts an episode

    def act(
        self, obs: np.ndarray, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        logits, extras = self.step(obs, rows)
        with torch.inference_mode():
            actions = ops.categorical_sample(logits, self.generator)
        return actions.numpy(), extras

    @torch.inference_mode()
    def step(
        self, obs: np.ndarray, rows: np.ndarray | None = None
    ) -> tuple[torch.Tensor, dict[str, np.ndarray]]:
        """Advance the core one step: logits `[E, A]` (on CPU) and the extras `act` returns."""
        index = self._rows(leaves(obs)[0].shape[0], rows)
        device = module_device(self.net)
        first_np = self._first[index]
        first = torch.from_numpy(first_np).to(device)
        extras: dict[str, np.ndarray] = {"first": first_np}
        state = None
        if self._state is not None:
            # Zeroed here as well as in the core, so the recorded state is the one this step used.
            h, c = (torch.where(first[:, None], 0.0, s[index]) for s in self._state)
            state = (h, c)
            extras["core_h"], extras["core_c"] = h.cpu().numpy(), c.cpu().numpy()
        logits, _, new_state = self.net.unroll(
            map_tree(lambda x: torch.from_numpy(x).to(device)[None], obs), first[None], state
        )
        if self._state is not None and new_state is not None:
            for stored, new in zip(self._state, new_state, strict=True):
                stored[index] = new
        extras["logits"] = logits[0].float().cpu().numpy()
        self._first[index] = False
        return logits[0].cpu(), extras

    def _rows(self, width: int, rows: np.ndarray | None) -> np.ndarray:
        """Row ids of this call, growing (or, without `rows`, resizing) the per-row state."""
        if rows is None:
            if width != self._first.shape[0]:
                self._first = np.zeros(0, bool)
                self._state = None
            rows = np.arange(width)
        rows = np.asarray(rows, np.int64)
        needed = int(rows.max()) + 1 if rows.size else 0
        have = self._first.shape[0]
        if needed > have:
            self._first = np.concatenate([self._first, np.ones(needed - have, bool)])
            extra = self.net.initial_state(needed - have)
            if extra is not None:
                device = module_device(self.net)
                extra = tuple(s.to(device) for s in extra)
                old = self._state
                self._state = (
                    extra
                    if old is None
                    else tuple(  # type: ignore[assignment]
                        torch.cat([o, e]) for o, e in zip(old, extra, strict=True)
                    )
                )
        return rows

    def episode_ended(self, mask: np.ndarray, rows: np.ndarray | None = None) -> None:
        """`mask [E]` bool (terminated | truncated): these envs start afresh at the next `act`."""
        mask = np.asarray(mask, bool)
        if rows is None:
            if self._first.shape[0] == 0:
                return  # nothing acted yet: every env starts afresh anyway
            if mask.shape != self._first.shape:
                raise ValueError(
                    f"episode_ended got a mask of shape {mask.shape}; the policy acts for "
                    f"{self._first.shape[0]} envs"
                )
            self._first |= mask
            return
        index = self._rows(mask.shape[0], rows)
        self._first[index] |= mask

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
