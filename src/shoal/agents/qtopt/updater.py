"""QT-Opt's Bellman updater (Kalashnikov et al. 2018, section 4.3, "Bellman updaters"): the
clipped double-Q targets of sampled transitions, from copies of the learner's two lagged
target networks, which the learner publishes (`QTOptLearner.updater_weights`). On the ray
launcher `--agent.bellman-updaters N` processes run it between the replay shards and the
learner, which then only regresses Q onto the labelled batches; inline (and with 0) the learner
computes the same targets itself, in turn (`QTOptLearner.update`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import numpy as np
import torch

from shoal.agents.base import Weights
from shoal.agents.continuous import transitions
from shoal.agents.qtopt.config import QTOptConfig
from shoal.agents.qtopt.loss import bellman_targets
from shoal.agents.qtopt.networks import QTOptNet
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device

TARGET = "target"  # the label: y [B], float32
PREFIXES = ("target1.", "target2.")  # of the two networks' keys in `updater_weights`


def target_weights(target1: torch.nn.Module, target2: torch.nn.Module) -> Weights:
    """Both target networks' weights as one dict of CPU copies, keys prefixed."""
    out: Weights = {}
    for prefix, module in zip(PREFIXES, (target1, target2), strict=True):
        for key, value in module.state_dict().items():
            out[prefix + key] = value.detach().to("cpu", copy=True)
    return out


class BellmanUpdater:
    """Labels replay samples with `y = r + discount · min(Q'_1, Q'_2)(s', CEM argmax Q'_1)`.
    CEM draws its noise from torch's global generator, as the learner's in-turn targets do."""

    def __init__(self, spec: EnvSpec, config: QTOptConfig, net: QTOptNet) -> None:
        self.config = config
        torch.set_flush_denormal(True)  # as the learner: CEM's subnormal activations are slow
        self.target1 = copy.deepcopy(net.q).requires_grad_(False)
        self.target2 = copy.deepcopy(net.q).requires_grad_(False)

    def load_weights(self, weights: Weights) -> None:
        for prefix, module in zip(PREFIXES, (self.target1, self.target2), strict=True):
            part = {k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)}
            module.load_state_dict(part)

    def label(self, batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        data = transitions(batch, module_device(self.target1))
        targets = bellman_targets(self.target1, self.target2, data, self.config)
        return {**batch, TARGET: targets.cpu().numpy()}


def make_updater(spec: EnvSpec, config: QTOptConfig, net: QTOptNet) -> BellmanUpdater:
    return BellmanUpdater(spec, config, net)


def updaters(config: QTOptConfig) -> int:
    return config.bellman_updaters
