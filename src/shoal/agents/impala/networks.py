"""IMPALA's network: the V-trace family's (`shoal.agents.vtrace_ac`), under IMPALA's names."""

from shoal.agents.vtrace_ac.networks import VTraceNet as IMPALANet
from shoal.agents.vtrace_ac.networks import check_fits, make_networks

__all__ = ["IMPALANet", "check_fits", "make_networks"]
