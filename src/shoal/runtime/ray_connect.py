"""Where a ray run's Ray comes from: a new local instance on the loopback interface, or a
running cluster at `--address`, checked first so that a wrong address or a missing token fails
in seconds with a clear message instead of Ray's minutes of retries.

Nothing here imports Ray at module level: inline runs never load it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from importlib import metadata

from shoal.errors import ConfigError, ShoalError
from shoal.runtime import ray_watchdog
from shoal.runtime.ray_watchdog import Watchdog

LOCAL_START_ATTEMPTS = 3  # starts of a local Ray whose node missed Ray's 30 s to register
PROBE_TIMEOUT_S = 5.0  # a TCP connection to the head: it answers in milliseconds or not at all
GCS_TIMEOUT_S = 20.0  # a Python process that imports Ray and asks the head for its cluster id

# HOST:PORT, or ray://HOST:PORT for Ray Client; HOST may be an [IPv6] literal.
_ADDRESS = re.compile(r"^(ray://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")

# Run in a separate process: Ray's C++ client logs its retries to stderr, which would break the
# one paragraph a user sees, and waits up to 40 s on a port that is not Ray's.
_GCS_CHECK = """
import sys
try:
    from ray._raylet import GcsClient
    from ray.exceptions import AuthenticationError
except ImportError:  # a Ray without token authentication: ray.init tells what is wrong
    sys.exit(0)
try:
    GcsClient(address=sys.argv[1])
except AuthenticationError:
    sys.exit(3)
"""
_REFUSED_TOKEN = 3


def check_address(address: str) -> None:
    """Refuse an `--address` that is malformed, where nothing listens, or whose cluster asks
    for a token this process lacks, within seconds and before anything is written."""
    if address == "auto":  # Ray finds a cluster started on this machine, or says there is none
        return
    client, host, port = _parse(address)
    try:
        socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S).close()
    except OSError as err:
        reason = "no answer" if isinstance(err, TimeoutError) else err.strerror or str(err)
        raise ConfigError(
            f"Nothing answers at --address {address} ({reason}): no Ray cluster's head listens "
            "there. Start one with `ray start --head --port 6379` on the head node and pass "
            "HEAD_IP:6379 (`ray start` prints the address), or leave out --address to start a "
            "local Ray."
        ) from None
    if not client:  # Ray Client's server checks the token when ray.init connects
        _check_gcs(address)


def _parse(address: str) -> tuple[bool, str, int]:
    """(is Ray Client, host, port) of `--address`, or a ConfigError showing the forms."""
    match = _ADDRESS.match(address.strip())
    port = int(match.group(3)) if match else 0
    if not match or not 0 < port < 65536:
        raise ConfigError(
            f"--address {address!r} is not the address of a Ray cluster: pass its head node's "
            "HOST:PORT (e.g. 10.0.0.5:6379, as `ray start --head` prints it), ray://HOST:10001 "
            "for Ray Client, or auto for a cluster started on this machine; without --address "
            "shoal starts a local Ray."
        )
    return bool(match.group(1)), match.group(2).strip("[]"), port


def _check_gcs(address: str) -> None:
    """Ask the head for its cluster id as `ray.init` would, in a process of its own."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _GCS_CHECK, address],
            capture_output=True,
            timeout=GCS_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"Something listens at --address {address} but did not answer as a Ray cluster's "
            f"head within {GCS_TIMEOUT_S:.0f} s. Pass the head's GCS port (6379 unless "
            "`ray start --head --port` chose another) and run the same Ray version on both "
            f"sides (shoal has Ray {metadata.version('ray')})."
        ) from None
    if done.returncode == _REFUSED_TOKEN:
        raise ConfigError(
            f"The Ray cluster at --address {address} refused this process: it uses token "
            "authentication and the token here is missing or not the cluster's. Where you run "
            "shoal, set RAY_AUTH_MODE=token and the cluster's token in RAY_AUTH_TOKEN (or in "
            "~/.ray/auth_token; `ray get-auth-token` on the head node prints it); the README's "
            "'Run on a cluster' section shows the steps."
        )


def connect(address: str) -> None:
    """Join the running cluster at `address`, which `check_address` passed before the run
    directory was written."""
    import ray

    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    except ConnectionError as err:  # e.g. the head went away since the check
        raise ConfigError(
            f"Could not join the Ray cluster at --address {address}: {str(err).rstrip('.')}. "
            "Check that its head node is up (`ray status` on it) and reachable from here."
        ) from None


class OutOfTime(Exception):
    """--max-time ran out before a ray run's roles could train: `what` was not done by then
    (starting a local Ray, placing the roles). Not an error: the run ends with 0 steps."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class _Late(BaseException):
    """Raised by `_alarm_at` into Ray's start (`args[0]`: True) or before it (False). A
    BaseException, as KeyboardInterrupt is: Ray catches Exception in places (a dashboard that
    did not come up is logged, not raised)."""


@contextlib.contextmanager
def _alarm_at(deadline: float | None) -> Iterator[None]:
    """Raise `_Late` in this thread at `deadline` (a `time.time()`), at once if it has passed.
    Ray's start has no bound of its own that a caller can set (up to a minute for its dashboard
    process, 30 s for its node to register, then the driver's connection): a SIGALRM interrupts
    it. Outside the main thread, without SIGALRM, or where the process already uses it (a
    timer set, a handler: pytest-timeout's), only a passed deadline is seen."""
    if deadline is None:
        yield
        return
    left = deadline - time.time()
    if left <= 0:
        raise _Late(False)
    if (
        threading.current_thread() is not threading.main_thread()
        or not hasattr(signal, "setitimer")
        or signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, None)
        or signal.getitimer(signal.ITIMER_REAL)[0] > 0
    ):
        yield
        return

    def late(signum: int, frame: object) -> None:
        raise _Late(True)

    previous = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, left)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def start_local(num_cpus: int, deadline: float | None = None) -> Watchdog | None:
    """Start a new Ray on this machine that only this machine can reach, and a watchdog that
    ends its processes when this process ends, even by SIGKILL (`ray_watchdog`); returned so
    that the caller tells it after `ray.shutdown()` (`Watchdog.end`), or None off Linux.
    `deadline` (a `time.time()`: where --max-time leaves no time to train): Ray's start, with
    its retries, is cut there and what it started is ended, raising `OutOfTime`.

    A local run needs no network, yet Ray on Linux binds its servers (GCS, raylet, workers,
    the dashboard agent) to the machine's network address or to every interface, and turns a
    loopback `_node_ip_address` into that address too (`services.resolve_ip_for_localhost`),
    unless multi-node clusters are off, as Ray has them on macOS and Windows. So they are off
    while the node starts; its processes then listen on 127.0.0.1 only. address="local"
    starts a new instance even if another Ray runs on this machine.
    """
    import ray
    from ray._private import ray_constants

    clusters = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    # Ray starts its workers at nice 15 so that they yield to the driver. A run's actors,
    # learner and replay are those workers, and at nice 15 beside one ordinary busy process
    # an Ape-X run on 2 cores made 2,016 steps in 9 minutes (issue 37), while an inline run
    # competes at nice 0. Workers of a local Ray run at the driver's priority, unless the
    # user set RAY_worker_niceness.
    os.environ.setdefault(ray_constants.RAY_WORKER_NICENESS, "0")
    watchdog = ray_watchdog.start()  # before Ray: a driver killed while Ray starts is covered
    started = False
    try:
        for attempt in range(1, LOCAL_START_ATTEMPTS + 1):
            try:
                with _alarm_at(deadline):
                    ray.init(
                        address="local",
                        _node_ip_address="127.0.0.1",
                        num_cpus=num_cpus,
                        include_dashboard=False,
                        logging_level=logging.ERROR,
                        log_to_driver=False,
                    )
                started = True
                node = ray._private.worker._global_node
                if watchdog is not None and node is None:  # a stand-in Ray: no session
                    watchdog.forget()
                    return None
                if watchdog is not None:
                    watchdog.session(node.get_session_dir_path())
                return watchdog
            except _Late as late:
                # What of Ray's start this process holds, if any; cut anywhere, Ray's state
                # may be half made, and the watchdog ends its processes in any case.
                with contextlib.suppress(Exception):
                    ray.shutdown()
                if watchdog is not None:  # and the processes it started: the newest session
                    watchdog.session(ray_watchdog.newest_session(os.getpid()))
                    watchdog.end()
                    watchdog = None
                during = late.args[0] if late.args else True
                raise OutOfTime(
                    "still starting a local Ray" if during else "yet to start a local Ray"
                ) from None
            except Exception as err:  # Ray raises a bare Exception when its node is late
                if "timed out during startup" not in str(err):
                    raise
                # Ray gives its node a fixed 30 s to register; on a machine whose load is many
                # times its cores that is sometimes too short, and a second start succeeds.
                ray.shutdown()
                if attempt == LOCAL_START_ATTEMPTS:
                    raise ShoalError(
                        f"Ray did not start on this machine: its node missed Ray's 30 s to "
                        f"register, {LOCAL_START_ATTEMPTS} times (load average "
                        f"{_load_average()}). The machine is too busy for a local Ray now: "
                        "run again when it is quieter, or use --runtime inline, which needs "
                        "no Ray."
                    ) from None
        raise AssertionError("unreachable: the last attempt returns or raises")
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = clusters
        if not started and watchdog is not None:
            watchdog.forget()  # no session of ours: end nothing of another's


def _load_average() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "unknown"
