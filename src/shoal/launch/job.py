"""The `shoal train` command a launch runs, checked, and what its roles need of the cluster.

Every target runs the same command on a Ray cluster it makes; only how the nodes start differs.
So the command is parsed once here: a `--profile` is written out as flags (the job then needs
no file from this machine), `--runtime ray` is ensured, and `--address` is left to the target,
which points it at the job's own Ray head.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from shoal import catalog, config, experiment
from shoal.commandline import build_parser, split_section_overrides
from shoal.errors import ConfigError
from shoal.launch.render import check_text
from shoal.run.buckets import check_lasting
from shoal.runtime.config import RunConfig, parse_resources
from shoal.runtime.profile import load_profile, merge_profile

# Ray gives tasks and actors the node's memory less its object store (30% by default).
RAY_MEMORY_SHARE = 0.7


@dataclass(frozen=True)
class Role:
    """One kind of process of the run: how many, and what each reserves on Ray."""

    name: str  # learner, actors or replay
    count: int
    cpus: float
    gpus: float = 0.0
    memory_mb: int | None = None
    resources: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeGroup:
    """Nodes started for one role: each offers `cpus`/`gpus` and, so that Ray places the role
    there, the custom resources the role asks for, enough for the processes that fit."""

    role: str
    nodes: int
    cpus: int
    gpus: int
    resources: dict[str, int]  # whole amounts: Ray's cluster configs take integers


@dataclass(frozen=True)
class TrainJob:
    algo: str
    args: tuple[str, ...]  # after `shoal train`, with --runtime ray, without --address
    roles: dict[str, Role]
    name: str

    def command(self, address: str) -> str:
        """The shell line that runs the training against the Ray at `address` (a shell word,
        such as "$address", left unquoted for the shell to expand)."""
        return shlex.join(["shoal", "train", *self.args]) + f" --address {address}"

    def node_groups(self, node_cpus: int, node_memory_gb: int | None = None) -> list[NodeGroup]:
        """A node group per role, each sized to hold every process of the role: as many per
        node as its CPUs allow, and, when the node's memory is known, as Ray's share of it
        (`RAY_MEMORY_SHARE`) allows the role's `memory_mb`."""
        groups = []
        for role in self.roles.values():
            per_node = max(1, math.floor(node_cpus / role.cpus)) if role.cpus > 0 else role.count
            if node_memory_gb and role.memory_mb:
                by_memory = math.floor(node_memory_gb * 1024 * RAY_MEMORY_SHARE / role.memory_mb)
                if by_memory < 1:
                    raise ConfigError(
                        f"One {role.name} process reserves {role.memory_mb} MB, more than Ray "
                        f"offers on a node of {node_memory_gb} GB (about "
                        f"{RAY_MEMORY_SHARE:.0%}, the rest is its object store): raise "
                        "--node-memory-gb or lower the role's memory_mb."
                    )
                per_node = min(per_node, by_memory)
            nodes = 1 if role.name == "learner" else math.ceil(role.count / per_node)
            fits = min(per_node, role.count)
            groups.append(
                NodeGroup(
                    role.name,
                    nodes,
                    node_cpus,
                    math.ceil(role.gpus),
                    {k: math.ceil(v * fits) for k, v in role.resources.items()},
                )
            )
        return groups


def parse_train_command(argv: Sequence[str], name: str | None = None) -> TrainJob:
    """The checked `shoal train ...` of `shoal launch TARGET ... -- shoal train ...`."""
    argv = list(argv)
    if argv[:2] != ["shoal", "train"]:
        raise ConfigError(
            "shoal launch runs a training command given after `--`, e.g. `shoal launch slurm "
            "--out job -- shoal train ppo --env CartPole-v1 --runtime ray`; got "
            f"{shlex.join(argv) or 'nothing'!r}."
        )
    for arg in argv[2:]:  # the command is written into the job's script or YAML
        check_text(arg, "The training command's argument")
    # --agent.* and --env.* are checked for form here and stay in the command as given.
    # The same parser as `shoal train`'s, so a typo fails here, not later.
    rest, overrides = split_section_overrides(argv[2:])
    parsed = build_parser().parse_args(["train", *rest])
    run = {k[4:]: v for k, v in vars(parsed).items() if k.startswith("run.") and v is not None}
    if run.get("address"):
        raise ConfigError(
            f"Leave --address {run['address']} out of the command: shoal launch starts a Ray "
            "for the job and points the command at its head."
        )
    if run.get("runtime", "ray") != "ray":
        raise ConfigError(
            f"shoal launch runs the command on a Ray cluster it starts; --runtime {run['runtime']} "
            "would not use it. Pass --runtime ray (or leave --runtime out)."
        )
    if not parsed.algo and not parsed.config and not parsed.resume:
        raise ConfigError("Name an algorithm in the command, e.g. `shoal train ppo --env ...`.")
    if parsed.algo:
        catalog.get_agent(parsed.algo)  # an unknown algorithm fails with its close names
    args = _without_flag(argv[2:], "--profile")
    if "runtime" not in run:  # the profile's runtime is not written out with its roles
        args += ["--runtime", "ray"]
    if parsed.profile:
        profile = load_profile(parsed.profile)
        run = merge_profile(run, profile, parsed.profile)
        args += [a for k, v in profile.items() if k != "runtime" for a in (_flag(k), _text(v))]
    values = config.build(RunConfig, {**run, "runtime": "ray"}, "run")
    check_lasting(values.runs_dir)  # the job's command is a process of its own
    if parsed.resume in (None, "auto"):
        # What `shoal train` resolves first, here: an unknown env, agent key or value fails
        # now rather than in a queued job. (`--resume RUN_DIR` names a run on the cluster.)
        experiment.resolve(
            parsed.algo,
            parsed.env,
            parsed.seed,
            parsed.config,
            overrides["agent"] or None,
            {**run, "runtime": "ray"},
            overrides["env"] or None,
        )
    algo = parsed.algo or "run"
    return TrainJob(algo, tuple(args), _roles(values, run), _job_name(name or f"shoal-{algo}"))


def _roles(run: RunConfig, given: dict) -> dict[str, Role]:
    roles = {
        "learner": Role(
            "learner",
            1,
            run.learner_cpus,
            run.learner_gpus,
            None,
            parse_resources(run.learner_resources, "--learner-resources"),
        ),
        "actors": Role(
            "actors",
            run.actors,
            run.actor_cpus,
            0.0,
            run.actor_memory_mb,
            parse_resources(run.actor_resources, "--actor-resources"),
        ),
    }
    if any(k.startswith("replay_") for k in given):  # replay placed on nodes of its own
        roles["replay"] = Role(
            "replay",
            run.replay_shards,
            run.replay_cpus,
            0.0,
            run.replay_memory_mb,
            parse_resources(run.replay_resources, "--replay-resources"),
        )
    return roles


def _text(value: object) -> str:
    """A flag's value as a user would type it: 4 rather than 4.0."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _flag(field_name: str) -> str:
    return "--" + field_name.replace("_", "-")


def _without_flag(argv: list[str], flag: str) -> list[str]:
    """argv without `flag VALUE` or `flag=VALUE`."""
    out, skip = [], False
    for item in argv:
        if skip:
            skip = False
        elif item == flag:
            skip = True
        elif not item.startswith(flag + "="):
            out.append(item)
    return out


def _job_name(name: str) -> str:
    """A name every target accepts: Kubernetes' DNS-1123 label is the strictest."""
    check_text(name, "--name")
    cleaned = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:40].strip("-")
    if not cleaned or not cleaned[0].isalpha():
        raise ConfigError(
            f"--name {name!r} must start with a letter and hold letters, digits and '-' "
            "(it names the Slurm job, the RayJob and the clusters)."
        )
    return cleaned
