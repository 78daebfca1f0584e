"""The launch tests' fixture: run `shoal launch` for one of the cases in cases.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoal.cli import main

from .cases import CASES, target_of


@pytest.fixture
def launched(tmp_path, capsys):
    """launched(case) -> the folder `shoal launch` wrote for that case."""

    def run(case: str, *extra: str) -> Path:
        options, train = CASES[case]
        out = tmp_path / case
        code = main(
            [
                "launch",
                target_of(case),
                "--out",
                str(out),
                "--extras",
                "ray,atari",
                *options,
                *extra,
                "--",
                *train,
            ]
        )
        assert code == 0, capsys.readouterr().err
        return out

    return run
