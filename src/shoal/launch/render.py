"""Writing what a launch generates: YAML in the order it was built, and `ROLE=VALUE` options."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import yaml

from shoal.errors import ConfigError


class _Dumper(yaml.SafeDumper):
    """Block style, keys in insertion order, and lists indented under their key."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> Any:
        return super().increase_indent(flow, False)


def _multiline(dumper: yaml.SafeDumper, text: str) -> Any:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _multiline)


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, width=10**6)  # a command stays one line


def role_values(items: Sequence[str], roles: Sequence[str], option: str) -> dict[str, str]:
    """['actors=n1-standard-16'] -> {'actors': 'n1-standard-16'}, each role named once."""
    out: dict[str, str] = {}
    for item in items:
        role, _, value = item.partition("=")
        if role not in roles or not value or role in out:
            raise ConfigError(
                f"{option} {item!r} must be ROLE=VALUE with ROLE one of {', '.join(roles)}, "
                f"each at most once, e.g. {option} actors=n1-standard-16."
            )
        out[role] = value
    return out


# C0 and C1 controls (newline, carriage return, tab, escape, NUL, NEL) and the Unicode line and
# paragraph separators, which YAML 1.1 also breaks lines at.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def check_text(value: str, option: str) -> str:
    """`value` if it is one line of printable text, else a ConfigError: a newline or control
    character in anything rendered could add a line to a script or a key to a YAML file."""
    found = _CONTROL.search(value)
    if found:
        raise ConfigError(
            f"{option} {value!r} holds the control character {found.group()!r}. Everything "
            "shoal launch writes into a job's script or YAML must be one line of printable text, "
            "so that no value can add a command or a key; remove it."
        )
    return value


def check_form(value: str, option: str, pattern: str, form: str) -> str:
    """`value` if it is printable (`check_text`) and matches `pattern` whole; `form` says what
    is wanted, e.g. "a Slurm partition name, e.g. cpu"."""
    check_text(value, option)
    if not re.fullmatch(pattern, value):
        raise ConfigError(f"{option} {value!r} is not {form}.")
    return value


# What the targets take, no more: every value below ends up in a script or a YAML file.
IMAGE = r"[A-Za-z0-9][A-Za-z0-9._/:@+-]*"
IMAGE_FORM = "a container image reference, e.g. registry.example/shoal:1"
MACHINE = r"[A-Za-z0-9][A-Za-z0-9._-]*"
