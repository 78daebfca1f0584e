"""REINFORCE, the vanilla policy gradient (Williams 1992), on the actor-critic family library.

Every actor's envs act `unroll_length` steps with the learner's current weights (the family's
on-policy unroll queue); the learner takes one gradient step of `-log π(a_t|s_t) (G_t - b(s_t))`
on the batch, `G_t` the discounted reward-to-go to the end of the step's episode.

How a whole-episode return is formed from unrolls of a fixed length, which may cut an episode
(the envs of a vector run on across unrolls):

- with `baseline` (the default, a learned `V(s)` subtracted from `G_t`, Sutton & Barto 2018,
  Sec. 13.4): the steps of an episode the unroll cuts bootstrap from the baseline's value of the
  unroll's last observation, and a time-limit truncation from its final observation's value;
  every step teaches;
- without: those steps have no return and are left out of the loss, for good (the next unroll,
  acted by newer weights, teaches the episode's steps it holds if the episode ends in it);
  a time-limit truncation ends the return with the rewards got. `complete_fraction` logs the
  share of steps kept: near 1 when episodes are much shorter than `unroll_length`, 0 when
  none ends inside an unroll (the update then changes nothing).

The network (`ActorCritic`: categorical or Gaussian policy, value head), the policy
(`PPOPolicy`), the data path and the one-step learner (`OneStepLearner`) are the family's;
only the loss is REINFORCE's.
"""

from shoal.agents.actor_critic import PPOPolicy, make_networks, on_policy_data_path
from shoal.agents.base import Agent, Layout
from shoal.agents.pg.config import PGConfig
from shoal.agents.pg.learner import PGLearner
from shoal.data import DataPath
from shoal.envs.spec import EnvSpec


def make_data_path(spec: EnvSpec, config: PGConfig, layout: Layout) -> DataPath:
    """The family's on-policy unroll queue: one unroll of every actor per update."""
    return on_policy_data_path(spec, config, layout)  # reads only config.unroll_length


AGENT = Agent(
    name="pg",
    config_cls=PGConfig,
    make_networks=make_networks,
    make_policy=PPOPolicy,
    make_learner=PGLearner,
    make_data_path=make_data_path,
    # Read by the learner at every update, so PBT may change them in place.
    mutable=frozenset({"learning_rate", "entropy_coef", "value_coef", "gamma", "max_grad_norm"}),
)

__all__ = ["AGENT", "PGConfig"]
