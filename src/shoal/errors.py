"""Errors a user can cause. The command line prints them as one paragraph and exits with code 2."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ShoalError(Exception):
    """A mistake in what the user asked for (bad id, config, checkpoint), not a bug in shoal."""


class ConfigError(ShoalError):
    """A config key or value that cannot be used."""


class EnvError(ShoalError):
    """An environment that cannot be made, or that misbehaves while running."""


class CheckpointError(ShoalError):
    """A run directory or checkpoint that cannot be loaded."""


class StorageError(ShoalError):
    """A file of the run that cannot be written: a full disk, no permission, a read-only folder."""


class DivergenceError(ShoalError):
    """Training diverged: an update gave non-finite losses, or left non-finite weights."""


class ShoalWarning(UserWarning):
    """Something the user should know that does not stop shoal (the CLI prints one line)."""


class RenamedSettingWarning(FutureWarning):
    """A setting given by its old name: it still works, and the note says what replaced it.

    A FutureWarning, which Python shows to end users by default (a DeprecationWarning is hidden
    outside `__main__`), once per name; the CLI prints it as one `shoal: note:` line."""


def user_error(err: ShoalError) -> ShoalError:
    """The ShoalError itself, not Ray's wrapper of one raised in a Ray actor (whose text would
    carry the remote traceback)."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, ShoalError) else err


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Up to `n` candidates that look like `word` (case-insensitive), best first."""
    candidates = list(candidates)
    lowered = {c.lower(): c for c in candidates}
    hits = difflib.get_close_matches(word.lower(), list(lowered), n=n, cutoff=0.6)
    # A word that is a prefix or part of a candidate (e.g. "Pong") is a strong hint too.
    hits += [c for c in lowered if word.lower() in c and c not in hits]
    return [lowered[h] for h in hits[:n]]


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """' Did you mean X or Y?' or an empty string."""
    hits = close_matches(word, candidates)
    if not hits:
        return ""
    return " Did you mean " + " or ".join(repr(h) for h in hits) + "?"
