"""Moved to `shoal.run.buckets`. This module re-exports its public names, so old imports keep
working; import from `shoal.run.buckets` in new code."""

from shoal.run.buckets import (
    Bucket,
    is_url,
    join,
    open_bucket,
    unreachable,
    write_text,
)

__all__ = [
    "Bucket",
    "is_url",
    "join",
    "open_bucket",
    "unreachable",
    "write_text",
]
