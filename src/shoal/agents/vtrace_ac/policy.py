"""The V-trace family's actor side: sample actions and record the behaviour logits V-trace needs."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from shoal import ops
from shoal.agents.base import ActMode, Layout, Policy, PolicyStep, State, StepInputs
from shoal.agents.vtrace_ac.networks import VTraceNet
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.tree import map_tree


class VTracePolicy(Policy):
    """The behaviour policy μ: sampled actions, with their logits `[n, A]` as the extra
    `"logits"` (V-trace forms π/μ from them).

    With an LSTM the state is `core_h`, `core_c` `[n, H]`; the runtime records the state each
    step started from, so the learner can restart an unroll from its first step's state.
    `greedy` takes the most likely action.
    """

    def __init__(
        self,
        spec: EnvSpec,
        config: Any,
        net: VTraceNet,
        seed: int,
        layout: Layout | None = None,
    ) -> None:
        self.net = net
        self.generator = torch.Generator().manual_seed(seed)

    def initial_state(self, slots: np.ndarray) -> State:
        state = self.net.initial_state(len(slots))
        if state is None:
            return {}
        device = module_device(self.net)
        return {"core_h": state[0].to(device), "core_c": state[1].to(device)}

    @torch.inference_mode()
    def step(self, obs: Any, state: State, inputs: StepInputs, mode: ActMode) -> PolicyStep:
        device = module_device(self.net)
        first = torch.from_numpy(inputs.first).to(device)
        core = (state["core_h"], state["core_c"]) if state else None
        logits, _, new_core = self.net.unroll(
            map_tree(lambda x: torch.from_numpy(x).to(device)[None], obs), first[None], core
        )
        logits = logits[0].float().cpu()
        if mode == "greedy":
            actions = logits.argmax(-1)
        else:
            actions = ops.categorical_sample(logits, self.generator)
        new_state = {} if new_core is None else {"core_h": new_core[0], "core_c": new_core[1]}
        return PolicyStep(actions.numpy(), {"logits": logits.numpy()}, new_state)
