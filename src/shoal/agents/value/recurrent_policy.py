"""R2D2's actor side: epsilon-greedy acting with an LSTM that sees the previous action and reward.

Each row's state is its LSTM `core_h`, `core_c` `[H]`; the runtime records the state each step
started from (zero at an episode's first step), which sequences store (Kapturowski et al. 2019,
section 3, "stored state"), and feeds back each row's previous action and reward.

Exploration (Ape-X, Horgan et al. 2018; R2D2 section 2.3): actor i of N explores with
`apex_epsilon^(1 + apex_alpha i / (N - 1))`. With `exploration="per_env"` (the default) the rate
is spread over every env of every actor (env slot s of all `N E` envs is number s), so a single
actor stepping many envs explores at many rates too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from shoal.agents.base import ActMode, Layout, Policy, PolicyStep, State, StepInputs
from shoal.agents.value.exploration import epsilon_greedy, exploration_rates
from shoal.agents.value.recurrent import R2D2Net
from shoal.agents.value.recurrent_config import R2D2Config
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.tree import map_tree


class R2D2Policy(Policy):
    """Epsilon-greedy on the recurrent Q-network; `sample` explores at `eval_epsilon`, `greedy`
    not at all."""

    def __init__(
        self,
        spec: EnvSpec,
        config: R2D2Config,
        net: R2D2Net,
        seed: int,
        layout: Layout | None = None,
    ) -> None:
        self.config, self.net = config, net
        self.layout = layout or Layout()
        self.rng = np.random.default_rng(seed)

    def initial_state(self, slots: np.ndarray) -> State:
        h, c = self.net.initial_state(len(slots))
        device = module_device(self.net)
        return {"core_h": h.to(device), "core_c": c.to(device)}

    def exploration_rates(self, slots: np.ndarray, mode: ActMode) -> np.ndarray:
        """The epsilon each env slot acts with in `mode`."""
        return exploration_rates(self.config, self.layout, slots, mode)

    @torch.no_grad()
    def q_values(self, obs: Any, state: State, inputs: StepInputs) -> tuple[torch.Tensor, State]:
        """One step of the LSTM for n rows: Q-values `[n, A]` (CPU) and the new state."""
        device = module_device(self.net)
        q, (h, c) = self.net.unroll(
            map_tree(lambda x: torch.from_numpy(x).to(device)[None], obs),
            torch.from_numpy(inputs.prev_action).to(device)[None],
            torch.from_numpy(inputs.prev_reward).to(device)[None],
            torch.from_numpy(inputs.first).to(device)[None],
            (state["core_h"], state["core_c"]),
        )
        return q[0].cpu(), {"core_h": h, "core_c": c}

    def step(self, obs: Any, state: State, inputs: StepInputs, mode: ActMode) -> PolicyStep:
        q, new_state = self.q_values(obs, state, inputs)
        rates = self.exploration_rates(inputs.slot, mode)
        return PolicyStep(epsilon_greedy(q, obs, rates, self.rng), state=new_state)
