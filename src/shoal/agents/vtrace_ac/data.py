"""The V-trace family's data path: an off-policy unroll queue with bounded staleness."""

from __future__ import annotations

from functools import partial

from shoal.agents.base import Layout
from shoal.data import DataPath, UnrollQueue

__all__ = ["off_policy_data_path"]


def _queue(batch: int, capacity: int, max_lag: int | None, shards: int, seed: int) -> UnrollQueue:
    return UnrollQueue(batch=batch, capacity=capacity, on_policy=False, max_lag=max_lag)


def off_policy_data_path(
    unroll_length: int, batch_size: int, layout: Layout, max_policy_lag: int | None = None
) -> DataPath:
    """Off-policy: `batch_size` unrolls per update, taken as they come from any actor, while
    actors keep acting. Staleness is bounded twice: the queue's capacity (`layout.queue_capacity`,
    on Ray at least actors x in-flight requests) makes actors wait when the learner falls behind,
    and with `max_policy_lag` an unroll acted more than that many learner versions ago is dropped
    when the learner takes it (Sample Factory's `max_policy_lag`)."""
    return DataPath(
        unroll_length=unroll_length,
        make_table=partial(_queue, batch_size, layout.queue_capacity, max_policy_lag),
    )
