"""PPO's actor side: the actor-critic family's policy (`shoal.agents.actor_critic.policy`)."""

from shoal.agents.actor_critic.policy import PPOPolicy

__all__ = ["PPOPolicy"]
