"""Experience replay: sum trees, prioritised sampling, frame-deduplicating transition replay,
sequence replay, n-step and sequence assembly, and samples-per-insert rate limiting.

Papers: Schaul et al. 2016 (prioritised replay), Horgan et al. 2018 (Ape-X: actor-side n-step
transitions and initial priorities), Cassirer et al. 2021 (Reverb's rate limiters). This package
sits below the agents and imports only numpy, the standard library and `shoal.errors`.

Sequence replay for R2D2 (Kapturowski et al. 2019) reuses these parts: overlapping
fixed-length sequences (with burn-in) as the sampled items, their stored recurrent state, and
priorities `η max_t |δ_t| + (1 - η) mean_t |δ_t|` fed to the same `PrioritizedSampler`
(`shoal.replay.sequence`).
"""

from shoal.replay.buffer import TransitionReplay
from shoal.replay.nstep import NStepAccumulator
from shoal.replay.prioritized import LinearSchedule, PrioritizedSampler
from shoal.replay.rate_limiter import RateLimiter
from shoal.replay.sequence import SequenceReplay, sequence_fields
from shoal.replay.sequence_accumulator import SequenceAccumulator
from shoal.replay.sum_tree import MinTree, SumTree

__all__ = [
    "LinearSchedule",
    "MinTree",
    "NStepAccumulator",
    "PrioritizedSampler",
    "RateLimiter",
    "SequenceAccumulator",
    "SequenceReplay",
    "SumTree",
    "TransitionReplay",
    "sequence_fields",
]
