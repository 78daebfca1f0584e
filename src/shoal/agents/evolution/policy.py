"""The acting side of ES and ARS: each env acts with its own perturbation of θ.

A perturbation is the row's recurrent state, made by `initial_state` when an episode starts:
an offset into the shared noise table, a sign, and the learner's version of θ it perturbs.
The runtime holds it per env and records it with every step (`Unroll.extras`), so the adder
reads off each finished episode's perturbation beside its return. Mirrored sampling: an env
that evaluated `θ + σ ε` evaluates `θ - σ ε` next, while θ has not changed in between.
Evaluation (`greedy`, `sample`) acts with θ itself.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import torch

from shoal.agents.base import ActMode, Layout, Policy, PolicyStep, State, StepInputs
from shoal.agents.evolution.networks import PerturbableMLP
from shoal.agents.evolution.noise import noise_table, perturbations
from shoal.envs.spec import EnvSpec

__all__ = ["NoiseSettings", "PerturbedPolicy"]


class NoiseSettings(Protocol):
    noise_std: float
    noise_table_size: int
    noise_seed: int


class PerturbedPolicy(Policy):
    """Deterministic: the argmax of the outputs (discrete) or the outputs clipped to the
    bounds (continuous), of θ perturbed per episode while training."""

    def __init__(
        self,
        spec: EnvSpec,
        config: NoiseSettings,
        net: PerturbableMLP,
        seed: int,
        layout: Layout | None = None,
    ) -> None:
        self.net, self.sigma = net, float(config.noise_std)
        self.noise = noise_table(config.noise_seed, config.noise_table_size)
        if len(self.noise) < net.num_params:
            raise ValueError(
                f"noise_table_size={len(self.noise)} is smaller than the network's "
                f"{net.num_params} parameters; set --agent.noise-table-size larger."
            )
        self.rng = np.random.default_rng(seed)
        self.discrete = spec.discrete
        if not spec.discrete:
            self.low = spec.action_space.low.astype(np.float32)
            self.high = spec.action_space.high.astype(np.float32)
        self._mirror: dict[int, tuple[int, int]] = {}  # slot -> (offset, version) to negate
        self._params_key: tuple | None = None  # what `_params` was built from
        self._params = torch.empty(0)

    def initial_state(self, slots: np.ndarray) -> State:
        version = int(self.net.iteration)
        last = len(self.noise) - self.net.num_params
        offsets, signs = [], []
        for slot in np.asarray(slots).tolist():
            due = self._mirror.pop(slot, None)
            if due is not None and due[1] == version:
                offsets.append(due[0])
                signs.append(-1.0)
            else:
                offset = int(self.rng.integers(0, last + 1))
                self._mirror[slot] = (offset, version)
                offsets.append(offset)
                signs.append(1.0)
        n = len(offsets)
        return {
            "noise_offset": torch.tensor(offsets, dtype=torch.int64).reshape(n),
            "noise_sign": torch.tensor(signs, dtype=torch.float32).reshape(n),
            "noise_version": torch.full((n,), version, dtype=torch.int64),
        }

    def _perturbed(self, state: State) -> torch.Tensor:
        """θ + σ·sign·ε per row `[n, P]`. An episode keeps its perturbation and θ changes once
        per update, so the vectors are rebuilt only when either has changed since the last step."""
        offsets, signs = state["noise_offset"].numpy(), state["noise_sign"].numpy()
        key = (self.net.fingerprint(), offsets.tobytes(), signs.tobytes())
        if key != self._params_key:
            eps = torch.from_numpy(perturbations(self.noise, offsets, self.net.num_params))
            sign = torch.from_numpy(signs).unsqueeze(1)
            self._params = self.net.flat_params() + self.sigma * sign * eps
            self._params_key = key
        return self._params

    @torch.inference_mode()
    def step(self, obs: Any, state: State, inputs: StepInputs, mode: ActMode) -> PolicyStep:
        x = torch.from_numpy(np.asarray(obs, np.float32))
        out = self.net.batched(x, self._perturbed(state)) if mode == "train" else self.net(x)
        if self.discrete:
            return PolicyStep(out.argmax(-1).numpy(), state=state)
        action = out.numpy().reshape(len(x), *self.low.shape)
        return PolicyStep(action, state=state, env_action=np.clip(action, self.low, self.high))
