"""Agent57's networks: two recurrent Q-networks and Never Give Up's two novelty networks.

- `extrinsic`, `intrinsic`: R2D2's network (torso, LSTM, dueling head) each, separate
  parameters (Agent57, section 4.1: the extrinsic and intrinsic values are learned by separate
  networks), whose LSTM also sees the previous intrinsic reward (as log(1 + r), the reward
  spans orders of magnitude) and the one-hot mixture index j (NGU, section 3).
- `embedding`: the controllable state f(x) (32-d), trained by inverse dynamics: a classifier
  of a_t from (f(x_t), f(x_{t+1})) (NGU, section 2, "Embedding network").
- `rnd_target` (fixed, random) and `rnd_predictor`: random network distillation, the
  lifelong novelty err(x) = ||g^(x) - g(x)||^2 (Burda et al. 2018; NGU, section 2).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from shoal.agents.agent57.config import Agent57Config
from shoal.agents.value.recurrent import R2D2Net, check_fits
from shoal.envs.spec import EnvSpec
from shoal.nets.mlp import MLP
from shoal.nets.torso import torso_from_setting
from shoal.tree import map_tree


class _Features(nn.Sequential):
    """A torso of its own followed by a linear map to `size` features."""

    def __init__(self, spec: EnvSpec, config: Agent57Config, size: int, hidden: int = 0) -> None:
        torso = torso_from_setting(
            spec.observation_space, config.torso, config.hidden_sizes, config.activation
        )
        width = int(torso.out_features)
        layers: list[nn.Module] = [torso]
        if hidden:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        super().__init__(*layers, nn.Linear(width, size))


class Agent57Net(nn.Module):
    """Everything the actors and the learner need; `state_dict` is what the learner publishes."""

    def __init__(self, spec: EnvSpec, config: Agent57Config) -> None:
        super().__init__()
        self.num_actions = spec.num_actions if spec.discrete else 0
        self.num_mixtures = config.num_mixtures
        extra = 1 + config.num_mixtures
        self.extrinsic = R2D2Net(spec, config, extra_inputs=extra)
        self.intrinsic = R2D2Net(spec, config, extra_inputs=extra)
        self.embedding = _Features(spec, config, config.embedding_size)
        self.inverse_dynamics = MLP(2 * config.embedding_size, (128,), "relu")
        self.inverse_logits = nn.Linear(128, self.num_actions)
        self.rnd_target = _Features(spec, config, config.rnd_size).requires_grad_(False)
        self.rnd_predictor = _Features(spec, config, config.rnd_size, hidden=128)

    def extra_inputs(self, prev_intrinsic: torch.Tensor, mixture: torch.Tensor) -> torch.Tensor:
        """The Q-networks' extra inputs `[T, B, 1 + N]` from `[T, B]` rewards and indices."""
        scaled = torch.log1p(prev_intrinsic.clamp(min=0.0)).unsqueeze(-1)
        one_hot = nn.functional.one_hot(mixture.long(), self.num_mixtures).to(scaled.dtype)
        return torch.cat([scaled, one_hot], dim=-1)

    def action_logits(self, f_t: torch.Tensor, f_tp1: torch.Tensor) -> torch.Tensor:
        """Inverse dynamics: logits `[B, A]` of the action that led from f_t to f_tp1."""
        return self.inverse_logits(self.inverse_dynamics(torch.cat([f_t, f_tp1], dim=-1)))

    def rnd_error(self, obs: Any) -> torch.Tensor:
        """Lifelong novelty err(x) `[B]`: the predictor's squared error on the random target."""
        with torch.no_grad():
            target = self.rnd_target(obs)
        return (self.rnd_predictor(obs) - target).square().sum(-1)


def make_networks(spec: EnvSpec, config: Agent57Config) -> Agent57Net:
    net = Agent57Net(spec, config)
    check_fits(net.extrinsic, spec)
    with torch.no_grad():  # the novelty networks take the observations too
        obs = map_tree(torch.as_tensor, spec.sample_obs(2))
        net.rnd_error(obs)
        net.embedding(obs)
    return net
