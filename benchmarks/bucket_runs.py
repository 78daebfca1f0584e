"""What a run directory in a bucket costs: the same PPO CartPole run into a local folder and into
S3 (moto's S3 server on 127.0.0.1, so the network's own speed is left out), and the time spent
uploading (`RunStore.sync`: at the start, after each checkpoint and at the end).

    python benchmarks/bucket_runs.py [--steps 20480] [--checkpoint-interval 2048]

Needs `shoal[s3]` and moto (`pip install 'moto[s3]' flask flask-cors`, in the dev extra).
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time

import boto3
from moto.server import ThreadedMotoServer

import shoal
from shoal.run import storage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20480)
    parser.add_argument("--checkpoint-interval", type=int, default=2048)
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_ENDPOINT_URL=f"http://{host}:{port}",
    )
    boto3.client("s3").create_bucket(Bucket="bench")

    spent = {"seconds": 0.0, "calls": 0}
    sync = storage.RunStore.sync

    def timed_sync(self: storage.RunStore) -> None:
        start = time.perf_counter()
        sync(self)
        if self.remote:
            spent["seconds"] += time.perf_counter() - start
            spent["calls"] += 1

    storage.RunStore.sync = timed_sync  # type: ignore[method-assign]
    run = {"progress": False, "checkpoint_interval": args.checkpoint_interval, "eval_episodes": 0}
    with tempfile.TemporaryDirectory() as local:
        for where in (local, "s3://bench/runs"):
            start = time.perf_counter()
            result = shoal.train(
                "ppo", "CartPole-v1", total_steps=args.steps, run={**run, "runs_dir": where}
            )
            wall = time.perf_counter() - start
            line = f"{where:>40}: {result.env_steps} steps in {wall:.1f} s"
            if where != local:
                line += f", of which {spent['seconds']:.2f} s in {spent['calls']} uploads"
            print(line, flush=True)
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    server.stop()


if __name__ == "__main__":
    main()
