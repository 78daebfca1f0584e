"""`shoal launch vertex --push REGISTRY` for real: shoal's CPU image built with podman (on the
local debootstrap base, as tests/launch/test_local_container.py builds it) and pushed to a
registry served on this machine (Debian's `docker-registry`, the Distribution registry), then
pulled back and run; the Vertex job written names the pushed image.

Needs root, podman, runc, debootstrap and docker-registry (.ci/run installs them); skipped where
they are missing. The push time and the registry's size of the image are printed (`-s`)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from shoal.launch.local import PODMAN_LIMITS

from .test_local_container import _missing, _shoal, build_flags

pytestmark = pytest.mark.integration

REGISTRY_BIN = "/usr/bin/docker-registry"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """A registry on 127.0.0.1 over plain HTTP, and a registries.conf (in the environment, for
    podman) that lets podman use it: its address."""
    reason = _missing() or (None if Path(REGISTRY_BIN).exists() else "docker-registry missing")
    if reason:
        pytest.skip(reason)
    address = f"127.0.0.1:{_free_port()}"
    config = tmp_path / "registry.yml"
    config.write_text(
        "version: 0.1\n"
        f"storage:\n  filesystem:\n    rootdirectory: {tmp_path / 'blobs'}\n"
        f"http:\n  addr: {address}\n"
    )
    server = subprocess.Popen(
        [REGISTRY_BIN, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    conf = tmp_path / "registries.conf"
    conf.write_text(f'[[registry]]\nlocation = "{address}"\ninsecure = true\n')
    monkeypatch.setenv("CONTAINERS_REGISTRIES_CONF", str(conf))
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://{address}/v2/", timeout=2).close()
                break
            except OSError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "the registry did not answer in 30 s"
                time.sleep(0.5)
        yield address
    finally:
        server.terminate()
        server.wait(timeout=30)


def _get(address: str, path: str) -> dict:  # type: ignore[type-arg]
    with urllib.request.urlopen(f"http://{address}{path}", timeout=10) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def test_push_puts_the_image_in_the_registry_and_the_job_names_it(registry, tmp_path):
    address = registry
    out = tmp_path / "job"
    started = time.monotonic()
    process = _shoal(
        *("launch", "vertex", "--out", str(out), "--push", address, "--engine", "podman"),
        *("--image", "shoal:pushed", *build_flags(tmp_path)),
        *("--", "shoal", "train", "ppo", "--env", "CartPole-v1", "--runtime", "ray"),
    )
    output, _ = process.communicate(timeout=3600)
    total = time.monotonic() - started
    assert process.returncode == 0, output[-4000:]
    pushed = f"{address}/shoal:pushed"
    assert f"shoal: pushed {pushed}" in output, output[-4000:]
    assert pushed in (out / "vertex_job.yaml").read_text()
    # The registry holds it, as any client asks it over the registry API.
    assert "shoal" in _get(address, "/v2/_catalog")["repositories"]
    assert _get(address, "/v2/shoal/tags/list")["tags"] == ["pushed"]
    stored = sum(f.stat().st_size for f in (tmp_path / "blobs").rglob("*") if f.is_file())
    # Pulled back from the registry (the local name dropped first) and run.
    podman = shutil.which("podman") or "podman"
    subprocess.run([podman, "rmi", pushed], check=True, capture_output=True)
    subprocess.run([podman, "pull", pushed], check=True, capture_output=True)
    listed = subprocess.run(
        [podman, "run", "--rm", "--runtime", "runc", *PODMAN_LIMITS, pushed, "shoal", "list"],
        capture_output=True,
        text=True,
    )
    subprocess.run([podman, "rmi", pushed], capture_output=True)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "ppo" in listed.stdout
    print(
        f"\nshoal launch vertex --push (podman, docker-registry): build and push {total:.0f} s, "
        f"{stored / 1e9:.2f} GB in the registry, load {os.getloadavg()}"
    )
