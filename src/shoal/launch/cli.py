"""`shoal launch slurm|k8s|gcp|aws|vertex [--out DIR] [--submit] [options] -- shoal train ...`"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import warnings
from collections.abc import Sequence
from pathlib import Path

from shoal.errors import ConfigError, ShoalError, ShoalWarning
from shoal.launch import auth, aws, cloud, gcp, images, k8s, local, push, slurm, vertex
from shoal.launch.job import TrainJob, parse_train_command
from shoal.launch.render import role_values

TARGETS = ("slurm", "k8s", "gcp", "aws", "vertex", "local")
# Which options belong to which targets (the rest are everyone's).
_ONLY = {
    "nodes": ("slurm", "local"),
    "cpus_per_node": ("slurm",),
    "gpus_per_node": ("slurm",),
    "time": ("slurm",),
    "partition": ("slurm",),
    "account": ("slurm",),
    "container": ("slurm",),
    "setup": ("slurm",),
    "namespace": ("k8s",),
    "head_cpus": ("k8s",),
    "head_memory_gb": ("k8s",),
    "node_memory_gb": ("k8s",),
    "image": ("k8s", "gcp", "aws", "vertex", "local"),
    "engine": ("local", "k8s", "gcp", "aws", "vertex"),
    "base": ("local", "k8s", "gcp", "aws", "vertex"),
    "torch": ("local", "k8s", "gcp", "aws", "vertex"),
    "ca_bundle": ("local", "k8s", "gcp", "aws", "vertex"),
    "push": ("k8s", "gcp", "aws", "vertex"),
    "node_cpus": ("k8s", "gcp", "aws", "vertex"),
    "machine": ("gcp", "aws", "vertex"),
    "region": ("gcp", "aws", "vertex"),
    "project": ("gcp", "vertex"),
}

# How the image is built (`local`, and the others' --push), not options of the job's files.
_BUILD = ("engine", "base", "torch", "ca_bundle", "push")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="shoal launch",
        usage="shoal launch {slurm,k8s,gcp,aws,vertex,local} [--out DIR] [--submit] [options] "
        "-- shoal train ALGO ...",
        description="Write what TARGET needs to run a `shoal train` command (given after --) on "
        "a Ray cluster of its own: a Slurm batch script, a KubeRay RayJob, a Ray cluster-launcher "
        "config for GCP or AWS, or a Vertex AI custom job; with Dockerfiles (CPU, CUDA) and an "
        "Apptainer definition built from the project. --submit also hands it to the target. "
        "`local` builds the CPU image here (docker, else podman) and runs the command inside it, "
        "its --runs-dir on this machine.",
        epilog="The Dockerfiles take two build arguments (--build-arg NAME=VALUE): "
        + "; ".join(
            f"{key}, {text} (default {images.build_arg_defaults(False)[key]})"
            for key, text in images.BUILD_ARGS.items()
        )
        + f". The CUDA one's BASE defaults to {images.CUDA_IMAGE}. PyPI's Linux torch wheel "
        "carries CUDA's libraries; a CPU wheel of your own keeps the CPU image small. "
        "`local` sets them with --base and --torch.",
    )
    p.add_argument("target", choices=TARGETS)
    p.add_argument("--out", help="folder to write into (default launch-TARGET)")
    p.add_argument(
        "--submit", action="store_true", help="submit with sbatch / kubectl / ray up / gcloud"
    )
    p.add_argument("--name", help="job and cluster name (default shoal-ALGO)")
    p.add_argument(
        "--extras", default="ray", help="shoal extras in the images, e.g. ray,atari (default ray)"
    )
    s = p.add_argument_group("slurm")
    s.add_argument("--nodes", type=int, help="slurm, local: nodes of the job (default 1)")
    s.add_argument("--cpus-per-node", type=int, help="default: the roles' CPUs over the nodes")
    s.add_argument("--gpus-per-node", type=int, help="default 0")
    s.add_argument("--time", help="time limit, e.g. 04:00:00 (default 01:00:00)")
    s.add_argument("--partition")
    s.add_argument("--account")
    s.add_argument("--container", help="Apptainer image (.sif) to run Ray and shoal in")
    s.add_argument("--setup", help="shell line run first, e.g. 'source ~/venv/bin/activate'")
    k = p.add_argument_group("k8s")
    k.add_argument("--namespace")
    k.add_argument("--head-cpus", type=int, help="default 2")
    k.add_argument("--head-memory-gb", type=int, help="default 8")
    k.add_argument("--node-memory-gb", type=int, help="memory of each worker pod (default 32)")
    c = p.add_argument_group("k8s, gcp, aws, vertex")
    c.add_argument(
        "--image",
        help="container image built from the Dockerfile (default shoal:latest; local: the tag "
        f"it builds and runs, default {local.DEFAULT_IMAGE})",
    )
    c.add_argument(
        "--push",
        metavar="REGISTRY",
        help="build the image here (docker, else podman) and push it to REGISTRY as "
        "REGISTRY/NAME:TAG (NAME:TAG from --image), which the job files then name; e.g. "
        "us-docker.pkg.dev/PROJECT/REPO. --submit to gcp, aws or vertex needs it, or an --image "
        "already pushed",
    )
    c.add_argument("--node-cpus", type=int, help="CPUs of each worker node (default 8)")
    c.add_argument(
        "--machine",
        action="append",
        metavar="ROLE=TYPE",
        help="gcp, aws, vertex: machine type of a role's nodes, e.g. actors=n1-standard-16",
    )
    c.add_argument("--region")
    c.add_argument("--project", help="gcp, vertex: Google Cloud project id")
    lo = p.add_argument_group("local, and the image --push builds")
    lo.add_argument("--engine", choices=local.ENGINES, help="default: docker, else podman")
    lo.add_argument(
        "--base",
        metavar="IMAGE",
        help=f"the image to build on (BASE; default {images.PYTHON_IMAGE}), e.g. a local one "
        "where no registry is reachable",
    )
    lo.add_argument(
        "--torch",
        metavar="REQ_OR_WHEEL",
        help=f"torch's pip requirement or a wheel file (TORCH; default {images.TORCH})",
    )
    lo.add_argument(
        "--ca-bundle",
        metavar="FILE",
        help="podman: a CA bundle mounted over the image's during the build (not kept in it), "
        "for pip behind a TLS-inspecting proxy",
    )
    lo.add_argument(
        "--no-build", action="store_true", help="run --image as it is, without building it"
    )
    return p


def main(argv: Sequence[str]) -> int:
    argv = list(argv)
    if "--" not in argv:
        parser().parse_args(argv)  # --help, and mistakes in the options, first
        raise ConfigError(
            "Give the training command after `--`, e.g. `shoal launch slurm --out job -- "
            "shoal train ppo --env CartPole-v1 --runtime ray`."
        )
    split = argv.index("--")
    args = parser().parse_args(argv[:split])
    for name, targets in _ONLY.items():
        if getattr(args, name) is not None and args.target not in targets:
            raise ConfigError(
                f"--{name.replace('_', '-')} is an option of {' and '.join(targets)}, not of "
                f"{args.target}; leave it out."
            )
    if args.no_build and args.target != "local":
        raise ConfigError(f"--no-build is an option of local, not of {args.target}; leave it out.")
    building = [
        f"--{name.replace('_', '-')}"
        for name in ("engine", "base", "torch", "ca_bundle")
        if getattr(args, name) is not None
    ]
    if building and args.target != "local" and args.push is None:
        raise ConfigError(
            f"{' and '.join(building)} set how the image is built, which {args.target} does "
            "only with --push REGISTRY; add --push, or leave them out."
        )
    extras = images.check_extras([e.strip() for e in args.extras.split(",") if e.strip()])
    if args.target == "local":
        return _local(args, argv[split + 1 :], extras)
    job = parse_train_command(argv[split + 1 :], args.name)
    out = Path(args.out or f"launch-{args.target}")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; name a folder to write into.")
    _check_writable(out)
    if args.push is not None:  # the job files name the pushed image
        args.image = push.pushed_name(args.push, args.image or "shoal:latest")
    if args.submit:
        push.check_submit(args.target, args.image or "shoal:latest", args.push)
    write, submit = _target(args, job, out)
    commands = submit(None) if args.submit else []
    for command in commands[:1]:
        if shutil.which(command[0]) is None:
            raise ConfigError(
                f"--submit runs `{command[0]}`, which is not installed here (not on PATH). "
                f"Install it, or leave out --submit and run the written files where "
                f"{command[0]} is."
            )
    cuda = job.roles["learner"].gpus > 0 or bool(args.gpus_per_node)
    if args.push is not None:  # before the files: they are written for an image that exists
        push.build_and_push(_build_options(args, extras), cuda)
    made = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        files = write(out)
        files += images.write(out, extras, cuda_apptainer=cuda)
    except OSError as err:  # what the up-front check cannot see (a full disk, /proc)
        removed = made and out.exists()
        if removed:
            shutil.rmtree(out, ignore_errors=True)
        raise ConfigError(
            f"Could not write the job files into --out {out}: {err.strerror or err}"
            f"{' (the half-written folder was removed)' if removed else ''}. Pass --out a "
            "folder you can write to."
        ) from None
    for path in files:
        print(f"wrote {path}")
    if args.target in ("k8s", "vertex"):  # after the checks: a refused job is one paragraph
        _warn_pod_disk(args.target, job.args)
    for command in submit(files) if args.submit else []:
        _run(command)
    return 0


def _local(args: argparse.Namespace, train: list[str], extras: list[str]) -> int:
    if args.submit:
        raise ConfigError("`shoal launch local` runs the command at once; leave out --submit.")
    if args.nodes is not None and args.nodes < 1:
        raise ConfigError(f"--nodes must be >= 1, got {args.nodes}.")
    out = Path(args.out) if args.out else None
    if out is not None:
        _check_writable(out)
    options = _build_options(args, extras)
    return local.launch(options, train, out, nodes=args.nodes or 1)


def _build_options(args: argparse.Namespace, extras: list[str]) -> local.LocalOptions:
    return local.LocalOptions(
        engine=args.engine,
        image=args.image or local.DEFAULT_IMAGE,
        base=args.base,
        torch=args.torch,
        ca_bundle=args.ca_bundle,
        build=not args.no_build,
        extras=tuple(extras),
    )


def _warn_pod_disk(target: str, train_args: Sequence[str]) -> None:
    """One line when the run directory would be written on a pod's or a Vertex replica's own
    disk, which goes with it: the checkpoints and the summary would be lost."""
    runs = local.flag_value(train_args, "--runs-dir")
    if (runs and "://" in runs) or (runs is None and "--config" in train_args):
        return  # a bucket; or a config file that may name one
    where = "the pod's" if target == "k8s" else "the Vertex replica's"
    warnings.warn(
        f"the run directory (--runs-dir {runs or 'runs'}) would be written on {where} own "
        "disk and lost with it; pass --runs-dir s3://BUCKET/runs or gs://BUCKET/runs"
        f"{' (or a path on a mounted volume)' if target == 'k8s' else ''}.",
        ShoalWarning,
        stacklevel=2,
    )


def _check_writable(out: Path) -> None:
    """Refuse an --out that cannot be made or written into, before anything is written.
    `os.access` answers EROFS for a read-only mount even to root, whom permissions let by."""
    folder = out.absolute()
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise ConfigError(f"--out {out} is inside {folder}, which is a file; name a folder.")
    if not os.access(folder, os.W_OK | os.X_OK):
        where = "" if folder == out.absolute() else f" (its folder {folder} exists)"
        raise ConfigError(
            f"--out {out} cannot be written here{where}: the folder is read-only or not "
            "yours, and nothing was written. Pass --out a folder you can write to, e.g. "
            f"--out ~/launch-{out.name or 'job'}."
        )


def _target(args: argparse.Namespace, job: TrainJob, out: Path):  # type: ignore[no-untyped-def]
    """(write(out) -> files, submit(files) -> commands) for args.target; options are checked
    here, before anything is written. Every target but Slurm (whose job makes its own) gets
    the Ray token here: RAY_AUTH_TOKEN, or a new one."""
    if args.target == "slurm":
        options = slurm.SlurmOptions(
            **{
                k: getattr(args, k)
                for k in _ONLY
                if "slurm" in _ONLY[k] and getattr(args, k) is not None
            }
        )
        slurm.script(job, options)  # mistakes fail before anything is written
        return (
            lambda out: slurm.write(job, out, options),
            lambda files: [slurm.submit_command(files or [Path(slurm.SCRIPT)])],
        )
    if args.target == "k8s":
        options_k8s = k8s.K8sOptions(
            **{
                k: getattr(args, k)
                for k in _ONLY
                if "k8s" in _ONLY[k] and k not in _BUILD and getattr(args, k) is not None
            }
        )
        k8s.manifest(job, options_k8s)
        token = auth.token()
        return (
            lambda out: k8s.write(job, out, options_k8s, token),
            lambda files: [k8s.submit_command(files or [Path(k8s.SECRET), Path(k8s.MANIFEST)])],
        )
    roles = [*(["head"] if args.target != "vertex" else []), *job.roles]
    options_cloud = cloud.CloudOptions(
        image=args.image or "shoal:latest",
        region=args.region,
        node_cpus=args.node_cpus or 8,
        machines=role_values(args.machine or [], roles, "--machine"),
        project=args.project,
    )
    token = auth.token()
    if args.target == "vertex":
        vertex.spec(job, options_cloud, token)  # mistakes fail before anything is written
        return (
            lambda out: vertex.write(job, out, options_cloud, token),
            lambda files: [vertex.submit_command(job, files or [Path(vertex.JOB)], options_cloud)],
        )
    module = gcp if args.target == "gcp" else aws
    module.config(job, options_cloud, out)
    return (
        lambda out: module.write(job, out, options_cloud, token),
        lambda files: cloud.submit_commands(job, files or [Path(cloud.CLUSTER)]),
    )


def _run(command: list[str]) -> None:
    print(f"$ {shlex.join(command)}", flush=True)
    done = subprocess.run(command, capture_output=True, text=True)
    print(done.stdout, end="")
    if done.returncode != 0:
        raise ShoalError(
            f"`{shlex.join(command)}` failed with exit code {done.returncode}: "
            f"{done.stderr.strip()[-800:] or 'no message'}. The files are written; fix the "
            "cause and run it again."
        )
