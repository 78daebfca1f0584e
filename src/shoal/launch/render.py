"""Writing what a launch generates: YAML in the order it was built, and `ROLE=VALUE` options."""

from __future__ import annotations

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
