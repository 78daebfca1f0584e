"""The search space of `shoal tune`: agent and run settings with their distributions.

A space file is YAML naming settings by section, flat or nested:

    agent.learning_rate: {loguniform: [1.0e-4, 1.0e-2]}
    agent:
      entropy_coef: {choice: [0.0, 0.01]}
    run.num_envs: {choice: [8, 16]}

Distributions: `loguniform: [low, high]` and `uniform: [low, high]` (float settings),
`randint: [low, high]` (integers, `high` excluded, as Python's `range`), `choice: [a, b, ...]`.
Everything is checked against the agent's config class and `RunConfig` (and each value the
space can draw, at its ends, against the settings' own checks) before anything starts.
No Ray import here: a mistake in the space fails in milliseconds.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin

from shoal import config as configs
from shoal.errors import ConfigError, did_you_mean
from shoal.runtime.config import RunConfig

__all__ = ["DISTRIBUTIONS", "Dimension", "Space", "load_space", "parse_space"]

DISTRIBUTIONS = ("loguniform", "uniform", "randint", "choice")
SECTIONS = ("agent", "run")

# Run settings a trial cannot take from the space: they name where and how long the trials
# run, which `shoal tune` decides for all of them.
FIXED_RUN = {
    "total_steps": "give --total-steps to shoal tune",
    "max_time": "give --max-time to shoal tune",
    "runtime": "trials run inline, one process each",
    "address": "give --address to shoal tune",
    "runs_dir": "each trial's run directory is in the experiment directory",
    "run_name": "each trial's run directory is named after the trial",
    "progress": "shoal tune shows a table of trials",
}


@dataclass(frozen=True)
class Dimension:
    """One setting of the space: `section.name` drawn from `kind` with `args`."""

    section: str  # "agent" or "run"
    name: str
    kind: str  # one of DISTRIBUTIONS
    args: tuple[Any, ...]  # [low, high] or the choices

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}"

    def corners(self) -> list[Any]:
        """The values at the ends of the distribution, which every draw lies between."""
        if self.kind == "choice":
            return list(self.args)
        if self.kind == "randint":
            return [self.args[0], self.args[1] - 1]
        return list(self.args)

    def to_tune(self) -> Any:
        """The Ray Tune domain (imports Ray Tune)."""
        from ray import tune

        low_high = self.args
        if self.kind == "loguniform":
            return tune.loguniform(*low_high)
        if self.kind == "uniform":
            return tune.uniform(*low_high)
        if self.kind == "randint":
            return tune.randint(*low_high)
        return tune.choice(list(self.args))


@dataclass(frozen=True)
class Space:
    dimensions: tuple[Dimension, ...]
    source: str  # the file it came from, for messages

    def section(self, name: str) -> list[Dimension]:
        return [d for d in self.dimensions if d.section == name]

    def to_tune(self) -> dict[str, dict[str, Any]]:
        """`{"agent": {name: domain}, "run": {...}}`: Tune's param_space (and PBT's
        hyperparam_mutations)."""
        return {s: {d.name: d.to_tune() for d in self.section(s)} for s in SECTIONS}

    def as_yaml(self) -> dict[str, Any]:
        return {d.key: {d.kind: list(d.args)} for d in self.dimensions}


def load_space(path: str | Path, agent_config_cls: type, algo: str) -> Space:
    """Read and check the space file at `path` for the agent whose config class is given."""
    data = configs.load_yaml(path)
    return parse_space(data, agent_config_cls, algo, str(path))


def parse_space(
    data: Mapping[str, Any], agent_config_cls: type, algo: str, source: str = "the space"
) -> Space:
    """Check `data` (the space file's mapping) and return its dimensions; any mistake is a
    ConfigError naming the key, what is wrong and what to write."""
    entries: list[tuple[str, str, Any]] = []
    for key, value in data.items():
        if not isinstance(key, str):
            raise ConfigError(
                f"{source}: keys must be names like agent.learning_rate, got {key!r}."
            )
        section, dot, name = key.partition(".")
        if section not in SECTIONS:
            raise ConfigError(
                f"{source}: unknown key {key!r}; a space names agent.FIELD or run.FIELD "
                f"settings (or holds agent: and run: mappings of them).{_example()}"
            )
        if dot:
            entries.append((section, name, value))
        elif isinstance(value, Mapping):
            entries.extend((section, str(n), v) for n, v in value.items())
        else:
            raise ConfigError(
                f"{source}: {key!r} must hold a mapping of settings to distributions.{_example()}"
            )
    if not entries:
        raise ConfigError(f"{source} names no setting to search.{_example()}")
    classes = {"agent": agent_config_cls, "run": RunConfig}
    seen: set[str] = set()
    dimensions = []
    for section, name, spec in entries:
        name = name.replace("-", "_")
        key = f"{section}.{name}"
        if key in seen:
            raise ConfigError(f"{source}: {key} is named twice.")
        seen.add(key)
        fields = {f.name: f for f in dataclasses.fields(classes[section])}
        if name not in fields:
            what = f"agent settings of {algo}" if section == "agent" else "run settings"
            raise ConfigError(
                f"{source}: unknown key {key}.{did_you_mean(name, fields)} Valid "
                f"{what}: {', '.join(sorted(fields))} (`shoal list {algo}` shows the agent's)."
            )
        if section == "run" and name in FIXED_RUN:
            raise ConfigError(
                f"{source}: run.{name} cannot be searched: {FIXED_RUN[name]}. Remove it from "
                "the space."
            )
        hint = configs.field_types(classes[section])[name]
        dimensions.append(_dimension(section, name, spec, hint, source))
    return Space(tuple(dimensions), source)


def _dimension(section: str, name: str, spec: Any, hint: Any, source: str) -> Dimension:
    key = f"{section}.{name}"
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise ConfigError(
            f"{source}: {key} must be one distribution, e.g. {{loguniform: [1.0e-4, 1.0e-2]}} "
            f"or {{choice: [8, 16]}}, got {spec!r:.80}. Distributions: "
            f"{', '.join(DISTRIBUTIONS)}."
        )
    ((kind, args),) = spec.items()
    if kind not in DISTRIBUTIONS:
        raise ConfigError(
            f"{source}: {key} has unknown distribution {kind!r}."
            f"{did_you_mean(str(kind), DISTRIBUTIONS)} Distributions: {', '.join(DISTRIBUTIONS)}."
        )
    if not isinstance(args, list | tuple) or not args:
        raise ConfigError(f"{source}: {key}: {kind} takes a list, e.g. {kind}: {_sample(kind)}.")
    base = _base_type(hint)
    if kind == "choice":
        values = tuple(configs.coerce(hint, v, key) for v in args)
        if len(set(map(repr, values))) != len(values):
            raise ConfigError(f"{source}: {key}: the choices {list(args)} repeat a value.")
        return Dimension(section, name, kind, values)
    if len(args) != 2:
        raise ConfigError(
            f"{source}: {key}: {kind} takes [low, high], got {list(args)}; e.g. "
            f"{kind}: {_sample(kind)}."
        )
    if kind == "randint":
        if base is not int:
            raise ConfigError(
                f"{source}: {key} is a {getattr(base, '__name__', base)} setting; randint draws "
                "integers. Use uniform or loguniform for a float, choice otherwise."
            )
        if not all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            raise ConfigError(f"{source}: {key}: randint takes two integers, got {list(args)}.")
        low, high = args
        if high - low < 2:
            raise ConfigError(
                f"{source}: {key}: randint [{low}, {high}] draws from low to high - 1, so high "
                f"must exceed low by at least 2 (got {low}, {high}); use choice for one value."
            )
        return Dimension(section, name, kind, (low, high))
    if base is not float:
        raise ConfigError(
            f"{source}: {key} is a {getattr(base, '__name__', base)} setting; {kind} draws "
            f"floats. Use {'randint' if base is int else 'choice'} instead."
        )
    args = [_number(a) for a in args]  # YAML reads 1e-4 (no dot) as a string
    if not all(isinstance(a, int | float) and not isinstance(a, bool) for a in args):
        raise ConfigError(f"{source}: {key}: {kind} takes two numbers, got {list(args)}.")
    low, high = float(args[0]), float(args[1])
    if not (math.isfinite(low) and math.isfinite(high)) or not low < high:
        raise ConfigError(
            f"{source}: {key}: {kind} [{args[0]}, {args[1]}] needs finite low < high."
        )
    if kind == "loguniform" and low <= 0:
        raise ConfigError(
            f"{source}: {key}: loguniform [{args[0]}, {args[1]}] needs low > 0 (it draws the "
            "logarithm uniformly); use uniform for a range that reaches 0."
        )
    return Dimension(section, name, kind, (low, high))


def _number(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _base_type(hint: Any) -> Any:
    """int, float, ... of a field's type, Optional stripped."""
    if get_origin(hint) in (Union, UnionType):
        options = [a for a in get_args(hint) if a is not type(None)]
        return options[0] if len(options) == 1 else hint
    return hint


def _sample(kind: str) -> str:
    return {
        "loguniform": "[1.0e-4, 1.0e-2]",
        "uniform": "[0.9, 0.999]",
        "randint": "[1, 9]",
        "choice": "[8, 16]",
    }[kind]


def _example() -> str:
    return (
        " For example, `agent.learning_rate: {loguniform: [1.0e-4, 1.0e-2]}` and "
        "`run.num_envs: {choice: [8, 16]}`, one a line."
    )
