"""Issue 35 item 14: `--max-time` bounds the whole command, Python's start and the imports
included: `shoal` and `python -m shoal` count it from the process's start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from shoal import cli

# Sleeps before it imports shoal, as a slow interpreter start or slow imports would.
LATE_IMPORT = (
    "import runpy, sys, time; time.sleep(float(sys.argv[1])); "
    "sys.argv = ['shoal', *sys.argv[2:]]; runpy.run_module('shoal', run_name='__main__')"
)


def test_process_started_is_this_process_start():
    code = "import time; time.sleep(1.5); from shoal import cli; print(time.time() - cli.process_started())"  # noqa: E501
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    age = float(done.stdout)
    assert 1.5 <= age < 1.5 + 60, age  # the sleep and the import, not the import alone


def test_a_process_start_long_before_the_import_is_not_believed(monkeypatch):
    # A Python session that imports shoal an hour in: its commands count from the import.
    monkeypatch.setattr(cli, "_IMPORTED", [time.time() + 3600])
    assert cli.process_started() is None


def test_max_time_counts_from_the_process_start_not_shoals_import(tmp_path):
    # The process spends 8 s before it imports shoal: --max-time 5 is used by then. Counted
    # from shoal.cli's import, the run trained for 5 s more (wall_time about 5).
    argv = [sys.executable, "-c", LATE_IMPORT, "8", "train", "ppo", "--env", "CartPole-v1"]
    argv += ["--max-time", "5", "--runs-dir", str(tmp_path), "--run-name", "r"]
    argv += ["--progress", "false", "--tensorboard", "false", "--eval-episodes", "1"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["stop_reason"] == "max_time"
    assert summary["wall_time"] >= 8.0, summary
    assert summary["env_steps"] == 0, summary
