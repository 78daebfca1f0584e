"""The Ray token a launched job's cluster runs with, and the private files that carry it.

Every target starts its Ray with token authentication (`RAY_AUTH_MODE=token`), as the Slurm
script does, so that only holders of the token can join the cluster or run code on it. The
token is `RAY_AUTH_TOKEN` from the environment `shoal launch` runs in, or a new random one per
launch. It is written only into files of mode 600 that say so in their name or header, never
into the RayJob or a start command, and never printed.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from shoal.launch.render import check_form

ENV = "RAY_AUTH_TOKEN"


def token() -> str:
    """`RAY_AUTH_TOKEN` if set (so a user can pick, share or rotate it), else 32 random bytes
    as hex, as the Slurm script makes its own."""
    given = os.environ.get(ENV)
    if given:
        form = "a token of at least 16 printable characters without spaces or quotes"
        return check_form(given, ENV, r"[!#-&(-~]{16,}", form)
    return secrets.token_hex(32)


def write_private(path: Path, text: str) -> Path:
    """`text` into a new file at `path` readable by this user only: an older file (or a link
    planted in its place) is removed first, so nothing is written through it."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path
