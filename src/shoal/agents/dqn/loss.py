"""DQN's loss: the value family's transition loss (`shoal.agents.value.loss`)."""

from shoal.agents.value.loss import LossResult, dqn_loss, td_errors

__all__ = ["LossResult", "dqn_loss", "td_errors"]
