"""AWS: a Ray cluster-launcher config for EC2 (`ray up cluster.yaml`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shoal.launch import cloud
from shoal.launch.job import TrainJob

# 8 vCPUs each, as --node-cpus says by default; g4dn has one T4, r5 the memory for replay.
MACHINES = {
    "head": "m5.xlarge",
    "learner": "m5.2xlarge",
    "actors": "c5.2xlarge",
    "replay": "r5.2xlarge",
}
GPU_MACHINE = "g4dn.2xlarge"


def config(job: TrainJob, options: cloud.CloudOptions, out: Path) -> dict[str, Any]:
    """The cluster config for files written to `out`."""
    region = options.region or "us-west-2"
    machines = dict(MACHINES)
    if job.roles["learner"].gpus and "learner" not in options.machines:
        machines["learner"] = GPU_MACHINE
    provider = {"type": "aws", "region": region, "cache_stopped_nodes": False}
    return cloud.cluster_config(job, out, options, provider, _node_config, machines)


def _node_config(role: str, machine: str, gpus: int) -> dict[str, Any]:
    return {
        "InstanceType": machine,
        "BlockDeviceMappings": [{"DeviceName": "/dev/sda1", "Ebs": {"VolumeSize": 100}}],
    }


def write(job: TrainJob, out: Path, options: cloud.CloudOptions, token: str) -> list[Path]:
    return cloud.write(job, out, config(job, options, out), "aws", token)
