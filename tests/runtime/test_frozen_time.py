"""A run's training time leaves out the time its process was stopped (SIGSTOP), and only that:
a thread that holds the GIL through the watch's wake is busy, not frozen."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

CHILD = """
import sys, time
from shoal.runtime import frozen_time
frozen_time.LATE_S = 1.5  # small, so the test need not stop the child for 15 s
from shoal.runtime.config import RunConfig
from shoal.runtime.counter import Counter
counter = Counter(RunConfig())
print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "hold-gil":
        sum(range(250_000_000))  # one C call: holds the GIL for seconds, using the CPU
    time.sleep(1.5)  # the watch's next wake comes after this
    print(f"{frozen_time.frozen_seconds():.2f} {counter.elapsed:.2f}", flush=True)
"""


def _ask(child: subprocess.Popen[str], line: str) -> tuple[float, float]:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(line + "\n")
    child.stdin.flush()
    frozen, elapsed = child.stdout.readline().split()
    return float(frozen), float(elapsed)


def test_stopped_time_is_not_training_time() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        frozen, elapsed_before = _ask(child, "hold-gil")
        began = time.time()
        assert frozen == 0.0, "a thread busy holding the GIL was counted as stopped"
        os.kill(child.pid, signal.SIGSTOP)
        time.sleep(4.0)
        os.kill(child.pid, signal.SIGCONT)
        frozen, elapsed_after = _ask(child, "")
        wall = time.time() - began
        assert 2.5 <= frozen <= 4.5, frozen
        # The counter's training time grew by the wall time less the stop.
        assert elapsed_after - elapsed_before <= wall - frozen + 0.5
        assert elapsed_after - elapsed_before >= wall - 4.5 - 0.5
    finally:
        child.kill()
        child.wait()
