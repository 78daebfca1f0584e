"""Role profiles: one YAML file saying what each role of a ray run reserves.

DRLearner kept a per-role machine table (learner on a GPU machine, actors on CPU machines, replay
on a large-memory machine); shoal's equivalent is a profile, used as
`shoal train ... --runtime ray --profile FILE` in place of the `--learner-*`, `--actor-*`,
`--replay-*` and `--inference*` flags:

    learner:   {cpus: 4, gpus: 1, resources: {gpu_node: 1}}
    actors:    {count: 32, cpus: 1, memory_mb: 2048, envs: 16, resources: {cpu_node: 1}}
    replay:    {shards: 4, cpus: 1, memory_mb: 16000, resources: {big_memory: 1}}
    inference: {mode: central, batch: 256, timeout_ms: 2}

Each key is one `RunConfig` field; `load_profile` returns those fields, so a profile is checked
by the same rules as the flags, and `merge_profile` refuses a flag that sets one of them again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shoal import config
from shoal.errors import ConfigError, did_you_mean
from shoal.runtime.config import RunConfig, parse_resources

# role -> profile key -> RunConfig field. The inference server runs inside the learner's
# process (`runtime/central.py`), so its CPUs and GPUs are the learner's.
ROLES: dict[str, dict[str, str]] = {
    "learner": {
        "cpus": "learner_cpus",
        "gpus": "learner_gpus",
        "resources": "learner_resources",
        "device": "learner_device",
    },
    "actors": {
        "count": "actors",
        "cpus": "actor_cpus",
        "memory_mb": "actor_memory_mb",
        "resources": "actor_resources",
        "envs": "num_envs",
        "max_inflight": "max_inflight",
    },
    "replay": {
        "shards": "replay_shards",
        "cpus": "replay_cpus",
        "memory_mb": "replay_memory_mb",
        "resources": "replay_resources",
    },
    "inference": {
        "mode": "inference",
        "batch": "inference_batch",
        "timeout_ms": "inference_timeout_ms",
    },
}

_AMOUNTS = {"cpus", "gpus", "timeout_ms"}  # finite and >= 0
_COUNTS = {"count", "envs", "shards", "memory_mb", "batch", "max_inflight"}  # whole and > 0


def load_profile(path: str | Path) -> dict[str, Any]:
    """The RunConfig fields a profile file sets (with `runtime: ray`), or a ConfigError that
    names the file, the role and the key."""
    data = config.load_yaml(path)
    where = f"profile {str(path)!r}"
    fields: dict[str, Any] = {"runtime": "ray"}
    hints = config.field_types(RunConfig)
    for role, keys in data.items():
        if role not in ROLES:
            raise ConfigError(
                f"Unknown role {role!r} in {where}.{did_you_mean(str(role), ROLES)} The roles "
                f"are {', '.join(ROLES)}; each maps keys to values, e.g. `actors: {{count: 8, "
                "cpus: 1}`."
            )
        if not isinstance(keys, Mapping):
            raise ConfigError(
                f"{where}: role {role!r} must map keys to values (one of "
                f"{', '.join(ROLES[role])}), got {keys!r:.60}."
            )
        for key, value in keys.items():
            field = ROLES[role].get(key)
            if field is None:
                hint = ""
                if role == "inference" and key in ("cpus", "gpus"):
                    hint = (
                        " The inference server runs in the learner's process: reserve them "
                        "under learner."
                    )
                raise ConfigError(
                    f"Unknown key {role}.{key} in {where}.{did_you_mean(str(key), ROLES[role])}"
                    f"{hint} Keys of {role}: {', '.join(ROLES[role])}."
                )
            fields[field] = _value(role, key, value, hints[field], where)
    config.build(RunConfig, fields, where)  # what only the whole can break, e.g. cuda with 0 GPUs
    return fields


def _value(role: str, key: str, value: Any, hint: Any, where: str) -> Any:
    name = f"{where}: {role}.{key}"
    if key == "resources":
        if isinstance(value, Mapping):
            value = ",".join(f"{k}={v}" for k, v in value.items())
        if not isinstance(value, str):
            raise ConfigError(f"{name} must map resource names to amounts, e.g. {{cpu_node: 1}}.")
        try:
            parse_resources(value, f"{role}.resources")
        except ValueError as err:
            raise ConfigError(f"{name}: {err}") from None
        return value
    if isinstance(value, bool):  # YAML's yes/no would pass as 1/0
        raise ConfigError(f"{name}={value!r} must be a number.")
    coerced = config.coerce(hint, value, name)
    if key in _AMOUNTS and not (isinstance(coerced, float) and 0 <= coerced < math.inf):
        raise ConfigError(f"{name}={value!r} must be a finite number >= 0.")
    if key in _COUNTS and coerced is not None and coerced <= 0:
        raise ConfigError(f"{name}={value!r} must be a whole number > 0.")
    return coerced


def merge_profile(
    run: Mapping[str, Any], profile: Mapping[str, Any], path: str | Path
) -> dict[str, Any]:
    """`run` (settings from flags) with the profile's fields; a flag that sets a field the
    profile sets too is a ConfigError, since which one wins would be a guess."""
    flag_of = {field: role_key for role_key, field in _profile_keys().items()}
    for field in profile:
        if field in run and not (field == "runtime" and run[field] == "ray"):
            if field == "runtime":
                raise ConfigError(
                    f"--runtime {run[field]} and --profile {path} disagree: a profile places "
                    "roles on Ray, so it needs --runtime ray (or leave --runtime out)."
                )
            raise ConfigError(
                f"--{field.replace('_', '-')} {run[field]} and --profile {path} ({flag_of[field]}) "
                "both set the same thing. Set it in one place: drop the flag, or the key from "
                "the profile."
            )
    return {**run, **profile}


def _profile_keys() -> dict[str, str]:
    """'actors.cpus' -> 'actor_cpus' for every role and key."""
    return {f"{role}.{key}": field for role, keys in ROLES.items() for key, field in keys.items()}
