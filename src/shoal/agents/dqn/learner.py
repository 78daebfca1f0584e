"""DQN's learner: the value family's `QLearner` with the transition loss (its default)."""

from shoal.agents.value.learner import QLearner

DQNLearner = QLearner
"""One gradient step of `dqn_loss` per sampled batch, with a periodic or Polyak target."""

__all__ = ["DQNLearner"]
