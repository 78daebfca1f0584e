"""IMPALA's actor side: the V-trace family's behaviour policy (`shoal.agents.vtrace_ac`)."""

from shoal.agents.vtrace_ac.policy import VTracePolicy as IMPALAPolicy

__all__ = ["IMPALAPolicy"]
