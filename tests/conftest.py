"""Shared fixtures: every run writes under a temporary runs directory, quietly."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def quiet_run(tmp_path: Path) -> dict:
    """Run settings for tests: a private runs dir, no progress bar, no TensorBoard."""
    return {"runs_dir": str(tmp_path / "runs"), "progress": False, "tensorboard": False}


@pytest.fixture(scope="session")
def ray_cluster():
    """One Ray cluster for every distributed test: a head node and a second node whose
    `actor_node` resource lets a test place actors there (a two-node cluster on one machine)."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster, worker = _start_two_nodes(Cluster)
    ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
    yield cluster, worker
    ray.shutdown()
    cluster.shutdown()


def _start_two_nodes(cluster_class, attempts=3):
    # Ray gives a starting node a fixed 30 s to register with the GCS; on a heavily loaded
    # machine (load average near 30) a node once missed it. A fresh start then succeeds.
    for attempt in range(attempts):
        cluster = None
        try:
            cluster = cluster_class(
                initialize_head=True, head_node_args={"num_cpus": 3, "include_dashboard": False}
            )
            return cluster, cluster.add_node(num_cpus=3, resources={"actor_node": 3})
        except Exception:
            if cluster is not None:
                cluster.shutdown()
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


@pytest.fixture
def pendulum():
    """Pendulum-v1's spec: a bounded one-dimensional Box action (SAC and TD3 tests)."""
    from shoal.envs.config import EnvConfig
    from shoal.envs.registry import env_spec

    return env_spec("Pendulum-v1", EnvConfig())
