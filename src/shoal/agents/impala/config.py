"""IMPALA hyperparameters (Espeholt et al. 2018, arXiv:1802.01561)."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.vtrace_ac.config import VTraceConfig


@dataclass(frozen=True, kw_only=True)
class IMPALAConfig(VTraceConfig):
    """IMPALA's settings: the V-trace family's section (`VTraceConfig`), whose defaults are
    IMPALA's. The paper trains with RMSProp; shoal uses its flat-buffer `Adam`."""
