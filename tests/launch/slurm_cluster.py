"""A real one-machine Slurm for the tests: munged, slurmctld and slurmd from Debian's slurm-wlm
and munge, started as root in a temporary folder with ports of their own (other Slurms on the
machine are left alone), and stopped by pid."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol")


def missing() -> str | None:
    """Why this machine cannot run the cluster, or None."""
    if os.geteuid() != 0:
        return "needs root (slurmd runs jobs as their users)"
    gone = [d for d in DAEMONS if shutil.which(d) is None]
    if gone:
        return f"{', '.join(gone)} not installed (apt-get install slurm-wlm munge)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmCluster:
    """One node named after this host, `cpus` CPUs declared (more than the machine has is fine:
    Ray and shoal share them), one partition."""

    def __init__(self, root: Path, cpus: int = 8):
        self.root = root
        self.node = socket.gethostname().split(".")[0]
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.procs: list[subprocess.Popen] = []
        self.cpus = cpus

    def start(self, timeout: float = 60.0) -> None:
        """Start the daemons; a RuntimeError with their logs if the node is not idle in time."""
        root = self.root
        for sub in ("munge", "state", "spool"):
            (root / sub).mkdir(mode=0o700)
        key = root / "munge" / "munge.key"
        subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True)
        key.chmod(0o400)
        socket_path = root / "munge" / "munge.sock"
        self.procs.append(
            subprocess.Popen(
                [
                    "munged",
                    "--foreground",
                    "--force",  # as root, in a folder of its own
                    f"--key-file={key}",
                    f"--socket={socket_path}",
                    f"--pid-file={root / 'munge' / 'munged.pid'}",
                    f"--log-file={root / 'munge' / 'munged.log'}",
                    f"--seed-file={root / 'munge' / 'munged.seed'}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
            )
        )
        self._wait(socket_path.exists, 15, "munged did not create its socket")
        self.conf.write_text(self._config(socket_path), encoding="utf-8")
        for daemon in ("slurmctld", "slurmd"):
            args = [daemon, "-D", "-f", str(self.conf)]
            if daemon == "slurmd":
                args += ["-N", self.node]
            log = open(root / f"{daemon}.stdout", "wb")  # noqa: SIM115 - kept for the process
            self.procs.append(
                subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=self.env)
            )
        self._wait(self._node_idle, timeout, "the Slurm node did not become idle")

    def _config(self, munge_socket: Path) -> str:
        r = self.root
        return f"""ClusterName=shoaltest
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
SlurmUser=root
SlurmdUser=root
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdParameters=config_overrides
StateSaveLocation={r / "state"}
SlurmdSpoolDir={r / "spool"}
SlurmctldPidFile={r / "slurmctld.pid"}
SlurmdPidFile={r / "slurmd.pid"}
SlurmctldLogFile={r / "slurmctld.log"}
SlurmdLogFile={r / "slurmd.log"}
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} State=UNKNOWN
PartitionName=shoal Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
"""

    def _node_idle(self) -> bool:
        for proc in self.procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}: {self.logs()}")
        done = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%T"], env=self.env, capture_output=True, text=True
        )
        return done.returncode == 0 and done.stdout.strip() == "idle"

    def _wait(self, ready, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} within {timeout:.0f} s: {self.logs()}")
            time.sleep(0.5)

    def sbatch(self, script: Path, cwd: Path, env: dict[str, str]) -> int:
        done = subprocess.run(
            ["sbatch", "--parsable", str(script)],
            cwd=cwd,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        return int(done.stdout.strip().split(";")[0])

    def state(self, job: int) -> str:
        """PENDING, RUNNING, ... or '' once the job has left the queue."""
        done = subprocess.run(
            ["squeue", "-h", "-j", str(job), "-o", "%T"],
            env=self.env,
            capture_output=True,
            text=True,
        )
        return done.stdout.strip()

    def exit_code(self, job: int) -> int:
        """The exit code Slurm recorded for a finished job (kept for MinJobAge, 300 s)."""
        done = subprocess.run(
            ["scontrol", "show", "job", str(job)], env=self.env, capture_output=True, text=True
        )
        match = re.search(r"\bExitCode=(\d+):", done.stdout)
        if match is None:
            raise RuntimeError(f"no exit code for job {job}: {done.stdout or done.stderr}")
        return int(match.group(1))

    def logs(self) -> str:
        parts = []
        for name in ("slurmctld.log", "slurmd.log", "slurmctld.stdout", "slurmd.stdout"):
            path = self.root / name
            if path.exists():
                parts.append(f"{name}: " + path.read_text(errors="replace")[-1500:])
        return "\n".join(parts)

    def cancel_all(self, timeout: float = 60.0) -> None:
        """scancel every job and wait for the queue to empty: slurmd leaves running jobs'
        processes behind when it stops."""
        subprocess.run(["scancel", "--full", "-u", "root"], env=self.env, capture_output=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = subprocess.run(["squeue", "-h"], env=self.env, capture_output=True, text=True)
            if done.returncode != 0 or not done.stdout.strip():
                return
            time.sleep(1)

    def stop(self) -> None:
        if self.conf.exists():
            self.cancel_all()
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
