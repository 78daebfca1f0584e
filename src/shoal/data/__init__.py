"""Data paths: unrolls, the tables between actors and the learner, and the adders that fill them.

This package sits between the agents (which build their data path) and the replay package
(whose buffers and rate limiter the tables hold); the runtime places what it builds.
"""

from shoal.data.adders import NStepAdder, SequenceAdder
from shoal.data.base import (
    Adder,
    Batch,
    DataPath,
    Inserter,
    Layout,
    PassThrough,
    Table,
    sum_stats,
)
from shoal.data.queue import UnrollQueue
from shoal.data.table import ReplayTable, replay_data_path
from shoal.data.unroll import Unroll, concat_unrolls

__all__ = [
    "Adder",
    "Batch",
    "DataPath",
    "Inserter",
    "Layout",
    "NStepAdder",
    "PassThrough",
    "ReplayTable",
    "SequenceAdder",
    "Table",
    "Unroll",
    "UnrollQueue",
    "concat_unrolls",
    "replay_data_path",
    "sum_stats",
]
