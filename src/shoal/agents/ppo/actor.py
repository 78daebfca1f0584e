"""PPO's actor side: sample actions and record their log-probabilities for the learner."""

from __future__ import annotations

import numpy as np
import torch

from shoal import ops
from shoal.agents.base import Weights
from shoal.agents.ppo.config import PPOConfig
from shoal.agents.ppo.networks import ActorCritic
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.tree import map_tree


class PPOPolicy:
    """Stochastic policy used while collecting rollouts.

    It keeps no per-env state, so an inference server may act for any rows of many actors'
    envs (central inference) and a double-buffered collector for part of the envs.
    """

    acts_per_env = True
    central_inference = True

    def __init__(self, spec: EnvSpec, config: PPOConfig, net: ActorCritic, seed: int) -> None:
        self.net = net
        self.version = 0
        self.generator = torch.Generator().manual_seed(seed)
        self.discrete = spec.discrete
        if not spec.discrete:
            self.low = spec.action_space.low.astype(np.float32)
            self.high = spec.action_space.high.astype(np.float32)

    @torch.inference_mode()
    def act(
        self, obs: np.ndarray, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        device = module_device(self.net)
        params = self.net.policy(map_tree(lambda x: torch.from_numpy(x).to(device), obs)).cpu()
        if self.discrete:
            actions = ops.categorical_sample(params, self.generator)
            log_prob = ops.categorical_log_prob(params, actions)
            chosen = actions.numpy()
            return chosen, {"log_prob": log_prob.numpy()}
        actions = ops.gaussian_sample(params, self.net.log_std.cpu(), self.generator)
        log_prob = ops.gaussian_log_prob(params, self.net.log_std.cpu(), actions)
        chosen = actions.numpy()
        # The env gets actions clipped to its bounds; the learner sees what the policy sampled.
        return np.clip(chosen, self.low, self.high), {
            "log_prob": log_prob.numpy(),
            "action": chosen,
        }

    def load_weights(self, weights: Weights, version: int) -> None:
        if version > self.version:
            self.net.load_state_dict(weights)
            self.version = version


class PPOEvalPolicy:
    """Policy for evaluation: the mode of the action distribution when deterministic."""

    def __init__(self, spec: EnvSpec, config: PPOConfig, net: ActorCritic, deterministic: bool):
        self.sampler = PPOPolicy(spec, config, net, seed=0)
        self.net = net
        self.deterministic = deterministic
        self.discrete = spec.discrete

    @torch.inference_mode()
    def act(self, obs: np.ndarray) -> np.ndarray:
        if not self.deterministic:
            return self.sampler.act(obs)[0]
        params = self.net.policy(map_tree(torch.from_numpy, obs))
        if self.discrete:
            return params.argmax(-1).numpy()
        return np.clip(params.numpy(), self.sampler.low, self.sampler.high)
