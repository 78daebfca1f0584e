"""Frozen config dataclasses: one-line docs per field, loading from YAML and command-line strings.

Every config in shoal is a `@dataclass(frozen=True, kw_only=True)` whose fields are declared with
`param(default, "one-line doc")`. The doc is the command-line help. Mappings (YAML) and strings
(command line) are converted to the declared field types here, and every mistake becomes a
`ConfigError` that names the key and says what to set.
"""

from __future__ import annotations

import dataclasses
import errno
import math
import os
import tempfile
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar

import yaml

from shoal.errors import ConfigError, StorageError, did_you_mean

T = TypeVar("T")

_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


def param(default: Any, doc: str, *, allow_inf: bool = False) -> Any:
    """A config field with its default and the one-line doc used as command-line help.

    Float settings must be finite unless `allow_inf` (a threshold whose inf turns it off)."""
    return dataclasses.field(default=default, metadata={"doc": doc, "allow_inf": allow_inf})


def field_doc(field: dataclasses.Field[Any]) -> str:
    return str(field.metadata.get("doc", ""))


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
    kwargs = {}
    for key, value in values.items():
        if not isinstance(key, str):
            raise ConfigError(f"{where} setting names must be strings, got {key!r}.")
        name = key.replace("-", "_")
        if name not in fields:
            raise ConfigError(
                f"Unknown key {where}.{key}.{did_you_mean(name, fields)} "
                f"Valid keys of {where}: {', '.join(sorted(fields))}."
            )
        kwargs[name] = coerce(hints[name], value, f"{where}.{name}")
        _check_finite(kwargs[name], fields[name], f"{where}.{name}")
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as err:
        raise ConfigError(f"Invalid {where}: {err}") from None


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
    merged = {**to_dict(config), **values}
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
        (f.name, _type_name(hints[f.name]), f.default, field_doc(f))
        for f in dataclasses.fields(cls)
    ]


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
