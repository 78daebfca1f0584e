"""`shoal launch local -- shoal train ...`: build shoal's image with the container engine of this
machine (docker, else podman) and run the training command inside it, as SEED RL's
`run_local.sh` does.

The run directory lives on the host: the command's `--runs-dir` (default `runs`) is mounted into
the container at the same absolute path, so the paths shoal prints inside the container are the
host's, and `shoal train --resume RUN_DIR` continues the run on the host or in another container.
Ctrl-C and SIGTERM reach shoal in the container (forwarded by `ENGINE kill --signal`), which stops
after writing a checkpoint. Engine flags this machine needs (podman's runtime and limits) are
added here, not asked of the user.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from shoal.commandline import build_parser, split_section_overrides
from shoal.errors import ConfigError, ShoalError
from shoal.launch import auth, images
from shoal.launch.job import parse_train_command
from shoal.launch.render import check_text
from shoal.run.layout import PLACEMENT_FILE

ENGINES = ("docker", "podman")
DEFAULT_IMAGE = "shoal:local"
# podman here: crun refuses the default RLIMIT_NOFILE, and the open-files and processes limits
# Ray and torch need are set explicitly (runc is taken where it is installed).
PODMAN_LIMITS = ("--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768")
# Flags of `shoal train` that name a file or folder on this machine: mounted at the same path.
PATH_FLAGS = ("--config", "--profile", "--resume")
# How long a container has, after the signal is forwarded, before it is killed.
STOP_GRACE_S = 120.0
# --nodes N: Ray's head and the learner in one container, the actors in N-1 worker containers,
# placed there by these custom resources (added to the command unless it names its own).
HEAD_RESOURCE, WORKER_RESOURCE = "shoal_head", "shoal_worker"
RAY_PORT = 6379
# Each container's Ray object store, in its /dev/shm (--shm-size is a little more).
OBJECT_STORE_MB = 512


@dataclass(frozen=True)
class LocalOptions:
    engine: str | None = None  # docker or podman; None: docker if its daemon answers, else podman
    image: str = DEFAULT_IMAGE
    base: str | None = None  # the BASE build argument; None: the Dockerfile's default
    torch: str | None = None  # the TORCH build argument: a requirement or a wheel file
    ca_bundle: str | None = None  # mounted over the image's CA bundle during the build (podman)
    build: bool = True
    extras: tuple[str, ...] = ("ray",)


@dataclass(frozen=True)
class Container:
    """What `ENGINE run` gets: the command inside, and host paths mounted at the same path."""

    args: tuple[str, ...]  # after `shoal train`, with the host paths made absolute
    mounts: tuple[tuple[str, bool], ...]  # (absolute path, read-only)
    runs_dir: str


def find_engine(requested: str | None) -> str:
    """docker when its daemon answers, else podman; or the one asked for, checked."""
    if requested is not None and requested not in ENGINES:
        raise ConfigError(f"--engine {requested!r} is not one of {', '.join(ENGINES)}.")
    why: dict[str, str] = {}
    for engine in (requested,) if requested else ENGINES:
        path = shutil.which(engine)
        if path is None:
            why[engine] = "not installed (not on PATH)"
            continue
        if engine == "docker":
            try:
                done = subprocess.run(
                    [path, "info"], capture_output=True, text=True, timeout=30, check=False
                )
            except subprocess.TimeoutExpired:
                why[engine] = "its daemon did not answer `docker info` in 30 s"
                continue
            if done.returncode != 0:
                message = (done.stderr.strip().splitlines() or ["no message"])[-1]
                why[engine] = f"`docker info` fails ({message})"
                continue
        return engine
    reasons = "; ".join(f"{engine}: {text}" for engine, text in why.items())
    raise ConfigError(
        "shoal launch local builds shoal's image and trains inside it with a container engine, "
        f"and none works here ({reasons}). Install podman (Debian and Ubuntu: `apt-get install "
        "podman buildah runc`), start Docker's daemon, or run the `shoal train` command "
        "without `shoal launch`."
    )


def project_root() -> Path:
    """The source tree shoal runs from: the image is built from its pyproject.toml and src/."""
    import shoal

    root = Path(shoal.__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file() or not (root / "src" / "shoal").is_dir():
        raise ConfigError(
            f"shoal launch local builds the image from shoal's source tree, and this shoal is "
            f"installed without one (from {Path(shoal.__file__).parent}). Run it from a clone "
            "installed with `pip install -e .`, or build the Dockerfile `shoal launch k8s` "
            "writes."
        )
    return root


def container_for(train: Sequence[str], cwd: Path | None = None) -> Container:
    """The checked `shoal train ...` of `shoal launch local ... -- shoal train ...`, with its
    --runs-dir (default runs) and the files it names made absolute, to be mounted."""
    argv = list(train)
    if argv[:2] != ["shoal", "train"]:
        raise ConfigError(
            "shoal launch local runs a training command given after `--`, e.g. `shoal launch "
            "local -- shoal train ppo --env CartPole-v1`; got "
            f"{shlex.join(argv) or 'nothing'!r}."
        )
    for arg in argv[2:]:
        check_text(arg, "The training command's argument")
    rest, _ = split_section_overrides(argv[2:])
    parsed = build_parser().parse_args(["train", *rest])  # a typo fails here, with argparse's
    if not parsed.algo and not parsed.config and not parsed.resume:
        raise ConfigError("Name an algorithm in the command, e.g. `shoal train ppo --env ...`.")
    cwd = cwd or Path.cwd()
    args = argv[2:]
    runs = getattr(parsed, "run.runs_dir", None) or "runs"
    mounts: dict[str, bool] = {}
    if "://" in runs:  # a bucket: reached from inside the container, nothing to mount
        runs_dir = runs
    else:
        runs_dir = str((cwd / runs).resolve())
        mounts[runs_dir] = False
        args = _set_flag(args, "--runs-dir", runs_dir)
    for flag in PATH_FLAGS:
        value = flag_value(args, flag)
        if value is None or value == "auto" or "://" in value:
            continue
        path = (cwd / value).resolve()
        if not path.exists():
            raise ConfigError(f"{flag} {value}: no such file or folder ({path}).")
        if not any(path.is_relative_to(m) for m in mounts):
            mounts[str(path)] = flag != "--resume"  # a resumed run is written on
        args = _set_flag(args, flag, str(path))
    return Container(tuple(args), tuple(mounts.items()), runs_dir)


def build_command(
    engine: str, context: Path, options: LocalOptions, torch_arg: str | None
) -> list[str]:
    command = [engine, "build", "--file", str(context / "Dockerfile"), "--tag", options.image]
    if options.base:
        command += ["--build-arg", f"BASE={options.base}"]
    if torch_arg:
        command += ["--build-arg", f"TORCH={torch_arg}"]
    if engine == "podman":
        command += [*_podman_runtime(), *PODMAN_LIMITS]
        if options.ca_bundle:  # a build volume: used by pip during the build, not in the image
            bundle = str(Path(options.ca_bundle).resolve())
            command += ["--volume", f"{bundle}:/etc/ssl/certs/ca-certificates.crt:ro"]
    return [*command, str(context)]


def run_command(engine: str, image: str, name: str, container: Container) -> list[str]:
    command = [engine, "run", "--rm", "--name", name, "--shm-size", "1g"]
    if engine == "podman":
        command += [*_podman_runtime(), *PODMAN_LIMITS]
    command += _user(engine)
    for path, read_only in container.mounts:
        command += ["--volume", f"{path}:{path}{':ro' if read_only else ''}"]
    return [*command, image, "shoal", "train", *container.args]


def launch(
    options: LocalOptions, train: Sequence[str], out: Path | None = None, nodes: int = 1
) -> int:
    """Build (unless options.build is False) and run; the training's exit code."""
    if nodes > 1:
        return launch_cluster(options, train, nodes, out)
    container = container_for(train)
    engine = check_engine(options)
    if options.build:
        build(engine, options, out)
    if "://" not in container.runs_dir:
        Path(container.runs_dir).mkdir(parents=True, exist_ok=True)
    name = f"shoal-{_name_part(container.args)}-{os.getpid()}-{int(time.time()) % 100000}"
    return run(run_command(engine, options.image, name, container), engine, name)


def check_engine(options: LocalOptions) -> str:
    """The engine to use, with the options checked against it."""
    if options.ca_bundle and not Path(options.ca_bundle).is_file():
        raise ConfigError(f"--ca-bundle {options.ca_bundle}: no such file.")
    engine = find_engine(options.engine)
    if options.ca_bundle and engine != "podman":
        raise ConfigError(
            "--ca-bundle mounts the file into the build, which only podman's build does; "
            "with docker, add the certificate to the base image (--base) instead."
        )
    return engine


def _user(engine: str) -> list[str]:
    """Docker's containers run as root: as this user instead (when not root), so that the
    run's files on the host stay theirs. (podman's rootless containers map root to the user.)"""
    if engine == "docker" and os.getuid() != 0:
        return ["--user", f"{os.getuid()}:{os.getgid()}", "--env", "HOME=/tmp"]
    return []


def cluster_args(train: Sequence[str], nodes: int) -> tuple[Container, dict[str, int]]:
    """The command of a Ray cluster of `nodes` containers, checked as `shoal launch`'s other
    targets check theirs (--runtime ray, no --address), with the learner placed on the head
    and the actors on the workers unless it says otherwise; and each node's CPUs and resources
    (head and worker)."""
    job = parse_train_command(train)
    container = container_for(["shoal", "train", *job.args])
    args = list(container.args)
    workers = nodes - 1
    actors = job.roles["actors"]
    if flag_value(args, "--learner-resources") is None:
        args += ["--learner-resources", f"{HEAD_RESOURCE}=1"]
    if flag_value(args, "--actor-resources") is None:
        args += ["--actor-resources", f"{WORKER_RESOURCE}=1"]
    others = sum(r.count * r.cpus for name, r in job.roles.items() if name != "learner")
    sizes = {
        "head_cpus": math.ceil(job.roles["learner"].cpus) + 1,
        "worker_cpus": max(1, math.ceil(others / workers)),
        "worker_slots": math.ceil(actors.count / workers),
    }
    return Container(tuple(args), container.mounts, container.runs_dir), sizes


def launch_cluster(
    options: LocalOptions, train: Sequence[str], nodes: int, out: Path | None = None
) -> int:
    """A head and nodes-1 workers, each a container on a network of their own, with token
    authentication as the Slurm script has it; the training runs in the head (Ray's driver
    must be on a node), its output streamed and its signals forwarded as with one container.
    Where each role ran (the run's ray_actors.json) is printed by container name."""
    container, sizes = cluster_args(train, nodes)
    engine = check_engine(options)
    if options.build:
        build(engine, options, out)
    if "://" not in container.runs_dir:
        Path(container.runs_dir).mkdir(parents=True, exist_ok=True)
    stem = f"shoal-{_name_part(container.args)}-{os.getpid()}-{int(time.time()) % 100000}"
    network, head = stem, f"{stem}-head"
    workers = [f"{stem}-worker{i}" for i in range(1, nodes)]
    # The token reaches the containers through the environment, never a command line.
    env = {**os.environ, auth.ENV: auth.token(), "RAY_AUTH_MODE": "token"}
    common = ["--network", network, "--env", "RAY_AUTH_MODE", "--env", auth.ENV]
    common += ["--shm-size", f"{OBJECT_STORE_MB + 256}m"]
    if engine == "podman":
        common += [*_podman_runtime(), *PODMAN_LIMITS]
    common += _user(engine)
    ray_start = f"ray start --disable-usage-stats --object-store-memory={OBJECT_STORE_MB * 2**20}"
    head_script = (
        "trap 'exit 130' INT; trap 'exit 143' TERM\n"
        f"{ray_start} --head --port={RAY_PORT} --include-dashboard=false "
        f"--num-cpus={sizes['head_cpus']} --resources='{{\"{HEAD_RESOURCE}\": 1}}'\n"
        f"for _ in $(seq 150); do\n"
        f"  up=$(ray status 2>/dev/null | grep -c -E '^ +1 node_' || true)\n"
        f'  [ "$up" -ge {nodes} ] && break; sleep 2\n'
        "done\n"
        f'echo "shoal launch: Ray is up on $up of {nodes} containers"\n'
        f"exec {shlex.join(['shoal', 'train', *container.args])} --address auto\n"
    )
    worker_script = (
        "for _ in $(seq 60); do\n"
        f"  {ray_start} --address={head}:{RAY_PORT} --num-cpus={sizes['worker_cpus']} "
        f"--resources='{{\"{WORKER_RESOURCE}\": {sizes['worker_slots']}}}' --block && exit 0\n"
        "  sleep 2\n"
        "done\n"
        "exit 1\n"
    )
    mounts = [
        a
        for path, ro in container.mounts
        for a in ("--volume", f"{path}:{path}{':ro' if ro else ''}")
    ]
    _quiet([engine, "network", "create", network], env)
    detached = [engine, "run", "--detach", "--rm", *common]
    commands = {
        worker: [*detached, "--name", worker, options.image, "bash", "-c", worker_script]
        for worker in workers
    }
    supervisor = _Supervisor(engine, Path(container.runs_dir), head, commands, env)
    try:
        for command in commands.values():
            _quiet(command, env)
        command = [engine, "run", "--rm", "--name", head, *common, *mounts]
        print(f"shoal launch: Ray head and learner in {head}; actors in {', '.join(workers)}")
        supervisor.start()
        return run([*command, options.image, "bash", "-c", head_script], engine, head, env)
    finally:
        supervisor.stop()
        for name in workers:
            subprocess.run([engine, "rm", "--force", name], capture_output=True, env=env)
        subprocess.run([engine, "network", "rm", network], capture_output=True, env=env)


class _Supervisor(threading.Thread):
    """While the head runs: starts a worker container again when it exits (as a cluster
    manager would; Ray then places the roles it lost there), and prints where each role runs,
    by container name, whenever the run's ray_actors.json (shoal's record of each role's
    process and Ray node) changes."""

    RESTARTS = 5  # per worker
    # Tries at starting a worker again that may fail (e.g. its killed container is still being
    # removed under load, so its name is taken), one per poll, before giving up on it.
    START_TRIES = 30

    def __init__(
        self,
        engine: str,
        runs_dir: Path,
        head: str,
        workers: dict[str, list[str]],
        env: dict[str, str],
    ):
        super().__init__(daemon=True)
        self.engine, self.runs_dir, self.head, self.workers, self.env = (
            engine,
            runs_dir,
            head,
            workers,
            env,
        )
        self.since = time.time()
        self.stopped = threading.Event()
        self.seen: str | None = None
        self.restarts = dict.fromkeys(workers, 0)
        self.failed_starts = dict.fromkeys(workers, 0)  # since its last successful start

    def run(self) -> None:
        while not self.stopped.wait(2.0):
            self.revive()
            self.placement()

    def stop(self) -> None:
        self.stopped.set()
        self.placement()

    def revive(self) -> None:
        done = subprocess.run(
            [self.engine, "ps", "--format", "{{.Names}}"],
            capture_output=True,
            text=True,
            env=self.env,
        )
        running = set(done.stdout.split())
        if done.returncode != 0 or self.head not in running:
            return
        for name in self.workers:
            if name in running or self.restarts[name] >= self.RESTARTS or self.stopped.is_set():
                continue
            if self.failed_starts[name] >= self.START_TRIES:
                continue  # given up on, said once
            self.start_again(name)

    def start_again(self, name: str) -> None:
        """Start an exited worker container again; a failed start is tried again at the next
        poll, and does not count as a restart."""
        if self.failed_starts[name] == 0:
            print(f"\nshoal launch: {name} exited; starting it again", flush=True)
        # A killed --rm container may linger while it is removed, holding its name.
        subprocess.run([self.engine, "rm", "--force", name], capture_output=True, env=self.env)
        started = subprocess.run(self.workers[name], capture_output=True, text=True, env=self.env)
        if started.returncode == 0:
            self.restarts[name] += 1
            self.failed_starts[name] = 0
            return
        self.failed_starts[name] += 1
        if self.failed_starts[name] == self.START_TRIES:
            print(
                f"\nshoal launch: {name} did not start again in {self.START_TRIES} tries; the "
                f"run goes on without it. {self.engine} said: {started.stderr.strip()[-500:]}",
                flush=True,
            )

    def placement(self) -> None:
        if "://" in str(self.runs_dir):
            return
        files = [
            p
            for p in self.runs_dir.glob(f"*/{PLACEMENT_FILE}")
            if p.stat().st_mtime >= self.since - 1
        ]
        if not files:
            return
        path = max(files, key=lambda p: p.stat().st_mtime)
        text = path.read_text()
        if text == self.seen:
            return
        try:
            placement = json.loads(text)
        except ValueError:  # written atomically, but read while a new one lands
            return
        self.seen = text
        by_ip = self.addresses()
        lines = [f"\nshoal launch: where each role runs ({path}):"]
        for role, where in placement.items():
            name = by_ip.get(where.get("address") or "", "?")
            lines.append(f"  {role:<10} {name}  ({where.get('address')}, pid {where.get('pid')})")
        print("\n".join(lines), flush=True)

    def addresses(self) -> dict[str, str]:
        out = {}
        for name in [self.head, *self.workers]:
            done = subprocess.run(
                [
                    self.engine,
                    "inspect",
                    "--format",
                    "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
                    name,
                ],
                capture_output=True,
                text=True,
                env=self.env,
            )
            for ip in done.stdout.split():
                out[ip] = name
        return out


def _quiet(command: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise ShoalError(
            f"`{shlex.join(command[:4])} ...` failed (exit code {done.returncode}): "
            f"{done.stderr.strip()[-600:] or 'no message'}."
        )


def build(engine: str, options: LocalOptions, out: Path | None = None, cuda: bool = False) -> None:
    """Build options.image from shoal's source tree: the context holds only pyproject.toml,
    README.md, src/ and the Dockerfile (the CUDA one with `cuda`; and a torch wheel, when
    TORCH names one), so no virtual environment or run directory is sent to the engine."""
    root = project_root()
    with tempfile.TemporaryDirectory(prefix="shoal-build-") as tmp:
        context = out if out is not None else Path(tmp)
        context.mkdir(parents=True, exist_ok=True)
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(root / name, context / name)
        shutil.rmtree(context / "src", ignore_errors=True)
        shutil.copytree(
            root / "src", context / "src", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
        (context / "Dockerfile").write_text(
            images.dockerfile(list(options.extras), cuda=cuda), encoding="utf-8"
        )
        torch_arg = options.torch
        if torch_arg and Path(torch_arg).is_file():  # a wheel: into the context, by its name
            wheels = context / "wheels"
            wheels.mkdir(exist_ok=True)
            wheel = Path(torch_arg)
            target = wheels / wheel.name
            if not target.exists():
                try:
                    os.link(wheel, target)
                except OSError:
                    shutil.copy2(wheel, target)
            torch_arg = f"wheels/{wheel.name}"
        command = build_command(engine, context, options, torch_arg)
        print(f"$ {shlex.join(command)}", flush=True)
        started = time.monotonic()
        code, tail = _stream(command)
        if code != 0:
            raise ShoalError(
                f"Building the image with {engine} failed (exit code {code}); its last lines:\n"
                + "\n".join(tail)
                + "\nThe usual causes: a base image the engine cannot pull (no registry "
                "reachable: build one, e.g. scripts/container_base.sh, and pass --base), or "
                "pip unable to reach PyPI (behind a TLS proxy, pass its CA bundle with "
                "--ca-bundle)."
            )
        print(f"shoal: built {options.image} in {time.monotonic() - started:.0f} s", flush=True)


def run(command: list[str], engine: str, name: str, env: dict[str, str] | None = None) -> int:
    """Run the container in the foreground, its output streamed; Ctrl-C and SIGTERM are sent on
    to shoal inside (`ENGINE kill --signal`), which stops with a checkpoint; a third signal, or
    a container still running STOP_GRACE_S after the first, is killed."""
    print(f"$ {shlex.join(command)}", flush=True)
    # A session of its own: the terminal's Ctrl-C reaches this process only, which forwards it
    # once to the container (the engine client would forward it too).
    process = subprocess.Popen(command, start_new_session=True, env=env)
    signals: list[int] = []
    first: list[float] = []  # when the first signal came

    def forward(signum: int, frame: FrameType | None) -> None:
        signals.append(signum)
        first[:] = first or [time.monotonic()]
        kind = "KILL" if len(signals) >= 3 else signal.Signals(signum).name.removeprefix("SIG")
        print(f"\nshoal launch: sending SIG{kind} to container {name}", file=sys.stderr)
        subprocess.run([engine, "kill", "--signal", kind, name], capture_output=True, check=False)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            try:
                code = process.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                pass
            if first and time.monotonic() - first[0] > STOP_GRACE_S:
                subprocess.run([engine, "kill", name], capture_output=True, check=False)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return code


def _stream(command: list[str]) -> tuple[int, list[str]]:
    """Run `command`, its output passed through line by line; (exit code, last 30 lines)."""
    tail: deque[str] = deque(maxlen=30)
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            print(line, end="", flush=True)
            tail.append(line.rstrip("\n"))
    return process.returncode, list(tail)


def _podman_runtime() -> list[str]:
    return ["--runtime", "runc"] if shutil.which("runc") else []


def _name_part(args: Sequence[str]) -> str:
    algo = next((a for a in args if not a.startswith("-")), "run")
    return re.sub(r"[^a-z0-9]+", "-", algo.lower()).strip("-")[:20] or "run"


def flag_value(argv: Sequence[str], flag: str) -> str | None:
    for i, item in enumerate(argv):
        if item == flag and i + 1 < len(argv):
            return argv[i + 1]
        if item.startswith(flag + "="):
            return item[len(flag) + 1 :]
    return None


def _set_flag(argv: Sequence[str], flag: str, value: str) -> list[str]:
    """argv with `flag` set to value (replaced where given, else appended)."""
    out, skip, done = [], False, False
    for item in argv:
        if skip:
            skip = False
            continue
        if item == flag:
            out += [flag, value]
            skip, done = True, True
        elif item.startswith(flag + "="):
            out += [flag, value]
            done = True
        else:
            out.append(item)
    return out if done else [*out, flag, value]
