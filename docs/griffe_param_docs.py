"""Griffe extension for the documentation site's API reference (mkdocs.yml loads it).

- A config field written `param(default, "doc")` (`shoal.config.param`) gets its one-line doc as
  its docstring and its default as its value, so the reference shows the text that
  `shoal list ALGO` and the command line's `--help` show.
- A folder of modules without an `__init__.py` inside the package (`shoal/runtime/`, which
  Python imports as a namespace package) is loaded too: griffe skips such folders, and
  `shoal.Callback` and `shoal.KeepBest` live in one.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import griffe


class ShoalDocs(griffe.Extension):
    def on_attribute_instance(self, *, attr: griffe.Attribute, **kwargs: Any) -> None:
        value = attr.value
        if attr.docstring is not None or not isinstance(value, griffe.ExprCall):
            return
        if str(value.function).split(".")[-1] != "param" or len(value.arguments) < 2:
            return
        doc = _string(value.arguments[1])
        if doc is not None:
            attr.docstring = griffe.Docstring(doc, parent=attr)
            attr.value = value.arguments[0]

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.filepath is None or isinstance(pkg.filepath, list):
            return
        for folder in sorted(Path(pkg.filepath).parent.iterdir()):
            if folder.name in pkg.members or not any(folder.glob("*.py")):
                continue
            namespace = griffe.Module(folder.name, filepath=[folder], parent=pkg)
            pkg.set_member(folder.name, namespace)
            for path in sorted(folder.glob("*.py")):
                code = path.read_text(encoding="utf-8")
                loader.lines_collection[path] = code.splitlines()
                module = griffe.visit(
                    path.stem,
                    path,
                    code,
                    extensions=loader.extensions,
                    parent=namespace,
                    docstring_parser=loader.docstring_parser,
                    docstring_options=loader.docstring_options,
                    lines_collection=loader.lines_collection,
                    modules_collection=loader.modules_collection,
                )
                namespace.set_member(path.stem, module)


def _string(expr: Any) -> str | None:
    """The text of a string literal (or of implicitly joined literals), else None."""
    try:
        value = ast.literal_eval(str(expr))
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None
