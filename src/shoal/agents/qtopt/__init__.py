"""QT-Opt (Kalashnikov et al. 2018, "QT-Opt: Scalable Deep Reinforcement Learning for
Vision-Based Robotic Manipulation", arXiv:1806.10293): a continuous-action Q-function with no
actor, maximised over actions by the cross-entropy method (`shoal.ops.cem_maximize`: 64
samples, 2 iterations, 6 elites), learnt with clipped double Q from two lagged target networks,
from the continuous family's replay, optionally seeded from a Minari dataset (`--dataset`) or
learning from it alone (`--agent.offline`); on ray, optionally with the paper's Bellman-updater
processes computing the targets (`--agent.bellman-updaters`).
"""

from shoal.agents.base import Agent
from shoal.agents.qtopt.actor import QTOptPolicy
from shoal.agents.qtopt.config import QTOptConfig
from shoal.agents.qtopt.data import make_data_path
from shoal.agents.qtopt.learner import QTOptLearner
from shoal.agents.qtopt.networks import QTOptNet, make_networks
from shoal.agents.qtopt.updater import BellmanUpdater, make_updater, updaters

AGENT = Agent(
    name="qtopt",
    config_cls=QTOptConfig,
    make_networks=make_networks,
    make_policy=QTOptPolicy,
    make_learner=QTOptLearner,
    make_data_path=make_data_path,
    updaters=updaters,
    make_updater=make_updater,
)

__all__ = ["AGENT", "BellmanUpdater", "QTOptConfig", "QTOptLearner", "QTOptNet", "QTOptPolicy"]
