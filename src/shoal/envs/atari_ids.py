"""Recognise Atari ids without importing ale-py."""

from __future__ import annotations

import re

_ATARI = re.compile(r"^(ALE/[A-Za-z0-9]+-v5|[A-Z][A-Za-z0-9]*NoFrameskip-v4)$")


def is_atari_id(env_id: str) -> bool:
    """`ALE/Pong-v5` and `PongNoFrameskip-v4` style ids."""
    return bool(_ATARI.match(env_id))
