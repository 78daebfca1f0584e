"""DQN's actor side: epsilon-greedy acting, and the initial priorities of its transitions.

Ape-X (Horgan et al. 2018) has each actor compute the initial priorities `|δ|` of the n-step
transitions it assembles with its own copy of the network (as both online and target), so new
experience enters replay with an informed priority rather than the maximum.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from shoal.agents.base import ActMode, Layout, Policy, PolicyStep, State, StepInputs
from shoal.agents.value.config import DQNConfig
from shoal.agents.value.exploration import epsilon_greedy
from shoal.agents.value.loss import categorical_terms, quantile_terms, td_errors
from shoal.agents.value.networks import QNet
from shoal.envs.spec import EnvSpec
from shoal.nets import mean_weights, module_device
from shoal.tree import map_tree


class DQNPolicy(Policy):
    """Epsilon-greedy on Q. While training, env slot s (actor `s // E`, whose actor has taken
    `steps * E` agent steps) explores at `config.epsilons`; `sample` uses `eval_epsilon` and
    `greedy` none. A noisy network (`config.noisy`) acts with new noise at each training step
    (Fortunato et al. 2018) and with its mean weights in `sample` and `greedy`. Where the
    observation carries an action mask, the greedy and the random actions are legal ones."""

    def __init__(
        self,
        spec: EnvSpec,
        config: DQNConfig,
        net: QNet,
        seed: int,
        layout: Layout | None = None,
    ) -> None:
        self.config, self.net = config, net
        self.layout = layout or Layout()
        self.rng = np.random.default_rng(seed)

    def apply_settings(self, config: DQNConfig) -> None:
        """New exploration rates (PBT), read by every step from now on."""
        self.config = config

    def exploration_rates(self, inputs: StepInputs, mode: ActMode) -> np.ndarray:
        """The epsilon of each row of a step in `mode`."""
        if mode != "train":
            rate = self.config.eval_epsilon if mode == "sample" else 0.0
            return np.full(len(inputs.slot), rate)
        per_actor = self.layout.envs_per_actor
        return self.config.epsilons(
            inputs.steps * per_actor, inputs.slot // per_actor, self.layout.actors
        )

    @torch.inference_mode()
    def step(self, obs: Any, state: State, inputs: StepInputs, mode: ActMode) -> PolicyStep:
        device = module_device(self.net)
        batch = map_tree(lambda x: torch.from_numpy(x).to(device), obs)
        if mode == "train":
            q = self.net(batch)  # noisy layers draw new noise for this step
        else:
            with mean_weights(self.net):  # greedy and sample evaluate the noisy layers' means
                q = self.net(batch)
        rates = self.exploration_rates(inputs, mode)
        return PolicyStep(epsilon_greedy(q, obs, rates, self.rng))


@torch.inference_mode()
def initial_priorities(net: QNet, config: DQNConfig, data: Mapping[str, np.ndarray]) -> np.ndarray:
    """`|δ| + ε` of each transition under the acting weights (`net` as its own target); the KL
    divergence of the categorical loss + ε when distributional (Rainbow's priority), the
    quantile Huber loss + ε when quantile."""
    if config.distributional:
        errors = categorical_terms(net, net, data, config).kl.clamp(min=0.0)
    elif config.quantile:
        errors = quantile_terms(net, net, data, config).loss
    else:
        errors = td_errors(net, net, data, config).abs()
    return (errors + config.priority_eps).cpu().numpy().astype(np.float32)
