"""Behavioural cloning's acting policy: the cloned policy, sampled or greedy."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from shoal import ops
from shoal.agents.base import ActMode, Layout, Policy, PolicyStep, State, StepInputs
from shoal.agents.bc.config import BCConfig
from shoal.agents.bc.networks import BCNet
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.tree import map_tree


class BCPolicy(Policy):
    """`greedy` takes the most likely action (the Gaussian's mean); `train` and `sample` draw
    from the cloned distribution. Continuous actions are clipped to the env's bounds."""

    def __init__(
        self, spec: EnvSpec, config: BCConfig, net: BCNet, seed: int, layout: Layout | None = None
    ) -> None:
        self.net = net
        self.generator = torch.Generator().manual_seed(seed)
        self.discrete = spec.discrete
        if not spec.discrete:
            self.low = spec.action_space.low.astype(np.float32)
            self.high = spec.action_space.high.astype(np.float32)

    @torch.inference_mode()
    def step(self, obs: Any, state: State, inputs: StepInputs, mode: ActMode) -> PolicyStep:
        device = module_device(self.net)
        params = self.net(map_tree(lambda x: torch.from_numpy(x).to(device), obs)).cpu()
        if self.discrete:
            if mode == "greedy":
                return PolicyStep(params.argmax(-1).numpy())
            return PolicyStep(ops.categorical_sample(params, self.generator).numpy())
        if mode == "greedy":
            actions = params.numpy()
        else:
            log_std = self.net.log_std
            assert log_std is not None
            actions = ops.gaussian_sample(params, log_std.cpu(), self.generator).numpy()
        return PolicyStep(actions, env_action=np.clip(actions, self.low, self.high))
