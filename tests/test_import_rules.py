"""The import rules of docs/architecture.md, checked on the source with an `ast` walk.

- `shoal.ops` imports only torch, numpy, the standard library and itself;
- `shoal.runtime` imports no agent (an algorithm's package: `shoal.agents.ppo`), only the
  agent libraries (`shoal.agents.base`, `common`, the family libraries);
- no agent imports another agent: what two agents share lives in a library;
- nothing in the package imports `shoal.cli`, the console entry, but `python -m shoal`.

Every import counts, a lazy one inside a function included: it is a dependency all the same.
The checker runs on any source tree, so the tests at the end feed it deliberate violations and
see it report each one.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import shoal
from shoal.catalog import AGENTS

SOURCE = Path(shoal.__file__).parent

# Packages under shoal/agents/ that agents build on. Every other package there must be an
# algorithm with a catalog entry (test_every_agents_package_is_an_agent_or_a_library).
LIBRARIES = frozenset(
    {"base", "checks", "common", "evolution", "value", "actor_critic", "continuous", "vtrace_ac"}
)
OPS_MAY_IMPORT = frozenset({"torch", "numpy"})
MAY_IMPORT_CLI = frozenset({"shoal.__main__", "shoal.cli"})


@dataclass(frozen=True)
class Import:
    """`module` (the importer, at `path`:`line`) imports `target` (a dotted module name)."""

    module: str
    target: str
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.module} imports {self.target}"


def module_name(root: Path, path: Path) -> str:
    """`shoal.envs.vector` for ROOT/envs/vector.py, `shoal.envs` for ROOT/envs/__init__.py."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(root: Path) -> list[Import]:
    """Every import in the package at `root` (a folder named after the package), once each."""
    return list(dict.fromkeys(_walk(root)))  # `from a import x, y` is one import of a


def _walk(root: Path) -> Iterator[Import]:
    modules = {module_name(root, p) for p in root.rglob("*.py")}
    for path in sorted(root.rglob("*.py")):
        module = module_name(root, path)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Import(module, alias.name, path, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # from . import x, from ..a import b
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    # `from shoal import cli` imports the module shoal.cli
                    submodule = f"{base}.{alias.name}"
                    target = submodule if submodule in modules else base
                    yield Import(module, target, path, node.lineno)


def _top(name: str) -> str:
    return name.partition(".")[0]


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _agent_of(name: str, agents: frozenset[str]) -> str | None:
    """The agent whose package holds module `name` (`ppo` for shoal.agents.ppo.loss), if any."""
    parts = name.split(".")
    if len(parts) >= 3 and parts[:2] == ["shoal", "agents"] and parts[2] in agents:
        return parts[2]
    return None


def ops_violations(root: Path) -> list[Import]:
    """Imports in shoal.ops of anything but torch, numpy, the standard library and ops."""
    allowed = OPS_MAY_IMPORT | sys.stdlib_module_names
    return [
        i
        for i in imports(root)
        if _within(i.module, "shoal.ops")
        and not _within(i.target, "shoal.ops")
        and _top(i.target) not in allowed
    ]


def runtime_violations(root: Path, agents: frozenset[str]) -> list[Import]:
    """Imports of an agent's package in shoal.runtime."""
    return [
        i
        for i in imports(root)
        if _within(i.module, "shoal.runtime") and _agent_of(i.target, agents) is not None
    ]


def sibling_violations(root: Path, agents: frozenset[str]) -> list[Import]:
    """Imports of one agent's package in another agent's."""
    found = []
    for i in imports(root):
        importer, imported = _agent_of(i.module, agents), _agent_of(i.target, agents)
        if importer is not None and imported is not None and importer != imported:
            found.append(i)
    return found


def cli_violations(root: Path) -> list[Import]:
    """Imports of shoal.cli anywhere but the console entries."""
    return [
        i
        for i in imports(root)
        if _within(i.target, "shoal.cli") and i.module not in MAY_IMPORT_CLI
    ]


def catalog_agents() -> frozenset[str]:
    """The algorithm packages the catalog registers: {"ppo", "dqn", ...}."""
    return frozenset(module.split(".")[2] for module, _ in AGENTS.values())


def _report(found: list[Import], rule: str) -> str:
    return f"{rule} ({len(found)}):\n" + "\n".join(f"  {i}" for i in found)


# The rules, on the tree.


def test_every_agents_package_is_an_agent_or_a_library():
    # A new package under shoal/agents/ must say which it is, or the rules below would skip it.
    packages = {p.parent.name for p in (SOURCE / "agents").glob("*/__init__.py")}
    packages |= {p.stem for p in (SOURCE / "agents").glob("*.py") if p.stem != "__init__"}
    agents = catalog_agents()
    assert agents <= packages, f"catalog entries without a package: {sorted(agents - packages)}"
    assert not agents & LIBRARIES, f"both an agent and a library: {sorted(agents & LIBRARIES)}"
    unknown = packages - agents - LIBRARIES
    assert not unknown, (
        f"shoal/agents/{sorted(unknown)}: neither a catalog entry nor a library; register the "
        "algorithm in shoal/catalog.py, or add the library to LIBRARIES in this test"
    )


def test_ops_imports_only_torch_numpy_and_the_standard_library():
    found = ops_violations(SOURCE)
    assert not found, _report(found, "shoal.ops imports beyond torch, numpy and stdlib")


def test_runtime_imports_no_agent():
    found = runtime_violations(SOURCE, catalog_agents())
    assert not found, _report(found, "shoal.runtime imports an agent")


def test_no_agent_imports_another_agent():
    found = sibling_violations(SOURCE, catalog_agents())
    assert not found, _report(found, "an agent imports another agent")


def test_nothing_imports_the_cli():
    found = cli_violations(SOURCE)
    assert not found, _report(found, "imports of shoal.cli (the console entry)")


def test_envs_vector_and_registry_do_not_import_each_other():
    # The registry builds vectors (it imports them); a vector names only what spec.py holds.
    vectors = {"shoal.envs.vector", "shoal.envs.subprocess_vector", "shoal.envs.subprocess_worker"}
    found = [
        i for i in imports(SOURCE) if i.module in vectors and i.target == "shoal.envs.registry"
    ]
    assert not found, _report(found, "a vector imports the registry")


# The checker, on deliberate violations.

AGENTS_HERE = frozenset({"ppo", "sac", "td3"})
VIOLATIONS = {
    "ops/__init__.py": "",
    "ops/vtrace.py": "import torch\nfrom shoal.ops._checks import check\nimport gymnasium\n",
    "ops/_checks.py": "import numpy as np\nfrom collections import abc\n",
    "runtime/__init__.py": "",
    "runtime/wiring.py": (
        "from shoal.agents.base import Agent\n"
        "from shoal.agents.common import targets\n"
        "def f():\n    from shoal.agents.ppo.config import PPOConfig\n"
    ),
    "agents/__init__.py": "",
    "agents/base.py": "",
    "agents/common/__init__.py": "",
    "agents/common/targets.py": "",
    "agents/ppo/__init__.py": "from shoal.agents.ppo.config import PPOConfig\n",
    "agents/ppo/config.py": "PPOConfig = None\n",
    "agents/sac/__init__.py": "",
    "agents/sac/networks.py": "from shoal.agents.common import targets\n",
    "agents/td3/__init__.py": "",
    "agents/td3/learner.py": "from shoal.agents.sac.networks import TwinQ\n",
    "agents/td3/actor.py": "from ..sac import networks\n",
    "cli.py": "",
    "__main__.py": "from shoal.cli import main\n",
    "__init__.py": "",
    "launch/__init__.py": "",
    "launch/job.py": "def parse():\n    from shoal import cli\n",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "shoal"
    for name, text in VIOLATIONS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _pairs(found: list[Import]) -> set[tuple[str, str]]:
    return {(i.module, i.target) for i in found}


def test_the_checker_finds_each_kind_of_violation(tree: Path):
    assert _pairs(ops_violations(tree)) == {("shoal.ops.vtrace", "gymnasium")}
    assert _pairs(runtime_violations(tree, AGENTS_HERE)) == {
        ("shoal.runtime.wiring", "shoal.agents.ppo.config")
    }
    assert _pairs(sibling_violations(tree, AGENTS_HERE)) == {
        ("shoal.agents.td3.learner", "shoal.agents.sac.networks"),
        ("shoal.agents.td3.actor", "shoal.agents.sac.networks"),  # relative, resolved
    }
    assert _pairs(cli_violations(tree)) == {("shoal.launch.job", "shoal.cli")}


def test_the_checker_passes_the_tree_once_the_violations_are_removed(tree: Path):
    for name in ("ops/vtrace.py", "runtime/wiring.py", "agents/td3/learner.py"):
        (tree / name).write_text("import torch\n")
    (tree / "agents/td3/actor.py").write_text("from ..common import targets\n")
    (tree / "launch/job.py").write_text("from shoal.commandline import build_parser\n")
    assert not ops_violations(tree)
    assert not runtime_violations(tree, AGENTS_HERE)
    assert not sibling_violations(tree, AGENTS_HERE)
    assert not cli_violations(tree)
