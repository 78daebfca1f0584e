"""Moved to `shoal.run.runs`. This module re-exports its public names, so old imports keep
working; import from `shoal.run.runs` in new code."""

from shoal.run.runs import (
    CONFIG_FILE,
    PROTOCOL_RECORDS,
    SUMMARY_FILE,
    Run,
    check_output,
    group_runs,
    read_runs,
    series,
)

__all__ = [
    "CONFIG_FILE",
    "PROTOCOL_RECORDS",
    "SUMMARY_FILE",
    "Run",
    "check_output",
    "group_runs",
    "read_runs",
    "series",
]
