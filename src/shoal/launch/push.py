"""`shoal launch k8s|gcp|aws|vertex --push REGISTRY`: build the job's image from shoal's source
tree with the engine on this machine (docker, else podman: `local.find_engine`) and push it to
a registry, as SEED RL's and DRLearner's launch scripts do, so that the job files name an
image the cluster can pull.

The image is `REGISTRY/NAME:TAG`, NAME:TAG from --image (default shoal:latest); the CUDA image
when the learner asks for GPUs. What the push needs of the registry (a login, an insecure
registry's entry in registries.conf) is the engine's own configuration, not shoal's.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time

from shoal.errors import ConfigError, ShoalError
from shoal.launch import local
from shoal.launch.render import IMAGE, IMAGE_FORM, check_form

# A registry: a host with an optional port, and an optional path (a project, a repository):
# gcr.io/PROJECT, us-docker.pkg.dev/PROJECT/REPO, 123456789012.dkr.ecr.REGION.amazonaws.com,
# localhost:5000.
REGISTRY = r"[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]+)?(/[a-z0-9][a-z0-9._-]*)*"
REGISTRY_FORM = (
    "a registry host with its path, e.g. us-docker.pkg.dev/PROJECT/REPO, gcr.io/PROJECT, "
    "ACCOUNT.dkr.ecr.REGION.amazonaws.com or localhost:5000"
)
# Targets whose --submit hands the job to machines that pull the image from a registry.
CLOUD_TARGETS = ("gcp", "aws", "vertex")


def pushed_name(registry: str, image: str) -> str:
    """The image's reference in `registry`: its name and tag (any registry it named dropped)."""
    registry = check_form(registry.rstrip("/"), "--push", REGISTRY, REGISTRY_FORM)
    check_form(image, "--image", IMAGE, IMAGE_FORM)
    name = image.split("/", 1)[1] if names_registry(image) else image
    return f"{registry}/{name}"


def names_registry(image: str) -> bool:
    """Whether `image` starts with a registry host (Docker's rule: a first part with a dot or
    a port, or localhost), so that a cluster can pull it from there."""
    first, _, rest = image.partition("/")
    return bool(rest) and (bool(re.search(r"[.:]", first)) or first == "localhost")


def check_submit(target: str, image: str, push: str | None) -> None:
    """A cloud job's machines pull the image; one that names no registry, not pushed by
    --push, cannot be pulled there."""
    if target in CLOUD_TARGETS and push is None and not names_registry(image):
        raise ConfigError(
            f"--submit starts {target} machines that pull the image, and --image {image} names "
            "no registry they can pull it from. Pass --push REGISTRY (e.g. "
            "us-docker.pkg.dev/PROJECT/REPO or ACCOUNT.dkr.ecr.REGION.amazonaws.com) to build "
            "it here and push it there, or --image an image already pushed."
        )


def build_and_push(options: local.LocalOptions, cuda: bool) -> None:
    """Build options.image (the pushed name) from shoal's tree and push it."""
    engine = local.check_engine(options)
    local.build(engine, options, cuda=cuda)
    command = [engine, "push", options.image]
    print(f"$ {shlex.join(command)}", flush=True)
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip()[-600:] or "no message"
        raise ShoalError(
            f"Pushing {options.image} with {engine} failed (exit code {done.returncode}): "
            f"{message}. The image is built here; log in to the registry (`{engine} login "
            f"{options.image.split('/')[0]}`), or for a registry served over plain HTTP list "
            f"it as insecure in the engine's registries configuration, then run the same "
            "command again (the build is cached)."
        )
    print(f"shoal: pushed {options.image} in {time.monotonic() - started:.0f} s", flush=True)
