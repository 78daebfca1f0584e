"""Observations are an array or a dict of arrays (Dict spaces); these map over either form."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")
Tree = Any  # a leaf, or a dict of leaves (one level, as gymnasium Dict spaces are used here)


def map_tree(fn: Callable[..., Any], tree: Tree, *rest: Tree) -> Tree:
    """`fn` applied leaf by leaf; dicts keep their keys."""
    if isinstance(tree, dict):
        return {key: fn(value, *(other[key] for other in rest)) for key, value in tree.items()}
    return fn(tree, *rest)


def assign(target: Tree, index: Any, value: Tree) -> None:
    """`target[index] = value`, leaf by leaf."""
    if isinstance(target, dict):
        for key, leaf in target.items():
            leaf[index] = value[key]
    else:
        target[index] = value


def leaves(tree: Tree) -> list[Any]:
    return list(tree.values()) if isinstance(tree, dict) else [tree]


def flatten_dict(tree: Mapping[str, Any], sep: str, prefix: str = "") -> list[tuple[str, Any]]:
    """Nested mappings as `(joined key, leaf)` pairs: `{"a": {"b": 1}}` -> `[("a.b", 1)]`
    for `sep="."`."""
    out: list[tuple[str, Any]] = []
    for key, value in tree.items():
        if isinstance(value, Mapping):
            out += flatten_dict(value, sep, f"{prefix}{key}{sep}")
        else:
            out.append((f"{prefix}{key}", value))
    return out
