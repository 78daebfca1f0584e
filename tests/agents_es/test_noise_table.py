"""The ES/ARS noise table: built once per node in shared memory, mapped by every other process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest

from shoal.agents.evolution.noise import noise_table, segment_path

pytestmark = pytest.mark.skipif(
    not os.path.isdir("/dev/shm") or not os.path.exists("/proc/self/maps"),
    reason="needs Linux shared memory (/dev/shm) and /proc",
)

# A worker process: maps (or builds) the table, reports the file behind its mapping, then
# holds it until told to exit, as an ES actor holds it for its life.
WORKER = """
import os, sys
import numpy as np
from shoal.agents.evolution.noise import noise_table, segment_path
seed, size = int(sys.argv[1]), int(sys.argv[2])
table = noise_table(seed, size)
path = segment_path(seed, size)
perms = [line.split()[1] for line in open("/proc/self/maps") if line.rstrip().endswith(path)]
inode = os.stat(path).st_ino if perms else -1
print(inode, perms[0] if perms else "-", float(np.asarray(table, np.float64).sum()), flush=True)
sys.stdin.readline()
"""


def _worker(seed: int, size: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(seed), str(size)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def _report(worker: subprocess.Popen) -> tuple[int, str, float]:
    inode, perms, total = worker.stdout.readline().split()
    return int(inode), perms, float(total)


def _unique_seed() -> int:
    return uuid.uuid4().int % 2**31  # no other test run on the machine shares this table


def test_two_worker_processes_on_a_node_map_one_table():
    seed, size = _unique_seed(), 50_000
    first = _worker(seed, size)
    try:
        built = _report(first)  # the first builds it into shared memory...
        second = _worker(seed, size)
        try:
            mapped = _report(second)  # ...the second maps the same file, read-only
        finally:
            second.communicate("\n", timeout=60)
    finally:
        first.communicate("\n", timeout=60)
    assert built[0] > 0 and mapped[0] == built[0]
    assert mapped[1].startswith("r--s")  # shared, not a private copy, and not writable
    # The values are the table the seed names, in both processes.
    private = np.random.default_rng(seed).standard_normal(size, dtype=np.float32)
    expected = float(private.astype(np.float64).sum())
    assert built[2] == pytest.approx(expected) and mapped[2] == pytest.approx(expected)
    # The builder removed the file at its exit: nothing is left in /dev/shm.
    assert not os.path.exists(segment_path(seed, size))


def test_a_killed_builder_leaves_no_table_behind_and_the_next_process_builds_it():
    seed, size = _unique_seed(), 20_000
    first = _worker(seed, size)
    _report(first)
    path = segment_path(seed, size)
    assert os.path.exists(path)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=60)
    deadline = time.time() + 30  # its resource tracker notices the death and removes it
    while os.path.exists(path) and time.time() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(path)
    table = noise_table(seed, size)  # this process builds it anew, with the same values
    np.testing.assert_array_equal(
        table, np.random.default_rng(seed).standard_normal(size, dtype=np.float32)
    )
    assert not table.flags.writeable


def test_one_process_maps_a_table_once_for_all_its_users():
    seed = _unique_seed()
    assert noise_table(seed, 1000) is noise_table(seed, 1000)


@pytest.mark.distributed
def test_two_ray_actors_on_one_node_share_the_nodes_table(ray_cluster):
    import ray

    @ray.remote(num_cpus=0, resources={"actor_node": 1})
    class Holder:
        def where(self, seed: int, size: int) -> tuple[int, int, str]:
            noise_table(seed, size)
            path = segment_path(seed, size)
            with open("/proc/self/maps") as lines:
                maps = [line for line in lines if line.rstrip().endswith(path)]
            return os.getpid(), os.stat(path).st_ino, maps[0].split()[1] if maps else "-"

    seed, size = _unique_seed(), 50_000
    first, second = Holder.remote(), Holder.remote()
    pid_a, inode_a, perms_a = ray.get(first.where.remote(seed, size))
    pid_b, inode_b, perms_b = ray.get(second.where.remote(seed, size))
    assert pid_a != pid_b and inode_a == inode_b
    assert perms_a.endswith("s") and perms_b.startswith("r--s")
    for holder in (first, second):
        ray.kill(holder)
