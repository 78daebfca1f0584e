"""Frozen config dataclasses: one-line docs per field, loading from YAML and command-line strings.

Every config in shoal is a `@dataclass(frozen=True, kw_only=True)` whose fields are declared with
`param(default, "one-line doc")`. The doc is the command-line help. Mappings (YAML) and strings
(command line) are converted to the declared field types here, and every mistake becomes a
`ConfigError` that names the key and says what to set.

A field that was renamed keeps its old names (`param(..., was=("old",))`): config files, flags,
`agent={...}` dicts, saved runs' `config.yaml` and the class's constructor still take them, and
each says once what replaced it (a `RenamedSettingWarning`).
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import math
import os
import tempfile
import types
import typing
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar

import yaml

from shoal.errors import (
    ConfigError,
    RenamedSettingWarning,
    StorageError,
    close_matches,
    did_you_mean,
)

T = TypeVar("T")

_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


def param(default: Any, doc: str, *, allow_inf: bool = False, was: tuple[str, ...] = ()) -> Any:
    """A config field with its default and the one-line doc used as command-line help.

    Float settings must be finite unless `allow_inf` (a threshold whose inf turns it off).
    `was`: the field's old names, still accepted everywhere a setting is given (a config file,
    a flag, a dict, a saved run, the constructor of a class decorated `keeps_old_names`)."""
    return dataclasses.field(
        default=default, metadata={"doc": doc, "allow_inf": allow_inf, "was": tuple(was)}
    )


def field_doc(field: dataclasses.Field[Any]) -> str:
    return str(field.metadata.get("doc", ""))


def old_names(cls: type) -> dict[str, str]:
    """{old name: current name} of the renamed fields of config class `cls`."""
    return {
        old: f.name
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        for old in f.metadata.get("was", ())
    }


def _renamed_note(where: str, old: str, new: str) -> str:
    if where == "agent":
        return (
            f"agent.{old} is now called {new} (--agent.{new.replace('_', '-')}, `{new}:` in a "
            f"config file); the old name still works."
        )
    return f"{where}: {old} is now called {new}; the old name still works."


def renamed(cls: type, values: Mapping[str, Any], where: str = "config") -> dict[str, Any]:
    """`values` with the old names of renamed fields replaced by their current names, each
    noted once (a RenamedSettingWarning).

    Layers of settings (a preset, a config file, flags) are each renamed before they are
    merged, so that an old name in a later layer overrides the new name in an earlier one."""
    old = old_names(cls)
    out: dict[str, Any] = {}
    given: dict[str, str] = {}  # current name -> the key it was given as
    for key, value in values.items():
        name = key.replace("-", "_") if isinstance(key, str) else key
        new = old.get(name, name)
        if new in given:
            raise ConfigError(
                f"{where}.{given[new]} and {where}.{key} are one setting, {new} (the other name "
                f"is its old one): set only {new}."
            )
        given[new] = key
        if new != name:
            warnings.warn(_renamed_note(where, name, new), RenamedSettingWarning, stacklevel=3)
            out[new] = value
        else:
            out[key] = value
    return out


def _old_name_hint(used: list[str], old: Mapping[str, str]) -> str:
    return " ".join(
        f"({name} is the old name of {old[name]}: --agent.{name.replace('_', '-')} is now "
        f"--agent.{old[name].replace('_', '-')}.)"
        for name in used
    )


def keeps_old_names(cls: type[T]) -> type[T]:
    """Let config class `cls` (a dataclass) take the old names of its renamed fields as
    keyword arguments and answer to them as attributes, each noting what replaced it."""
    old = old_names(cls)
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self: Any, **kwargs: Any) -> None:
        used = [key for key in kwargs if key in old]
        kwargs = renamed(cls, kwargs, cls.__name__) if used else kwargs
        try:
            init(self, **kwargs)
        except ValueError as err:
            if not used:
                raise
            raise ValueError(f"{err} {_old_name_hint(used, old)}") from None

    cls.__init__ = __init__  # type: ignore[misc]
    for name, new in old.items():
        setattr(cls, name, property(_old_attribute(cls.__name__, name, new), doc=f"`{new}`."))
    return cls


def _old_attribute(owner: str, old: str, new: str) -> Callable[[Any], Any]:
    def get(self: Any) -> Any:
        warnings.warn(_renamed_note(owner, old, new), RenamedSettingWarning, stacklevel=2)
        return getattr(self, new)

    return get


# The names Stable-Baselines3, CleanRL, RLlib and Sample Factory use for shoal's settings, and
# the names one shoal agent uses for what another calls differently: an unknown key is matched
# on meaning through this table before it is matched on spelling (`lr` is `learning_rate`, not
# `anneal_lr`). A name maps to the shoal names it may mean; only those the config has are shown.
PEER_NAMES: dict[str, tuple[str, ...]] = {
    "lr": ("learning_rate", "step_size"),
    "learning_rate": ("step_size",),
    "alpha": ("step_size", "init_alpha"),
    "q_lr": ("learning_rate",),
    "policy_lr": ("learning_rate",),
    "anneal": ("anneal_lr",),
    "lr_schedule": ("anneal_lr",),
    "total_timesteps": ("total_steps",),
    "timesteps": ("total_steps",),
    "num_timesteps": ("total_steps",),
    "max_steps": ("total_steps",),
    "env_id": ("env",),
    "env_name": ("env",),
    "n_envs": ("num_envs",),
    "num_env": ("num_envs",),
    "envs": ("num_envs",),
    "num_workers": ("actors", "num_workers"),
    "num_actors": ("actors",),
    "time_limit": ("max_time",),
    "discount": ("gamma",),
    "ent_coef": ("entropy_coef", "init_alpha"),
    "ent_coeff": ("entropy_coef",),
    "entropy_coeff": ("entropy_coef",),
    "vf_coef": ("value_coef",),
    "vf_loss_coeff": ("value_coef",),
    "value_loss_coef": ("value_coef",),
    "n_steps": ("unroll_length", "n_step"),
    "num_steps": ("unroll_length",),
    "rollout_fragment_length": ("unroll_length",),
    "t_max": ("unroll_length",),
    "rollout_length": ("unroll_length",),
    "batch_size": ("minibatch_size",),
    "minibatch_size": ("batch_size",),
    "sgd_minibatch_size": ("minibatch_size",),
    "num_minibatches": ("minibatch_size",),
    "n_epochs": ("num_epochs",),
    "update_epochs": ("num_epochs",),
    "num_sgd_iter": ("num_epochs",),
    "clip_range": ("clip_eps",),
    "clip_coef": ("clip_eps",),
    "clip_param": ("clip_eps",),
    "clip_vloss": ("clip_value",),
    "norm_adv": ("normalize_advantages",),
    "normalize_advantage": ("normalize_advantages",),
    "lam": ("gae_lambda",),
    "lambda": ("gae_lambda", "trace_lambda", "retrace_lambda"),
    "grad_clip": ("max_grad_norm",),
    "net_arch": ("hidden_sizes",),
    "hidden_size": ("hidden_sizes", "lstm_size"),
    "buffer_size": ("replay_capacity",),
    "replay_size": ("replay_capacity",),
    "learning_starts": ("min_replay_size",),
    "min_replay_size": ("learning_starts",),
    "tau": ("target_tau",),
    "polyak": ("target_tau",),
    "target_network_frequency": ("target_update_period",),
    "target_update_interval": ("target_update_period",),
    "target_update_freq": ("target_update_period",),
    "train_freq": ("samples_per_insert", "updates_per_step"),
    "gradient_steps": ("updates_per_step", "samples_per_insert"),
    "replay_ratio": ("samples_per_insert", "updates_per_step"),
    "samples_per_insert": ("updates_per_step",),
    "updates_per_step": ("samples_per_insert",),
    "exploration_initial_eps": ("epsilon_start",),
    "exploration_final_eps": ("epsilon_end",),
    "start_e": ("epsilon_start",),
    "end_e": ("epsilon_end",),
    "policy_frequency": ("policy_delay",),
    "policy_noise": ("target_noise",),
    "noise_clip": ("target_noise_clip",),
    "autotune": ("autotune_alpha",),
}


def suggestions(name: str, candidates: Any) -> list[str]:
    """Up to three of `candidates` that `name` may mean: by meaning (`PEER_NAMES`) if any
    has that meaning, else by spelling."""
    candidates = list(candidates)
    key = name.replace("-", "_").lower()
    hits = [c for c in PEER_NAMES.get(key, ()) if c in candidates]
    return hits[:3] or close_matches(key, candidates)


def suggest(name: str, candidates: Any, where: str = "") -> str:
    """' Did you mean X or Y?' (see `suggestions`) or an empty string; for agent settings
    with their flags too."""
    hits = suggestions(name, candidates)
    if where == "agent":
        hits = [f"{h!r} (--agent.{h.replace('_', '-')})" for h in hits]
    else:
        hits = [repr(h) for h in hits]
    return f" Did you mean {' or '.join(hits)}?" if hits else ""


def field_types(cls: type) -> dict[str, Any]:
    """Resolved type hints of a config dataclass (they are strings under `from __future__`)."""
    return typing.get_type_hints(cls)


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    return getattr(tp, "__name__", str(tp)).replace("NoneType", "None")


def coerce(tp: Any, value: Any, key: str) -> Any:
    """Convert `value` (a YAML scalar or a command-line string) to `tp`, or raise ConfigError."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        is_none = value is None or (isinstance(value, str) and value.lower() in ("none", "null"))
        if is_none and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return coerce(arg, value, key)
            except ConfigError:
                continue
        raise ConfigError(f"{key}={value!r} is not a {_type_name(tp)}.")
    if origin is Literal:
        choices = typing.get_args(tp)
        for choice in choices:
            if value == choice or (isinstance(value, str) and str(choice) == value):
                return choice
        raise ConfigError(
            f"{key}={value!r} is not one of {', '.join(repr(c) for c in choices)}."
            + did_you_mean(str(value), [str(c) for c in choices])
        )
    if origin is tuple:
        item_type = typing.get_args(tp)[0]
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            raise ConfigError(f"{key}={value!r} must be a list, e.g. 64,64.")
        return tuple(
            coerce(item_type, item.strip() if isinstance(item, str) else item, key)
            for item in items
            if item != ""
        )
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        raise ConfigError(f"{key}={value!r} must be true or false.")
    if tp is int:
        if isinstance(value, bool):
            raise ConfigError(f"{key}={value!r} must be an integer.")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                number = float(value.replace("_", ""))
            except ValueError:
                number = None
            if number is not None and number.is_integer():
                return int(number)
        raise ConfigError(f"{key}={value!r} must be an integer (e.g. 100000 or 1e5).")
    if tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"{key}={value!r} must be a number.")
    if tp is str:
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"{key}={value!r} must be a string.")
    raise ConfigError(f"{key}: unsupported field type {tp!r}.")  # a bug in a config class


def build(cls: type[T], values: Mapping[str, Any], where: str = "config") -> T:
    """Instantiate config class `cls` from a mapping, checking every key and value."""
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = field_types(cls)
    if not isinstance(values, Mapping):
        raise ConfigError(
            f"{where} must be a mapping of setting names to values, e.g. a dict, got a "
            f"{type(values).__name__}: {values!r:.80}."
        )
    for key in values:
        if not isinstance(key, str):
            raise ConfigError(f"{where} setting names must be strings, got {key!r}.")
    old = old_names(cls)
    used = [key.replace("-", "_") for key in values if key.replace("-", "_") in old]
    kwargs = {}
    for key, value in renamed(cls, values, where).items():
        name = key.replace("-", "_")
        if name not in fields:
            raise ConfigError(
                f"Unknown key {where}.{key}.{suggest(name, fields, where)} "
                f"Valid keys of {where}: {', '.join(sorted(fields))}."
            )
        kwargs[name] = coerce(hints[name], value, f"{where}.{name}")
        _check_finite(kwargs[name], fields[name], f"{where}.{name}")
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as err:
        hint = f" {_old_name_hint(used, old)}" if used and where == "agent" else ""
        raise ConfigError(f"Invalid {where}: {err}{hint}") from None


def _check_finite(value: Any, field: dataclasses.Field[Any], key: str) -> None:
    """NaN is never a setting, and inf only where the field says what it means."""
    for item in value if isinstance(value, tuple) else (value,):
        if not isinstance(item, float) or math.isfinite(item):
            continue
        if math.isnan(item):
            raise ConfigError(f"{key}=nan is not a number a setting can take; set a finite value.")
        if not field.metadata.get("allow_inf", False):
            raise ConfigError(
                f"{key}={item} must be a finite number; set a finite value (the field's doc: "
                f"{field_doc(field)!r})."
            )


def replace(config: T, values: Mapping[str, Any], where: str = "config") -> T:
    """A copy of `config` with `values` applied (checked like `build`)."""
    merged = {**to_dict(config), **renamed(type(config), values, where)}
    return build(type(config), merged, where)


def to_dict(config: Any) -> dict[str, Any]:
    """Plain YAML-friendly dict of a config dataclass (tuples become lists)."""
    out = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def describe(cls: type) -> list[tuple[str, str, Any, str]]:
    """(name, type name, default, doc) for each field: what `shoal list` and `--help` print."""
    hints = field_types(cls)
    return [
        (f.name, _type_name(hints[f.name]), f.default, field_doc(f) + _formerly(f))
        for f in dataclasses.fields(cls)
    ]


def _formerly(field: dataclasses.Field[Any]) -> str:
    was = field.metadata.get("was", ())
    return f" (formerly {', '.join(was)})" if was else ""


# The most values a YAML file may hold once its aliases are expanded. A config holds a few
# hundred; an alias bomb (each anchor a list of aliases of the one before) holds 9^8 from a few
# hundred bytes, which PyYAML shares but anything that walks, copies or prints it expands.
MAX_YAML_NODES = 100_000


class _TooLarge(yaml.YAMLError):
    pass


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses a document whose aliases expand past MAX_YAML_NODES values, or
    that refers to itself, before any of it is constructed."""

    def compose_document(self) -> Any:
        node = super().compose_document()
        _expanded_size(node, {}, set())
        return node


def _expanded_size(node: yaml.Node, sizes: dict[int, int], open_nodes: set[int]) -> int:
    """How many nodes `node` stands for with every alias (and merge key) written out; each
    shared node is measured once, so this is as quick as the file is short."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in open_nodes:
        raise _TooLarge("an alias refers to a value that holds it (a recursive alias)")
    open_nodes.add(key)
    if isinstance(node, yaml.MappingNode):
        children = [child for pair in node.value for child in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    else:
        children = []
    size = 1
    for child in children:
        size += _expanded_size(child, sizes, open_nodes)
        if size > MAX_YAML_NODES:
            raise _TooLarge(
                f"its aliases expand to more than {MAX_YAML_NODES:,} values (a YAML alias "
                "bomb?); write the values out, or use fewer nested aliases"
            )
    open_nodes.discard(key)
    sizes[key] = size
    return size


def load_yaml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a YAML mapping, with a clear error for a missing file or bad syntax.

    Aliases are expanded only up to MAX_YAML_NODES values, so that a short hostile file (a
    downloaded run's config.yaml) cannot take the memory and time an alias bomb asks for."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"Config file {str(path)!r} is a folder; pass a YAML file.")
    if not path.is_file():
        raise ConfigError(f"Config file {str(path)!r} does not exist.")
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_BoundedLoader) or {}
    except _TooLarge as err:
        raise ConfigError(f"Config file {str(path)!r} is refused: {err}.") from None
    except RecursionError:
        raise ConfigError(
            f"Config file {str(path)!r} is refused: its values are nested too deeply."
        ) from None
    except UnicodeDecodeError:
        raise ConfigError(
            f"Config file {str(path)!r} is not a text file (it is not UTF-8); pass a YAML file "
            "with algo/env/seed/run/agent keys."
        ) from None
    except yaml.YAMLError as err:
        raise ConfigError(f"Config file {str(path)!r} is not valid YAML: {err}") from None
    except OSError as err:
        raise ConfigError(f"Config file {str(path)!r} cannot be read: {err.strerror}.") from None
    if not isinstance(data, dict):
        raise ConfigError(f"Config file {str(path)!r} must hold a mapping of keys to values.")
    return data


def write_atomically(
    path: str | os.PathLike[str], data: bytes | str | Callable[[BinaryIO], None]
) -> None:
    """Write `data` to `path` so that a reader sees the old file or the new one, never half.

    `data` may be a function that writes to the open binary file, for contents too large to
    hold in memory twice (a replay snapshot)."""
    path = Path(path)
    mode = "w" if isinstance(data, str) else "wb"
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        raise storage_error(path, err) from None
    try:
        with os.fdopen(fd, mode) as f:
            if callable(data):
                data(f)
            else:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise storage_error(path, err) from None
        raise


def storage_error(path: Path, err: OSError) -> StorageError:
    """A file of the run that cannot be written, with what to do about it."""
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = "The disk is full: free some space, or choose a --runs-dir on another disk."
    elif err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        hint = "Choose a --runs-dir you can write to."
    else:
        hint = "Check the folder, or choose another --runs-dir."
    return StorageError(f"Cannot write {path}: {err.strerror or err}. {hint}")


def dump_yaml(data: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(data), sort_keys=False)
