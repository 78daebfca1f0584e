"""The `shoal launch` commands whose files are kept as golden files, one per target."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parents[2]
GOLDEN = Path(__file__).parent / "golden"
PROFILE = str(ROOT / "examples" / "profiles" / "cluster.yaml")
# The Ray token the tests launch with; the golden files hold "<auth-token>" in its place.
TOKEN = "test-token-0123456789abcdef"
TRAIN = ["shoal", "train", "apex", "--env", "ALE/Pong-v5", "--runtime", "ray", "--profile", PROFILE]

# target -> (its options, the training command): one case per target, with its own options set.
CASES = {
    "slurm": (
        [
            "--nodes",
            "3",
            "--time",
            "04:00:00",
            "--partition",
            "cpu",
            "--setup",
            "source ~/venv/bin/activate",
        ],
        TRAIN,
    ),
    "slurm_cpu": (
        ["--container", "shoal.sif"],
        ["shoal", "train", "ppo", "--env", "CartPole-v1", "--agent.learning-rate", "0.001"],
    ),
    "k8s": (["--image", "registry.example/shoal:1", "--namespace", "rl"], TRAIN),
    "gcp": (
        ["--image", "gcr.io/p/shoal:1", "--project", "my-project", "--region", "europe-west4"],
        TRAIN,
    ),
    "aws": (
        [
            "--image",
            "123.dkr.ecr.us-east-1.amazonaws.com/shoal:1",
            "--machine",
            "actors=c5.4xlarge",
            "--node-cpus",
            "16",
        ],
        TRAIN,
    ),
    "vertex": (["--image", "gcr.io/p/shoal:1", "--project", "my-project"], TRAIN),
}


def target_of(case: str) -> str:
    return case.split("_")[0]
