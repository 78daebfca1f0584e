"""Seconds this process spent stopped: by SIGSTOP (Slurm's `scontrol suspend`, a benchmark
paused while other work runs) or with its whole machine (a suspended VM).

A run's training time (`Counter.elapsed`, what --max-time and the Atari benchmark's curves
count) leaves these out, as Slurm's time limit leaves out a suspended job's. A daemon thread
wakes every `TICK_S`; a wake more than `LATE_S` late during which the process used almost no
CPU means the process did not run, and the lateness is counted as frozen. A wake that is late
because another thread held the GIL (a long pickle) is not: that thread was using the CPU.
"""

from __future__ import annotations

import threading
import time

TICK_S = 1.0
# A sleeping thread on a loaded 2-core machine wakes well under a second late; 15 s late is a
# stopped process, not a busy one.
LATE_S = 15.0
# A stopped process uses no CPU; a running one that held the GIL through the gap used most of it.
IDLE_CPU_SHARE = 0.1

_lock = threading.Lock()
_frozen = 0.0
_thread: threading.Thread | None = None


def frozen_seconds() -> float:
    """Seconds frozen since the first call (which starts the watch) in this process."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_watch, name="shoal-frozen-time", daemon=True)
            _thread.start()
        return _frozen


def _watch() -> None:
    global _frozen
    # `time.time()`, the clock `Counter.elapsed` reads, so a suspended VM's jump is seen as it is.
    wall, cpu = time.time(), time.process_time()
    while True:
        time.sleep(TICK_S)
        now_wall, now_cpu = time.time(), time.process_time()
        late = now_wall - wall - TICK_S
        if late > LATE_S and now_cpu - cpu < IDLE_CPU_SHARE * late:
            with _lock:
                _frozen += late
        wall, cpu = now_wall, now_cpu
