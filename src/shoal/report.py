"""Moved to `shoal.analysis.report`. This module re-exports its public names, so old imports keep
working; import from `shoal.analysis.report` in new code."""

from shoal.analysis.report import (
    MARKDOWN_FORMATS,
    Aggregate,
    EnvScores,
    Normalizer,
    Report,
    aggregate_games,
    atari_normalized,
    build_report,
    check_report_output,
    env_scores,
    final_score,
    write_report,
)

__all__ = [
    "MARKDOWN_FORMATS",
    "Aggregate",
    "EnvScores",
    "Normalizer",
    "Report",
    "aggregate_games",
    "atari_normalized",
    "build_report",
    "check_report_output",
    "env_scores",
    "final_score",
    "write_report",
]
