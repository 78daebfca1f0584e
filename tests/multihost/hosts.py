"""Hosts on this machine, each a network namespace with an address of its own on one bridge, and
a Ray node in each: a real network (veth pairs, a bridge, TCP between addresses) between the
roles of a run, which a host can be cut off from (its link set down) and given back.

    switch namespace: bridge br0 ── veth ── host namespace "a": eth0 10.77.0.1 (Ray head)
                                 ── veth ── host namespace "b": eth0 10.77.0.2 (Ray worker)
                                 ── ...

Nothing is added to this machine's own network namespace: the bridge lives in a namespace of
its own, the addresses are private (10.77.0.0/24) and reachable only from the namespaces. Each
worker host runs `ray start --block` in a loop, as a host's service manager (systemd's
Restart=always, a Kubernetes pod) would: a raylet the head declared dead exits when it hears so,
and the host then joins again as a new node. `close` kills every process in the namespaces and
deletes them, whatever happened before.

Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2's `ip`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

import shoal

SUBNET = "10.77.0"
AGENT_LISTEN_PORT = 52374
PORT = 6379
RAY = str(Path(sys.executable).with_name("ray"))

# Ray's node-death detection, short: the GCS asks each raylet every 0.5 s and declares its node
# dead after 4 misses of 1 s each (Ray's defaults, 3 s and 5 misses of 10 s, take about 30 s).
# Only the head's GCS reads them; every node gets them so a restarted head would too.
HEALTH_CHECK = {
    "RAY_health_check_initial_delay_ms": "1000",
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "4",
}


def available() -> str | None:
    """Why namespaces cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is missing (apt-get install iproute2)"
    probe = f"shprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None if made.returncode == 0 else f"ip netns add failed: {made.stderr.strip()}"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class Host:
    name: str
    address: str
    cpus: int
    resources: dict[str, float] = field(default_factory=dict)
    service: subprocess.Popen | None = None  # its `ray start` (the loop, on workers)


class Hosts:
    """Host namespaces `names` (the first is the Ray head) on one bridge; `cpus` and
    `resources` per host name are what its Ray node offers."""

    def __init__(
        self, names: list[str], cpus: dict[str, int], resources: dict[str, dict[str, float]]
    ) -> None:
        self.tag = f"sh{os.getpid() % 100_000}"  # unique to this test process; veths <= 15 chars
        self.switch = f"{self.tag}-sw"
        self.hosts = {
            name: Host(name, f"{SUBNET}.{i + 1}", cpus.get(name, 1), resources.get(name, {}))
            for i, name in enumerate(names)
        }
        self.head = self.hosts[names[0]]
        self.workdir = Path(tempfile.mkdtemp(prefix="shmh", dir="/tmp"))  # short socket paths
        self.made: list[str] = []
        # Token authentication, as a cluster should have (README); a HOME of its own, so no
        # token file of this machine's user is read instead.
        self.token = secrets.token_hex(32)
        self.port_files = _PortFiles(self.workdir)
        (self.workdir / "home").mkdir()

    @property
    def address(self) -> str:
        return f"{self.head.address}:{PORT}"

    def namespace(self, host: str) -> str:
        return f"{self.tag}-{host}"

    def _link(self, host: str) -> str:
        return f"{self.tag}-{host}-p"  # the switch's end of the host's veth

    # --- the network -----------------------------------------------------------------------

    def create(self) -> None:
        _ip("netns", "add", self.switch)
        self.made.append(self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for host in self.hosts.values():
            ns, inner, outer = (
                self.namespace(host.name),
                f"{self.tag}-{host.name}-e",
                self._link(host.name),
            )
            _ip("netns", "add", ns)
            self.made.append(ns)
            _ip("link", "add", inner, "type", "veth", "peer", "name", outer)
            _ip("link", "set", inner, "netns", ns)
            _ip("link", "set", outer, "netns", self.switch)
            _ip("-n", ns, "link", "set", inner, "name", "eth0")
            _ip("-n", ns, "addr", "add", f"{host.address}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", self.switch, "link", "set", outer, "master", "br0")
            _ip("-n", self.switch, "link", "set", outer, "up")

    def cut(self, host: str) -> None:
        """Take the host off the network: its link to the bridge goes down."""
        _ip("-n", self.switch, "link", "set", self._link(host), "down")

    def restore(self, host: str) -> None:
        _ip("-n", self.switch, "link", "set", self._link(host), "up")

    # --- Ray -------------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        """The environment of every process started in the namespaces."""
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "PYTEST"))}
        auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}
        home = {"HOME": str(self.workdir / "home")}
        # Ray's workers inherit their raylet's environment: they import the shoal under test.
        code = {"PYTHONPATH": str(Path(shoal.__file__).resolve().parents[1])}
        return keep | HEALTH_CHECK | auth | home | code | {"RAY_USAGE_STATS_ENABLED": "0"}

    def start_ray(self, seconds: float = 600.0) -> None:
        self.port_files.start()
        """A Ray node on every host, the head first, one after the other (each start is
        Python processes that a busy machine makes slow: on one at load 30, the raylet gave
        up waiting 15 s for its dashboard agent, ray-project/ray#65983, and the node was
        started again)."""
        for host in self.hosts.values():
            command = [RAY, "start", "--block", "--node-ip-address", host.address]
            command += ["--num-cpus", str(host.cpus), "--disable-usage-stats"]
            command += ["--temp-dir", str(self.workdir / f"ray-{host.name}")]
            # Fixed ports for the agents (each host has its own network): see `_PortFiles`.
            command += ["--dashboard-agent-grpc-port", "52371", "--runtime-env-agent-port", "52372"]
            command += ["--metrics-export-port", "52373"]
            command += ["--dashboard-agent-listen-port", str(AGENT_LISTEN_PORT)]
            if host.resources:
                command += ["--resources", json.dumps(host.resources)]
            if host is self.head:
                command += ["--head", "--port", str(PORT), "--include-dashboard", "false"]
            else:
                command += ["--address", self.address]
            # Started again whenever it exits, as a host's service manager would: a raylet
            # that failed to start, or that the head declared dead after a cut, and exits.
            loop = " ".join(f"'{part}'" for part in command)
            # Ray's own processes at a higher priority than this machine's other work: the
            # raylet waits a fixed 15 s for its dashboard agent (a Python process) to start
            # and exits if it has not (ray-project/ray#65983), which at a load of 30-45 it
            # did every time. The raylet starts its workers (the run's roles) at its own
            # niceness plus RAY_worker_niceness (15), so they run at +5, as benchmarks here do.
            command = ["nice", "-n", "-10", "bash", "-c", f"while :; do {loop}; sleep 1; done"]
            host.service = self.popen(host.name, command, self.workdir / f"{host.name}.log")
            self.wait_for_nodes({host.address}, seconds)

    def exec_in(self, host: str) -> list[str]:
        return ["ip", "netns", "exec", self.namespace(host)]

    def popen(self, host: str, command: list[str], log: Path, **kwargs) -> subprocess.Popen:
        """`command` in the host's namespace, in a session of its own, output to `log`."""
        with log.open("a") as out:
            return subprocess.Popen(
                [*self.exec_in(host), *command],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env(),
                start_new_session=True,
                **kwargs,
            )

    def alive_nodes(self) -> dict[str, str]:
        """The address of each node Ray counts alive, by node id (asked from the head)."""
        script = (
            "import json, sys\n"
            "from ray._raylet import GcsClient\n"
            "nodes = GcsClient(address=sys.argv[1]).get_all_node_info(timeout=10)\n"
            "print(json.dumps({n.hex(): i.node_manager_address for n, i in nodes.items()"
            " if i.state == 0}))\n"
        )
        try:
            done = subprocess.run(
                [*self.exec_in(self.head.name), sys.executable, "-c", script, self.address],
                capture_output=True,
                text=True,
                env=self.env(),
                timeout=60,
            )
        except subprocess.TimeoutExpired:  # no head yet
            return {}
        if done.returncode != 0:
            return {}
        return json.loads(done.stdout.strip().splitlines()[-1])

    def wait_for_nodes(self, addresses: set[str], seconds: float = 240.0) -> dict[str, str]:
        """Once a node of each of `addresses` is alive: node id -> address."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            nodes = self.alive_nodes()
            if addresses <= set(nodes.values()):
                return nodes
            time.sleep(1.0)
        logs = {p.name: p.read_text()[-2000:] for p in self.workdir.glob("*.log")}
        raise AssertionError(f"Ray nodes {addresses} not all alive in {seconds} s: {logs}")

    # --- teardown --------------------------------------------------------------------------

    def close(self) -> None:
        """Kill every process in the namespaces (the services' loops first, so nothing starts
        again), delete the namespaces (and with them the veths and the bridge), remove the
        temporary directory."""
        self.port_files.stop()
        for host in self.hosts.values():
            if host.service is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(host.service.pid, signal.SIGKILL)
                host.service.wait()
        for ns in reversed(self.made):
            for _ in range(50):
                pids = subprocess.run(
                    ["ip", "netns", "pids", ns], capture_output=True, text=True
                ).stdout.split()
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, ValueError):
                        os.kill(int(pid), signal.SIGKILL)
                time.sleep(0.1)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(self.workdir, ignore_errors=True)


class _PortFiles(threading.Thread):
    """Writes each new raylet's `dashboard_agent_listen_port_<node id>` file, with the fixed
    port its dashboard agent will listen on, as soon as the raylet runs.

    Why: a starting raylet waits a fixed 15 s for its dashboard agent (a Python process) to
    write that file and exits if it has not (ray-project/ray#65983); Ray passes the raylet the
    agent's other ports but not this one. On this machine at a load of 30-60 the agent took
    over 20 s, so no node ever started. The agent listens on the same fixed port once it is up,
    so the file says what will be true; nothing else of Ray is changed."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(daemon=True)
        self.workdir, self.done = str(workdir), threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            for process in psutil.process_iter(["name", "cmdline"]):
                with contextlib.suppress(psutil.Error, StopIteration, TypeError):
                    if process.info["name"] != "raylet":
                        continue
                    args = dict(
                        a.split("=", 1)
                        for a in process.info["cmdline"]
                        if a.startswith("--") and "=" in a
                    )
                    session = args.get("--session_dir", "")
                    if not session.startswith(self.workdir):
                        continue
                    path = Path(session) / f"dashboard_agent_listen_port_{args['--node_id']}"
                    if not path.exists():
                        temporary = path.with_suffix(".tmp")
                        temporary.write_text(str(AGENT_LISTEN_PORT))
                        temporary.rename(path)

    def stop(self) -> None:
        self.done.set()
