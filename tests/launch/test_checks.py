"""Each generated file checked by what would read it: the RayJob against its schema, the cluster
configs by Ray's own validation, the Dockerfiles by hadolint, the Slurm scripts by shellcheck
and bash, the Apptainer definition by its structure, the Vertex job by its API's rules."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

SCHEMA = json.loads((Path(__file__).parent / "rayjob_schema.json").read_text())
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path=str(BIN))
    if path is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]' brings it)")
    return path


def test_the_rayjob_manifest_matches_the_rayjob_schema(launched):
    manifest = yaml.safe_load((launched("k8s") / "rayjob.yaml").read_text())
    jsonschema.validate(manifest, SCHEMA)
    groups = manifest["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert [g["groupName"] for g in groups] == ["learner", "actors", "replay"]
    # 32 actors of 1 CPU on 8-CPU pods: 4 pods, each offering the cpu_node the actors ask for.
    assert groups[1]["replicas"] == 4
    assert json.loads(json.loads(groups[1]["rayStartParams"]["resources"])) == {"cpu_node": 8}
    assert (
        groups[0]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    )
    assert manifest["spec"]["entrypoint"].endswith("--address auto")
    # 4 shards of 16,000 MB: one fits Ray's share (70%) of a 32 GB pod, so 4 pods of one each.
    assert groups[2]["replicas"] == 4
    assert json.loads(json.loads(groups[2]["rayStartParams"]["resources"])) == {"big_memory": 1}


def test_the_secret_is_the_one_every_pod_of_the_rayjob_names(launched):
    out = launched("k8s")
    manifest = yaml.safe_load((out / "rayjob.yaml").read_text())
    secret = yaml.safe_load((out / "ray-auth-secret.yaml").read_text())
    assert (secret["apiVersion"], secret["kind"], secret["type"]) == ("v1", "Secret", "Opaque")
    assert secret["metadata"]["namespace"] == manifest["metadata"]["namespace"] == "rl"
    assert set(secret["stringData"]) == {"auth_token"}
    spec = manifest["spec"]
    pods = [spec["rayClusterSpec"]["headGroupSpec"]["template"], spec["submitterPodTemplate"]]
    pods += [g["template"] for g in spec["rayClusterSpec"]["workerGroupSpecs"]]
    for pod in pods:
        env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
        assert env["RAY_AUTH_MODE"]["value"] == "token"
        ref = env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]
        assert (ref["name"], ref["key"]) == (secret["metadata"]["name"], "auth_token")
    assert spec["submitterPodTemplate"]["spec"]["restartPolicy"] == "Never"  # as KubeRay's own


@pytest.mark.parametrize(
    "break_it",
    [
        lambda m: m["spec"]["rayClusterSpec"].update(workerGroupSpec=[]),  # a misspelt key
        lambda m: m["spec"].update(submissionMode="K8sMode"),
        lambda m: m["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].pop("groupName"),
        lambda m: m["spec"]["rayClusterSpec"]["headGroupSpec"]["rayStartParams"].update(x=1),
        lambda m: m["metadata"].update(name="Shoal_Job"),
        lambda m: m["spec"]["submitterPodTemplate"]["spec"]["containers"][0]["env"][1].update(
            valueFromm={}  # a misspelt key: the token would silently not reach the pod
        ),
    ],
)
def test_the_schema_refuses_a_broken_manifest(launched, break_it):
    manifest = yaml.safe_load((launched("k8s") / "rayjob.yaml").read_text())
    broken = copy.deepcopy(manifest)
    break_it(broken)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA)


@pytest.mark.parametrize("target", ["gcp", "aws"])
def test_the_cluster_configs_pass_rays_own_validation(launched, target):
    from ray.autoscaler._private.util import prepare_config, validate_config

    out = launched(target)
    config = yaml.safe_load((out / "cluster.yaml").read_text())
    validate_config(prepare_config(copy.deepcopy(config)))
    # Token authentication: the token file goes to Ray's default path on every node.
    assert config["file_mounts"] == {"~/.ray/auth_token": str((out / "ray_auth_token").absolute())}
    assert "--env RAY_AUTH_MODE=token" in config["docker"]["run_options"]
    types = config["available_node_types"]
    assert types["head"]["resources"] == {"CPU": 0}
    assert types["replay"]["resources"]["big_memory"] >= 4  # the shards' custom resource
    assert config["max_workers"] == sum(t.get("max_workers", 0) for t in types.values())
    broken = copy.deepcopy(config)
    broken["available_node_types"]["actors"]["resources"]["cpu_node"] = 0.5  # Ray wants integers
    with pytest.raises(Exception, match="is not of type 'integer'"):
        validate_config(prepare_config(broken))


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.cuda"])
def test_the_dockerfiles_pass_hadolint(launched, name):
    hadolint = _tool("hadolint")
    path = launched("k8s") / name
    done = subprocess.run(
        [hadolint, "--failure-threshold", "info", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = path.read_text()
    assert 'pip install --no-cache-dir ".[ray,atari]"' in text
    # The base is a build argument (a registry out of reach takes a local one) with the usual
    # public image as its default; torch comes first, by the Makefile's rule, from no other index.
    base = "nvidia/cuda:" if name == "Dockerfile.cuda" else "python:3.11-slim-bookworm"
    assert text.index(f"ARG BASE={base}") < text.index("FROM ${BASE}")
    assert "ARG TORCH=torch==2.13.0" in text and "--index-url" not in text
    assert text.index('"${TORCH}"') < text.index('".[ray')


def test_hadolint_does_find_a_fault():
    hadolint = _tool("hadolint")
    done = subprocess.run(
        [hadolint, "-"],
        input="FROM python\nRUN pip install torch\n",
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and "DL3006" in done.stdout  # an untagged base image


@pytest.mark.parametrize("case", ["slurm", "slurm_cpu"])
def test_the_slurm_scripts_pass_shellcheck_and_bash(launched, case):
    script = launched(case) / "shoal.sbatch"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    shellcheck = _tool("shellcheck")
    # SC1090/SC1091: the --setup line sources a file that only exists where the job runs.
    done = subprocess.run(
        [shellcheck, "--exclude=SC1090,SC1091", str(script)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout


def test_the_slurm_script_keeps_each_jobs_ray_apart(launched):
    text = (launched("slurm") / "shoal.sbatch").read_text()
    assert "#SBATCH --nodes=3" in text and "#SBATCH --gpus-per-node=1" in text
    assert 'RAY_TMPDIR="/tmp/shoal-ray-$SLURM_JOB_ID"' in text
    assert "base=$(( 20000 + block * 250 ))" in text
    assert "ray stop" not in text  # it would stop every Ray on the node
    assert '--address "$address"' in text and "--address auto" not in text
    assert "source ~/venv/bin/activate" in text


def _apptainer_sections(text: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(header keys, section -> lines) of an Apptainer definition file, as its parser reads it:
    `Key: value` lines until the first %section, then each section's body."""
    header: dict[str, str] = {}
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if not line.strip() or (line.lstrip().startswith("#") and current is None):
            continue
        match = re.match(r"^%(\w+)\s*$", line)
        if match:
            current = match.group(1)
            assert current not in sections, f"%{current} twice"
            sections[current] = []
        elif current is None:
            key, sep, value = line.partition(":")
            assert sep and key.strip() and value.strip(), f"header line {line!r}"
            header[key.strip()] = value.strip()
        else:
            sections[current].append(line)
    return header, sections


KNOWN_SECTIONS = {
    "setup",
    "files",
    "environment",
    "post",
    "runscript",
    "startscript",
    "test",
    "labels",
    "help",
    "arguments",
}


@pytest.mark.parametrize(("case", "cuda"), [("slurm_cpu", False), ("slurm", True)])
def test_the_apptainer_definition_is_well_formed(launched, case, cuda):
    header, sections = _apptainer_sections((launched(case) / "shoal.def").read_text())
    assert header["Bootstrap"] == "docker" and ":" in header["From"]  # a tagged image
    assert set(sections) <= KNOWN_SECTIONS
    root = Path(__file__).parents[2]
    for line in filter(str.strip, sections["files"]):
        source, destination = line.split()
        assert (root / source).exists() and destination.startswith("/opt/shoal/")
    post = "\n".join(sections["post"])
    assert "--index-url" not in post  # torch by the Makefile's rule: PyPI's, pinned
    assert post.index("torch==2.13.0") < post.index("/opt/shoal[ray,atari]")
    assert any("exec shoal" in line for line in sections["runscript"])


def test_the_vertex_job_follows_the_custom_job_rules(launched):
    spec = yaml.safe_load((launched("vertex") / "vertex_job.yaml").read_text())
    pools = spec["workerPoolSpecs"]
    assert 1 <= len(pools) <= 4  # Vertex AI takes at most four worker pools
    assert pools[0]["replicaCount"] == 1  # the primary replica: the learner and Ray's head
    assert [p["machineSpec"]["machineType"] for p in pools] == [
        "n1-standard-8",
        "n1-standard-8",
        "n1-highmem-8",
    ]
    assert pools[0]["machineSpec"]["acceleratorType"] == "NVIDIA_TESLA_T4"
    for pool in pools:
        assert set(pool) <= {"machineSpec", "replicaCount", "diskSpec", "containerSpec"}
        container = pool["containerSpec"]
        assert container["imageUri"] == "gcr.io/p/shoal:1" and container["command"] == [
            "bash",
            "-c",
        ]
        script = container["args"][0]
        assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    assert "ray start --head" in pools[0]["containerSpec"]["args"][0]
    assert "CLUSTER_SPEC" in pools[1]["containerSpec"]["args"][0]
