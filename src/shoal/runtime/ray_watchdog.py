"""A watchdog that ends a local Ray's processes when the driver that started them ends.

`ray.shutdown()` ends a local Ray's processes, but a driver killed by SIGKILL runs no
`finally`: the GCS, raylets and workers notice and exit, yet the raylet's agents
(`ray::DashboardAgent`, `ray::RuntimeEnvAgent`) ignore SIGTERM and run on, re-parented to
init. So `start_local` starts this script in a process of its own (its own session: a
Ctrl-C at the terminal does not reach it), with the driver's pid. It watches the driver's
process tree and remembers every process of the Ray session the driver started: a
descendant of the driver whose command line names the session's folder, and everything
below it (agents and workers rename themselves, `ray::...`, so only their ancestry says
whose they are). When the driver is gone, or says that its Ray was shut down (`end` on
the pipe), or the pipe closes, it ends those processes (SIGTERM, then SIGKILL for those
that ignore it) and exits.

Only a Ray this driver started is watched: a cluster joined with `--address` is never
touched. Linux only (it reads /proc); elsewhere `start` starts nothing. It imports neither
shoal nor Ray: it runs as a plain script, whatever the driver's `sys.path` was.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
from typing import IO

POLL_S = 0.5  # how often the driver's tree is read, and its life checked
NO_SESSION = "/no-ray-session-was-started"  # a session name no process can have
GRACE_S = 2.0  # between SIGTERM and SIGKILL of what the session left


class Watchdog:
    """The driver's side: the pipe to the watchdog process."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def session(self, session_dir: str) -> None:
        """Name the session's folder once Ray started (until then, any session folder
        whose name ends with the driver's pid counts: Ray names them so)."""
        self._send(f"session {session_dir}\n")

    def forget(self) -> None:
        """No Ray session of ours came up: end the watchdog without ending anything."""
        self.session(NO_SESSION)
        self.end()

    def end(self) -> None:
        """The driver shut its Ray down: the watchdog ends what is left of it and exits."""
        self._send("end\n")
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()

    def _send(self, line: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            assert self.process.stdin is not None
            self.process.stdin.write(line.encode())
            self.process.stdin.flush()


def start() -> Watchdog | None:
    """A watchdog of this process's local Ray, or None where /proc is missing."""
    if not os.path.isdir("/proc/self/task"):
        return None
    process = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    return Watchdog(process)


def newest_session(driver: int) -> str:
    """The newest Ray session folder named by a process below `driver` (Ray names them
    `session_<date>_<time>_<microseconds>_<pid of the driver that started it>`, so the newest
    sorts last): that of a start cut short, before Ray could say its name. `NO_SESSION` where
    no process names one."""
    table = _processes()
    pattern = re.compile(rf"/session_[0-9_-]+_{driver}\b")
    found = {
        match.group(0)
        for pid in _below(driver, table)
        if (match := pattern.search(_cmdline(pid))) is not None
    }
    return max(found, default=NO_SESSION)


# ---- the watchdog process -------------------------------------------------------------------


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of `pid`, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the name may hold spaces and parentheses
    return int(fields[1]), int(fields[19])


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _processes() -> dict[int, tuple[int, int]]:
    """Every process: pid -> (parent pid, start time)."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := _stat(int(name))) is not None:
            found[int(name)] = stat
    return found


def _below(driver: int, table: dict[int, tuple[int, int]]) -> list[int]:
    """The pids of every process below `driver` in `table`."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], list(children.get(driver, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _sessions(driver: int, named: str | None, table: dict[int, tuple[int, int]]) -> set[int]:
    """The pids of the session's processes below `driver`, as the tree stands now."""
    pattern = re.escape(named) if named else rf"/session_[0-9_-]+_{driver}\b"
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    todo = [(pid, False) for pid in children.get(driver, [])]
    while todo:
        pid, inside = todo.pop()
        inside = inside or re.search(pattern, _cmdline(pid)) is not None
        if inside:
            found.add(pid)
        todo += [(child, inside) for child in children.get(pid, [])]
    return found


def _end(seen: dict[int, int]) -> None:
    """SIGTERM, then SIGKILL, to each process in `seen` (pid -> start time) that still runs:
    the start time tells a process from a later one that reuses its pid."""

    def alive() -> list[int]:
        return [pid for pid, start in seen.items() if (_stat(pid) or (0, -1))[1] == start]

    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in alive():
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + GRACE_S
        while alive() and time.monotonic() < deadline:
            time.sleep(0.1)


def watch(driver: int, commands: IO[bytes]) -> None:
    """Remember the session's processes until the driver ends or says `end`, then end them."""
    born = (_stat(driver) or (0, -1))[1]
    named: str | None = None
    seen: dict[int, int] = {}
    buffer = b""
    while True:
        table = _processes()
        if table.get(driver, (0, -1))[1] != born:
            break  # the driver is gone (its pid reused or not)
        seen |= {pid: table[pid][1] for pid in _sessions(driver, named, table)}
        ready, _, _ = select.select([commands], [], [], POLL_S)
        if ready:
            chunk = os.read(commands.fileno(), 4096)
            if not chunk:
                break  # the pipe closed: the driver is gone
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            words = [line.decode(errors="replace").split(" ", 1) for line in lines]
            session = next((w[1] for w in words if w[0] == "session" and len(w) > 1), None)
            if session is not None and session != named:
                # Named: only that session's processes are this driver's Ray. Before, the
                # pattern may also have matched another session of the same driver (a test
                # process starts many), which must not be ended with this one.
                named = session
                seen = {pid: table[pid][1] for pid in _sessions(driver, named, table)}
            if any(word[0] == "end" for word in words):
                # What started since the tree was last read (a raylet's agents and workers
                # while its start was cut short) is ended too.
                seen |= _current(driver, named)
                break
    _end(seen)


def _current(driver: int, named: str | None) -> dict[int, int]:
    """The session's processes below `driver` now: pid -> start time."""
    table = _processes()
    return {pid: table[pid][1] for pid in _sessions(driver, named, table)}


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch(int(sys.argv[1]), sys.stdin.buffer)
