"""ES iteration time with its workers on one node against workers on both nodes of a cluster.

Starts a simulated two-node Ray cluster on this machine (`ray.cluster_utils.Cluster`, as the
tests do), then trains ES on Pendulum-v1, whose episodes are always 200 steps, so every
iteration is the same work: `--pairs` mirrored pairs, 2 x pairs x 200 env steps. Two runs:

- one node: `--workers` actors, all on the head node (custom resource `es_one`);
- both nodes: twice as many actors, `--workers` on each node (custom resource `es_both`).

The envs are split evenly over the actors, so both runs evaluate the same episodes per
iteration. The learner stays on the head node. The iteration time is the wall time between
metrics rows divided by the updates between them, after a warm-up row. Both simulated nodes
share this machine's cores, so the speed-up measures what the second node's workers add on
this machine, not on two machines: at most the number of idle cores the first node's workers
left unused, and nothing on a machine that other work keeps busy. The load average is printed.

    python benchmarks/es_scaling.py [--workers 1] [--pairs 16] [--seconds 60] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import shoal

# On a machine other work keeps at a load average of 30, Ray's GCS once went unanswered for
# over its default 60 s and the driver gave up: these raise Ray's patience (set before Ray
# starts; the cluster's processes inherit them; a value already set wins).
ATTEMPTS = 6  # cluster starts tried
RAY_PATIENCE = {
    "RAY_gcs_rpc_server_reconnect_timeout_s": "600",
    "RAY_health_check_timeout_ms": "60000",
}


def start_cluster(workers: int):
    """A head node and a second node, each with `workers` worker slots of each kind."""
    for key, value in RAY_PATIENCE.items():
        os.environ.setdefault(key, value)
    import ray
    from ray.cluster_utils import Cluster

    cpus = workers + 1  # the head also holds the learner
    for attempt in range(ATTEMPTS):  # a loaded machine can miss Ray's 30 s node registration
        cluster = None
        try:
            cluster = Cluster(
                initialize_head=True,
                head_node_args={
                    "num_cpus": cpus,
                    "include_dashboard": False,
                    "resources": {"es_one": workers, "es_both": workers, "learner_node": 1},
                },
            )
            cluster.add_node(num_cpus=cpus, resources={"es_both": workers})
            break
        except Exception:
            if cluster is not None:
                cluster.shutdown()
            if attempt == ATTEMPTS - 1:
                raise
    ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
    return cluster


def iteration_time(run_dir: Path) -> tuple[float, int]:
    """Seconds per update between the first row after warm-up and the last; updates timed."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r.get("updates")]
    if len(rows) < 3:
        raise SystemExit(f"{run_dir}: too few metrics rows; raise --seconds.")
    first, last = rows[1], rows[-1]
    updates = last["updates"] - first["updates"]
    return (last["time"] - first["time"]) / max(updates, 1), updates


def nodes_used(run_dir: Path) -> int:
    placement = json.loads((run_dir / "ray_actors.json").read_text())
    return len({role["node_id"] for name, role in placement.items() if name.startswith("actor")})


def measure(name: str, actors: int, resource: str, args: argparse.Namespace, runs: str):
    run = {
        "runs_dir": runs,
        "run_name": name,
        "progress": False,
        "tensorboard": False,
        "runtime": "ray",
        "actors": actors,
        "num_envs": 2 * args.pairs // actors,  # every episode of an iteration at once
        "actor_resources": f"{resource}=1",
        "learner_resources": "learner_node=1",
        "max_time": args.seconds,
        "total_steps": 10**9,
        "log_interval": 2 * args.pairs * 200,  # about one row per iteration
        "checkpoint_interval": 10**9,
        "eval_episodes": 0,
    }
    agent = {"pairs_per_iteration": args.pairs}
    shoal.train("es", "Pendulum-v1", seed=args.seed, run=run, agent=agent)
    seconds, updates = iteration_time(Path(runs) / name)
    return seconds, updates, nodes_used(Path(runs) / name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1, help="ES actors per node")
    parser.add_argument("--pairs", type=int, default=16, help="mirrored pairs per iteration")
    parser.add_argument("--seconds", type=float, default=60.0, help="wall time of each run")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if (2 * args.pairs) % (2 * args.workers):
        raise SystemExit("--pairs must be a multiple of --workers (envs split evenly).")
    import ray

    cluster = start_cluster(args.workers)
    try:
        with tempfile.TemporaryDirectory() as runs:
            loads = [os.getloadavg()]
            one = measure("one-node", args.workers, "es_one", args, runs)
            loads.append(os.getloadavg())
            both = measure("both-nodes", 2 * args.workers, "es_both", args, runs)
            loads.append(os.getloadavg())
    finally:
        ray.shutdown()
        cluster.shutdown()
    steps = 2 * args.pairs * 200
    print(f"ES on Pendulum-v1, {args.pairs} pairs ({steps} env steps) per iteration")
    print("placement    actors  nodes  updates_timed  s_per_iteration  env_steps_per_s")
    for label, (seconds, updates, nodes), actors in (
        ("one node", one, args.workers),
        ("both nodes", both, 2 * args.workers),
    ):
        print(
            f"{label:11}  {actors:6}  {nodes:5}  {updates:13}  {seconds:15.3f}  "
            f"{steps / seconds:15.0f}"
        )
    print(f"speed-up (one node / both nodes): {one[0] / both[0]:.2f}x")
    print(f"cores on this machine: {os.cpu_count()}")
    print(
        "load average (1, 5, 15 min) before, between, after: "
        + "; ".join(", ".join(f"{x:.1f}" for x in load) for load in loads)
    )
    print(f"finished {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")


if __name__ == "__main__":
    main()
