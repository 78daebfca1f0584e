"""IMPALA (Espeholt et al. 2018): an actor-critic that learns off-policy with V-trace targets.

The network, behaviour policy, batch, loss terms, learner and data path are the V-trace
family's (`shoal.agents.vtrace_ac`), shared with APPO; IMPALA gives its policy term (the V-trace
policy gradient, `loss.py`) and the learner that steps on it once per batch (`learner.py`).
"""

from shoal.agents.impala.config import IMPALAConfig
from shoal.agents.impala.learner import IMPALALearner
from shoal.agents.vtrace_ac import vtrace_agent

AGENT = vtrace_agent("impala", IMPALAConfig, IMPALALearner)

__all__ = ["AGENT", "IMPALAConfig"]
