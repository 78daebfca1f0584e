"""Moved to `shoal.run.requeue`. This module re-exports its public names, so old imports keep
working; import from `shoal.run.requeue` in new code."""

from shoal.run.requeue import (
    SUMMARY_FILE,
    Found,
    find,
)

__all__ = [
    "SUMMARY_FILE",
    "Found",
    "find",
]
