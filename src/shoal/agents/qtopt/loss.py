"""QT-Opt's loss over a batch of transitions, composed from `shoal.ops` (Kalashnikov et al.
2018, "QT-Opt", arXiv:1806.10293, section 4.2, clipped double Q-learning with two lagged target
networks):

    a*  = CEM argmax_a' Q'_1(s', a')
    y   = r + discount · min(Q'_1(s', a*), Q'_2(s', a*))
    L   = ½ (Q(s, a) - y)²

with `discount = γ` (0 after a termination; a truncated episode bootstraps). `Q'_1` is the
Polyak average of `Q`, `Q'_2` a copy of `Q'_1` lagged `target_lag` steps. The paper's rewards
are 0/1 and its loss the cross-entropy of a sigmoid Q; here the rewards are any env's, so the
loss is the squared error. The loss is a batch mean.
"""

from __future__ import annotations

import torch

from shoal import ops
from shoal.agents.continuous import Transitions
from shoal.agents.qtopt.config import QTOptConfig
from shoal.agents.qtopt.networks import QFunction, cem_argmax


def bellman_targets(
    target1: QFunction, target2: QFunction, batch: Transitions, config: QTOptConfig
) -> torch.Tensor:
    """`y [B]`: the clipped double-Q target at CEM's argmax of the first target network."""
    with torch.no_grad():
        action, _ = cem_argmax(target1, batch.next_obs, config)
        q1_t = target1(batch.next_obs, action)
        q2_t = target2(batch.next_obs, action)
        return ops.clipped_double_q_target(batch.reward, batch.discount, q1_t, q2_t)


def q_loss(
    q: QFunction, batch: Transitions, targets: torch.Tensor
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The squared error of `Q(s, a)` to the targets, and metrics."""
    values = q(batch.obs, batch.action)
    loss = ops.value_loss(values, targets).mean()
    metrics = {"q_loss": loss.detach(), "q_mean": values.detach().mean()}
    return loss, metrics | {"target_mean": targets.mean()}
