"""PPO's network: the actor-critic family's (`shoal.agents.actor_critic.networks`)."""

from shoal.agents.actor_critic.networks import ActorCritic, check_fits, make_networks

__all__ = ["ActorCritic", "check_fits", "make_networks"]
