"""GCP: a Ray cluster-launcher config for Compute Engine (`ray up cluster.yaml`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shoal.errors import ConfigError
from shoal.launch import cloud
from shoal.launch.job import TrainJob

# n1 machines take GPUs; the highmem one holds a large replay.
MACHINES = {
    "head": "n1-standard-4",
    "learner": "n1-standard-8",
    "actors": "n1-standard-8",
    "replay": "n1-highmem-8",
}
ACCELERATOR = "nvidia-tesla-t4"
# Google's Deep Learning VM images have Docker, and install the NVIDIA driver when asked to.
VM_IMAGE = "projects/deeplearning-platform-release/global/images/family/common-cpu"


def config(job: TrainJob, options: cloud.CloudOptions, out: Path) -> dict[str, Any]:
    """The cluster config for files written to `out`."""
    if not options.project:
        raise ConfigError(
            "shoal launch gcp needs --project PROJECT_ID: the Google Cloud project the "
            "cluster's VMs are made in."
        )
    region = options.region or "us-central1"
    provider = {
        "type": "gcp",
        "region": region,
        "availability_zone": f"{region}-a",
        "project_id": options.project,
    }
    return cloud.cluster_config(job, out, options, provider, _node_config, MACHINES)


def _node_config(role: str, machine: str, gpus: int) -> dict[str, Any]:
    node: dict[str, Any] = {
        "machineType": machine,
        "disks": [
            {
                "boot": True,
                "autoDelete": True,
                "type": "PERSISTENT",
                "initializeParams": {"diskSizeGb": 100, "sourceImage": VM_IMAGE},
            }
        ],
    }
    if gpus:
        node["guestAccelerators"] = [{"acceleratorType": ACCELERATOR, "acceleratorCount": gpus}]
        node["metadata"] = {"items": [{"key": "install-nvidia-driver", "value": "True"}]}
        node["scheduling"] = [{"onHostMaintenance": "TERMINATE"}]  # GPU VMs cannot migrate
    return node


def write(job: TrainJob, out: Path, options: cloud.CloudOptions, token: str) -> list[Path]:
    return cloud.write(job, out, config(job, options, out), "gcp", token)
