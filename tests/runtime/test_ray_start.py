"""A local Ray whose node misses Ray's fixed 30 s registration is started again, and a start
that keeps failing is one clear paragraph (seen under a load average of 40 on 2 cores)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from shoal.errors import ShoalError
from shoal.runtime import ray_connect

ray = pytest.importorskip("ray")

NICENESS = "RAY_worker_niceness"  # Ray's own name (ray_constants.RAY_WORKER_NICENESS)
LATE = "The current node timed out during startup. This could happen because ..."


class FakeInit:
    """`ray.init` failing as Ray does when its node is late, `failures` times."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls: list[dict] = []
        self.shutdowns = 0

    def init(self, **kwargs: object) -> None:
        self.calls.append(kwargs)
        if len(self.calls) <= self.failures:
            raise Exception(LATE)

    def shutdown(self) -> None:
        self.shutdowns += 1


@pytest.fixture
def fake(monkeypatch):
    def install(failures: int) -> FakeInit:
        fake = FakeInit(failures)
        monkeypatch.setattr(ray, "init", fake.init)
        monkeypatch.setattr(ray, "shutdown", fake.shutdown)
        return fake

    return install


def test_a_late_node_is_started_again(fake):
    init = fake(failures=2)
    ray_connect.start_local(num_cpus=2)
    assert len(init.calls) == 3 and init.shutdowns == 2
    assert all(call["_node_ip_address"] == "127.0.0.1" for call in init.calls)


def test_a_node_late_every_time_is_one_clear_paragraph(fake):
    init = fake(failures=ray_connect.LOCAL_START_ATTEMPTS)
    with pytest.raises(ShoalError, match="--runtime inline") as info:
        ray_connect.start_local(num_cpus=2)
    assert len(init.calls) == ray_connect.LOCAL_START_ATTEMPTS
    assert "\n" not in str(info.value) and "load average" in str(info.value)


def test_other_failures_are_not_retried(fake, monkeypatch):
    def broken(**kwargs: object) -> None:
        raise ValueError("num_cpus must be positive")

    monkeypatch.setattr(ray, "init", broken)
    with pytest.raises(ValueError, match="num_cpus"):
        ray_connect.start_local(num_cpus=2)


def test_workers_of_a_local_ray_run_at_the_drivers_priority(fake, monkeypatch):
    # Ray's default is nice 15: beside one busy process its workers (the run's roles) starved.
    monkeypatch.delenv(NICENESS, raising=False)
    seen = []
    init = fake(failures=0)

    def looks(**kw: object) -> None:
        seen.append(os.environ.get(NICENESS))
        init.init(**kw)

    monkeypatch.setattr(ray, "init", looks)
    ray_connect.start_local(num_cpus=2)
    assert seen == ["0"]
    monkeypatch.setenv(NICENESS, "10")  # a user's own setting is kept
    seen.clear()
    ray_connect.start_local(num_cpus=2)
    assert seen == ["10"]


WORKER_NICENESS = """
import os
import ray
from shoal.runtime import ray_connect

watchdog = ray_connect.start_local(num_cpus=1)
try:
    print(ray.get(ray.remote(lambda: os.nice(0)).remote()), os.nice(0))
finally:
    ray.shutdown()
    if watchdog is not None:
        watchdog.end()
"""


@pytest.mark.integration
def test_a_local_rays_workers_are_not_niced():
    # In a process of its own: the suite's other tests may have a Ray running in this one.
    env = {k: v for k, v in os.environ.items() if k != NICENESS}
    done = subprocess.run(
        [sys.executable, "-c", WORKER_NICENESS],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    worker, driver = done.stdout.split()[-2:]
    assert worker == driver  # Ray's default would be 15
