"""Every file `shoal launch` writes, compared with its golden copy in tests/launch/golden/CASE/.

After an intended change, write them again with SHOAL_UPDATE_GOLDEN=1 and review the diff.
The golden copies hold placeholders for what differs between runs and must never be committed:
RAY_VERSION, "<auth-token>" for the Ray token (the fixture pins it) and "<out>" for the
folder written to (cluster.yaml names its token file by absolute path)."""

from __future__ import annotations

import os
from importlib import metadata

import pytest

from .cases import CASES, GOLDEN, TOKEN

RAY_VERSION = metadata.version("ray")


def _placeholders(text: str, out) -> str:
    text = text.replace(str(out.absolute()), "<out>").replace(TOKEN, "<auth-token>")
    return text.replace(RAY_VERSION, "RAY_VERSION")


@pytest.mark.parametrize("case", sorted(CASES))
def test_generated_files_match_their_golden_copies(launched, case):
    out = launched(case)
    golden = GOLDEN / case
    written = sorted(p.name for p in out.iterdir())
    if os.environ.get("SHOAL_UPDATE_GOLDEN"):
        golden.mkdir(parents=True, exist_ok=True)
        for name in written:
            (golden / name).write_text(_placeholders((out / name).read_text(), out))
    assert written == sorted(p.name for p in golden.iterdir())
    for name in written:
        written_text = _placeholders((out / name).read_text(), out)
        assert written_text == (golden / name).read_text(), (
            f"{case}/{name} differs from its golden copy"
        )
