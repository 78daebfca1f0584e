"""The command line answers before it loads torch or Ray (issue 36, "a command line that starts
at once"): help, listings and argument mistakes import neither."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Runs one command in a fresh interpreter and reports its exit code and which heavy modules it
# imported: only a new process shows what the command itself imports.
PROBE = """
import contextlib, io, json, sys
from shoal.cli import main
sink = io.StringIO()
try:
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        code = main(sys.argv[1:])
except SystemExit as exit_:
    code = exit_.code
heavy = [m for m in ("torch", "ray") if m in sys.modules]
print(json.dumps({"code": code, "heavy": heavy, "output": sink.getvalue()}))
"""


def _probe(*argv: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--help"], 0),
        (["train", "--help"], 0),
        (["list"], 0),
        (["envs"], 0),
        (["train", "pppo", "--env", "CartPole-v1"], 2),
        (["tune", "pppo", "--env", "CartPole-v1"], 2),
    ],
)
def test_help_listings_and_mistakes_import_neither_torch_nor_ray(argv, code):
    result = _probe(*argv)
    assert result["code"] == code, result["output"]
    assert result["heavy"] == [], f"`shoal {' '.join(argv)}` imported {result['heavy']}"


def test_a_mistyped_algorithm_is_named_with_the_close_match():
    result = _probe("train", "pppo", "--env", "CartPole-v1")
    assert "Unknown algorithm 'pppo'" in result["output"]
    assert "ppo" in result["output"].split("Unknown algorithm 'pppo'.")[1]
