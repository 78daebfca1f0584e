"""The actor-critic family's policy (PPO's, A2C's, A3C's): sample actions and record their
log-probabilities for the learner."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from shoal import ops
from shoal.agents.actor_critic.networks import ActorCritic
from shoal.agents.base import ActMode, Layout, Policy, PolicyStep, State, StepInputs
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.tree import map_tree


class PPOPolicy(Policy):
    """The stochastic policy π: sampled actions and their log-probabilities.

    Continuous actions are clipped to the env's bounds for the env, while the learner sees what
    the policy sampled. `greedy` takes the most likely action (the Gaussian's mean).

    With an LSTM core (`use_lstm`) the state is the network's `CoreState` (`core_h`, `core_c`
    and, with a value torso of its own, `value_core_h`, `value_core_c`, each `[n, H]`); the
    runtime records the state each step started from, so the learner can restart each env's
    sequence from its first step's state, and carries it for evaluation and `shoal.load`.
    """

    def __init__(
        self,
        spec: EnvSpec,
        config: Any,
        net: ActorCritic,
        seed: int,
        layout: Layout | None = None,
    ) -> None:
        self.net = net
        self.generator = torch.Generator().manual_seed(seed)
        self.discrete = spec.discrete
        if not spec.discrete:
            self.low = spec.action_space.low.astype(np.float32)
            self.high = spec.action_space.high.astype(np.float32)

    def initial_state(self, slots: np.ndarray) -> State:
        return self.net.initial_state(len(slots))  # on the network's device; {} without a core

    @torch.inference_mode()
    def step(self, obs: Any, state: State, inputs: StepInputs, mode: ActMode) -> PolicyStep:
        device = module_device(self.net)
        obs = map_tree(lambda x: torch.from_numpy(x).to(device), obs)
        new_state: State = {}
        if self.net.recurrent:
            first = torch.from_numpy(inputs.first).to(device)[None]
            unrolled = self.net.unroll(map_tree(lambda x: x[None], obs), first, state)
            params, new_state = unrolled.params[0].cpu(), unrolled.state
        else:
            params = self.net.policy(obs).cpu()
        if mode == "greedy":
            if self.discrete:
                return PolicyStep(params.argmax(-1).numpy(), state=new_state)
            mean = params.numpy()
            return PolicyStep(mean, env_action=np.clip(mean, self.low, self.high), state=new_state)
        if self.discrete:
            actions = ops.categorical_sample(params, self.generator)
            log_prob = ops.categorical_log_prob(params, actions)
            return PolicyStep(actions.numpy(), {"log_prob": log_prob.numpy()}, new_state)
        log_std = self.net.log_std.cpu()
        actions = ops.gaussian_sample(params, log_std, self.generator)
        log_prob = ops.gaussian_log_prob(params, log_std, actions)
        chosen = actions.numpy()
        return PolicyStep(
            chosen,
            {"log_prob": log_prob.numpy()},
            new_state,
            env_action=np.clip(chosen, self.low, self.high),
        )
