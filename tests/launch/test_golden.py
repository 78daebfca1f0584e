"""Every file `shoal launch` writes, compared with its golden copy in tests/launch/golden/CASE/.

After an intended change, write them again with SHOAL_UPDATE_GOLDEN=1 and review the diff."""

from __future__ import annotations

import os
from importlib import metadata

import pytest

from .cases import CASES, GOLDEN

RAY_VERSION = metadata.version("ray")


@pytest.mark.parametrize("case", sorted(CASES))
def test_generated_files_match_their_golden_copies(launched, case):
    out = launched(case)
    golden = GOLDEN / case
    written = sorted(p.name for p in out.iterdir())
    if os.environ.get("SHOAL_UPDATE_GOLDEN"):
        golden.mkdir(parents=True, exist_ok=True)
        for name in written:
            text = (out / name).read_text().replace(RAY_VERSION, "RAY_VERSION")
            (golden / name).write_text(text)
    assert written == sorted(p.name for p in golden.iterdir())
    for name in written:
        expected = (golden / name).read_text().replace("RAY_VERSION", RAY_VERSION)
        assert (out / name).read_text() == expected, f"{case}/{name} differs from its golden copy"
