"""R2D2's learner: the value family's `QLearner` with the sequence loss.

Everything that is not the loss (a target network copied every `target_update_period` gradient
steps, Adam, priorities handed back) is `QLearner`'s (`shoal.agents.value.learner`).
"""

from __future__ import annotations

from shoal.agents.value import QLearner
from shoal.agents.value.recurrent import R2D2Net
from shoal.agents.value.recurrent_config import R2D2Config
from shoal.agents.value.sequence_loss import r2d2_loss
from shoal.envs.spec import EnvSpec


class R2D2Learner(QLearner):
    """`QLearner` on sequences: `update(sample)` takes a replay sample of sequences."""

    def __init__(self, spec: EnvSpec, config: R2D2Config, net: R2D2Net) -> None:
        super().__init__(spec, config, net, loss=r2d2_loss)
