"""Issue 35 item 7: a driver of a local Ray killed by SIGKILL leaves none of the Ray session's
processes running (Ray's dashboard and runtime-env agents ignore SIGTERM and used to stay,
re-parented to init). `shoal.runtime.ray_watchdog` ends them."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import psutil
import pytest
from processes import assert_processes_end

pytestmark = [pytest.mark.distributed, pytest.mark.integration, pytest.mark.timeout(300)]

SESSION = re.compile(r"/session_[0-9_-]+_\d+")


def _session_processes(driver: int) -> tuple[str, list[psutil.Process]]:
    """The session folder of the driver's local Ray, and every process below the driver."""
    below = psutil.Process(driver).children(recursive=True)
    for process in below:
        with_session = SESSION.search(" ".join(_cmdline(process)))
        if with_session:
            return with_session.group(0), below
    return "", below


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def test_a_sigkilled_driver_leaves_no_process_of_its_local_ray(tmp_path):
    argv = [sys.executable, "-m", "shoal", "train", "ppo", "--env", "CartPole-v1"]
    argv += ["--runtime", "ray", "--actors", "2", "--num-envs", "4", "--max-time", "600"]
    argv += ["--runs-dir", str(tmp_path), "--progress", "false", "--tensorboard", "false"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    driver = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 180
        # Placed roles: the raylet's agents and the actors' workers all run by then.
        while not list(tmp_path.glob("*/ray_actors.json")):
            assert driver.poll() is None, driver.stderr.read() if driver.stderr else ""
            assert time.monotonic() < deadline, "the run never placed its roles"
            time.sleep(0.5)
        time.sleep(2.0)  # the watchdog reads the tree every 0.5 s
        session, below = _session_processes(driver.pid)
        names = {p.name() for p in below if p.is_running()}
        assert session and any("DashboardAgent" in name for name in names), names
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    assert_processes_end([p.pid for p in below], within_s=30.0)  # the watchdog's too
    left = [
        p.pid for p in psutil.process_iter() if session in " ".join(_cmdline(p)) and p.is_running()
    ]
    assert not left, f"processes of {session} still run: {left}"
