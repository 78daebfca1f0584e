"""`shoal launch local` for real: shoal's CPU image built with podman on a local debootstrap
base (scripts/container_base.sh: no registry is reachable here), `shoal train ppo --env
CartPole-v1` inside it to its greedy evaluation, the run directory loaded on the host; then a run
stopped by Ctrl-C in its container and finished by `shoal train --resume` on the host.

Needs root, podman, runc and debootstrap (.ci/run installs them), and PyPI (the project's
dependencies); skipped where they are missing. torch in the image is the wheel the host's pip
picks for the Makefile's pin (`pip download torch==2.13.0`), so a host whose pip finds a CPU
wheel builds the CPU image. The build time, run time and image size are printed (`-s`); the
README's figures are from here."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import shoal
from shoal.launch import images

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[2]
IMAGE = "localhost/shoal-test:cpu"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "podman's builds here need root"
    for tool in ("podman", "runc", "debootstrap"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install podman buildah runc debootstrap)"
    return None


def _shoal(*args: str, **kwargs) -> subprocess.Popen:  # type: ignore[type-arg]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "shoal", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **kwargs,
    )


def _launch_options(tmp: Path, build: bool) -> list[str]:
    options = ["launch", "local", "--engine", "podman", "--image", IMAGE]
    if not build:
        return [*options, "--no-build"]
    return [*options, *build_flags(tmp)]


def build_flags(tmp: Path) -> list[str]:
    """--base (the local debootstrap image), --torch (the host pip's wheel) and --ca-bundle."""
    base = subprocess.run(
        ["bash", str(ROOT / "scripts" / "container_base.sh")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[-1]
    wheels = tmp / "wheels"
    pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:"]
    subprocess.run([*pip, "-d", str(wheels), images.TORCH], check=True)
    (wheel,) = wheels.glob("torch-*.whl")
    flags = ["--base", base, "--torch", str(wheel)]
    if CA_BUNDLE.is_file():  # pip behind this machine's TLS proxy
        flags += ["--ca-bundle", str(CA_BUNDLE)]
    return flags


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The image built and PPO trained inside it: (runs folder, output, build s, run s)."""
    reason = _missing()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("local")
    runs = tmp / "runs"
    started = time.monotonic()
    process = _shoal(
        *_launch_options(tmp, build=True),
        "--",
        *("shoal", "train", "ppo", "--env", "CartPole-v1", "--seed", "0"),
        *("--runs-dir", str(runs)),
    )
    output, _ = process.communicate(timeout=3600)
    total = time.monotonic() - started
    assert process.returncode == 0, output[-4000:]
    built = re.search(r"shoal: built \S+ in (\d+) s", output)
    assert built, output[-4000:]
    return runs, output, float(built.group(1)), total - float(built.group(1))


def test_ppo_trained_in_the_image_reaches_500_and_loads_on_the_host(trained):
    runs, output, build_s, run_s = trained
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    assert f"run directory: {run_dir}" in output  # the host's path, printed inside
    summary = json.loads((run_dir / "summary.json").read_text())
    greedy = summary["evaluation"]["mean_return"]
    size = int(
        subprocess.run(
            ["podman", "image", "inspect", "--format", "{{.Size}}", IMAGE],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    print(
        f"\nshoal launch local (podman): build {build_s:.0f} s, run {run_s:.0f} s, image "
        f"{size / 1e9:.2f} GB, greedy evaluation {greedy}, load {os.getloadavg()}"
    )
    assert greedy >= 475, summary["evaluation"]
    policy = shoal.load(run_dir)  # on the host, from what the container wrote
    action = policy.act(np.zeros(4, dtype=np.float32))
    assert int(action) in (0, 1)


def test_ctrl_c_stops_the_container_with_a_checkpoint_and_the_host_resumes_it(trained, tmp_path):
    runs = tmp_path / "runs"
    process = _shoal(
        *_launch_options(tmp_path, build=False),
        "--",
        *("shoal", "train", "ppo", "--env", "CartPole-v1", "--seed", "1"),
        *("--runs-dir", str(runs), "--total-steps", "60000"),
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:  # the container's progress, streamed
        lines.append(line)
        if "return=" in line:  # the progress bar, past its first log interval
            break
    else:
        pytest.fail("no progress from the container:\n" + "".join(lines[-40:]))
    process.send_signal(signal.SIGINT)  # what Ctrl-C sends the launcher
    rest, _ = process.communicate(timeout=300)
    output = "".join(lines) + rest
    assert process.returncode == 130, output[-3000:]  # stopped by Ctrl-C, with a checkpoint
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    assert f"shoal train --resume {run_dir}" in output
    assert list(run_dir.glob("checkpoints/*")) or list(run_dir.glob("**/*.pt")), output[-3000:]
    resumed = _shoal("train", "--resume", str(run_dir), "--max-time", "900")
    out, _ = resumed.communicate(timeout=1200)
    assert resumed.returncode == 0, out[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["env_steps"] >= 60000, summary


def test_a_ray_cluster_of_three_containers_trains_impala_and_survives_a_killed_worker(
    trained, tmp_path
):
    runs = tmp_path / "runs"
    process = _shoal(
        *_launch_options(tmp_path, build=False),
        *("--nodes", "3", "--"),
        *("shoal", "train", "impala", "--env", "CartPole-v1", "--runtime", "ray"),
        *("--actors", "2", "--seed", "0", "--runs-dir", str(runs)),
    )
    assert process.stdout is not None
    lines: list[str] = []
    placed: dict[str, str] = {}
    for line in process.stdout:
        lines.append(line)
        role = re.match(r"  (learner|actor\d+) +(\S+)  \(", line)
        if role:
            placed[role.group(1)] = role.group(2)
        if len(placed) == 3:
            break
    else:
        pytest.fail("no placement printed:\n" + "".join(lines[-40:]))
    assert placed["learner"].endswith("-head")
    assert {placed["actor0"], placed["actor1"]} == {
        placed["learner"].replace("-head", f"-worker{i}") for i in (1, 2)
    }
    time.sleep(10)
    subprocess.run(["podman", "kill", placed["actor0"]], check=True, capture_output=True)
    rest, _ = process.communicate(timeout=1500)
    output = "".join(lines) + rest
    assert process.returncode == 0, output[-3000:]
    assert f"{placed['actor0']} exited; starting it again" in output
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    summary = json.loads((run_dir / "summary.json").read_text())
    print(
        f"\nshoal launch local --nodes 3: IMPALA greedy {summary['evaluation']['mean_return']}, "
        f"actor restarts {summary.get('actor_restarts', 0)}, wall {summary['wall_time']:.0f} s, "
        f"load {os.getloadavg()}"
    )
    assert summary.get("actor_restarts", 0) >= 1, output[-4000:]  # actor0 placed again
    assert summary["evaluation"]["mean_return"] >= 475, summary["evaluation"]
    left = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}}"], capture_output=True)
    assert placed["learner"].rsplit("-", 1)[0] not in left.stdout.decode()  # all removed
