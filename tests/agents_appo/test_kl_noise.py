"""APPO's adaptive KL weight takes a measured KL that float noise put a hair below zero (two
near-equal policies) as the undershoot it is, instead of stopping the run."""

from __future__ import annotations

from typing import NamedTuple

import torch

from shoal.agents.appo import AGENT, APPOConfig
from shoal.envs import EnvSpec
from shoal.envs.toy import Countdown

SPEC = EnvSpec.from_env("countdown", Countdown())


class Measured(NamedTuple):
    loss: torch.Tensor
    metrics: dict[str, torch.Tensor]


def test_a_kl_of_float_noise_below_zero_halves_the_weight():
    config = APPOConfig(use_kl_loss=True, kl_coeff=1.0, target_update_period=1, hidden_sizes=(8,))
    learner = AGENT.make_learner(SPEC, config, AGENT.make_networks(SPEC, config))
    noise = Measured(torch.tensor(0.0), {"kl": torch.tensor(-6.4e-9)})
    learner.after_step(noise)
    assert learner.gradient_steps == 1 and float(learner.kl_coeff) == 0.5
    # A KL far above twice the target still raises it: the clamp only meets noise.
    learner.after_step(Measured(torch.tensor(0.0), {"kl": torch.tensor(1.0)}))
    assert float(learner.kl_coeff) == 0.75
