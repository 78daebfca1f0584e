"""A2C's loss: the actor-critic family's (`shoal.agents.actor_critic.loss`)."""

from shoal.agents.actor_critic.loss import LossSettings, actor_critic_loss

__all__ = ["LossSettings", "actor_critic_loss"]
