"""`pettingzoo:MODULE` ids: a PettingZoo parallel env, its agents rows of the batch.

`MODULE` names an env of PettingZoo's registry or a module with a `parallel_env(**kwargs)`
function, looked up in this order:
- PettingZoo's registry (1.27+), made by `pettingzoo.make("parallel", ...)`: its own ids
  (`pettingzoo:butterfly/pistonball-v6`) or their module names
  (`pettingzoo:butterfly.pistonball_v6`, `pettingzoo:sisl.pursuit_v5`);
- inside PettingZoo, for an env its registry does not list;
- the Multi Particle Environments, which PettingZoo 1.25 moved to the `mpe2` package:
  `pettingzoo:mpe.simple_spread_v3` and `pettingzoo:mpe2.simple_spread_v3` are the same env;
- any importable module (`pettingzoo:mypackage.my_env`), e.g. one of a user's, or one that
  wraps an env with SuperSuit or sets its arguments.

The env's agents must share one observation and one action space (one network acts for all);
see `shoal.envs.agent_rows` for how agents that join and leave are handled.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from types import ModuleType

from shoal.envs.agent_rows import AgentRows
from shoal.envs.observations import ImageLayout
from shoal.errors import EnvError, did_you_mean

__all__ = ["PETTINGZOO_PREFIX", "make_game", "pettingzoo_factory"]

PETTINGZOO_PREFIX = "pettingzoo:"


def _candidates(name: str) -> list[str]:
    """Module paths `name` may mean, in the order they are tried."""
    family, _, rest = name.partition(".")
    candidates = [f"pettingzoo.{name}"]
    if family in ("mpe", "mpe2") and rest:
        candidates.append(f"mpe2.{rest}")
    candidates.append(name)
    return list(dict.fromkeys(candidates))


def _import_env_module(env_id: str) -> ModuleType:
    try:
        import pettingzoo  # noqa: F401
    except ImportError:
        raise EnvError(
            f"{env_id} is a PettingZoo env, and PettingZoo is not installed. Install the extra: "
            "pip install 'shoal[pettingzoo]'."
        ) from None
    name = env_id[len(PETTINGZOO_PREFIX) :]
    if not name:
        raise EnvError(
            f"{env_id!r} names no module; write e.g. pettingzoo:mpe.simple_spread_v3 or "
            "pettingzoo:butterfly.pistonball_v6."
        )
    errors: list[str] = []
    for path in _candidates(name):
        try:
            module = importlib.import_module(path)
        except ModuleNotFoundError as err:
            if err.name is not None and not path.startswith(err.name):
                raise EnvError(  # the module exists, and something it imports is missing
                    f"{env_id}: importing {path} failed: {err}. Install what it needs, e.g. "
                    f"pip install 'pettingzoo[{name.partition('.')[0]}]' (or mpe2 for MPE)."
                ) from None
            errors.append(f"{path}: {err}")
            continue
        except ImportError as err:  # pettingzoo.mpe raises this: it moved to mpe2
            errors.append(f"{path}: {err}")
            continue
        if not callable(getattr(module, "parallel_env", None)):
            if callable(getattr(module, "env", None)):  # turn-based (AEC) only
                return module
            raise EnvError(
                f"{env_id}: module {path} has neither a parallel_env() nor an env() function, "
                "so it is not a PettingZoo env module."
            )
        return module
    mpe_missing = name.startswith("mpe") and importlib.util.find_spec("mpe2") is None
    hint = " The Multi Particle Environments are in the mpe2 package: pip install mpe2." * (
        mpe_missing
    )
    hint += did_you_mean(name, _known_names())
    raise EnvError(
        f"Unknown PettingZoo env {env_id!r}: no module {' or '.join(_candidates(name))} "
        f"could be imported.{hint} Ids look like pettingzoo:butterfly.pistonball_v6, "
        f"pettingzoo:sisl.pursuit_v5 or pettingzoo:mpe.simple_spread_v3. ({'; '.join(errors)})"
    )


def _known_names() -> list[str]:
    """The envs PettingZoo's registry and mpe2 hold, as module names (`sisl.pursuit_v5`)."""
    names = []
    try:
        from pettingzoo import parallel_registry

        names += [i.replace("/", ".").replace("-v", "_v") for i in parallel_registry]
    except ImportError:
        pass
    if importlib.util.find_spec("mpe2") is not None:
        import mpe2

        names += [
            f"mpe.{m.name}"
            for m in pkgutil.iter_modules(mpe2.__path__)
            if m.name.rpartition("_v")[2].isdigit()
        ]
    return names


def _registered(name: str, api: str = "parallel") -> str | None:
    """`name`'s id in PettingZoo's registry of `api` ("parallel" or "aec") envs, if any."""
    try:
        import pettingzoo

        parallel_registry = getattr(pettingzoo, f"{api}_registry")
    except (ImportError, AttributeError):  # PettingZoo before 1.27, or not installed
        return None
    family, _, module = name.partition(".")
    base, _, version = module.rpartition("_v")
    candidates = [name, f"{family}/{base}-v{version}" if base and version.isdigit() else name]
    return next((c for c in candidates if c in parallel_registry), None)


def make_game(module_name: str, env_id: str, agent_id: bool, image_layout: ImageLayout):
    """One game of `module_name`'s `parallel_env()` as agent rows."""
    module = importlib.import_module(module_name)
    return AgentRows(module.parallel_env(), env_id, agent_id, image_layout)


def make_registered_game(
    registry_id: str, env_id: str, agent_id: bool, image_layout: ImageLayout
) -> AgentRows:
    """One game of PettingZoo's registered env `registry_id` as agent rows."""
    import pettingzoo

    env = pettingzoo.make("parallel", registry_id)
    return AgentRows(env, env_id, agent_id, image_layout)


def pettingzoo_factory(env_id: str, agent_id: bool, image_layout: ImageLayout):
    """A picklable factory of `env_id`'s games, or a clear EnvError now."""
    registry_id = _registered(env_id[len(PETTINGZOO_PREFIX) :])
    if registry_id is not None:
        return functools.partial(make_registered_game, registry_id, env_id, agent_id, image_layout)
    turn_based_id = _registered(env_id[len(PETTINGZOO_PREFIX) :], "aec")
    if turn_based_id is not None:  # turn-based only (the classic board games): AEC rows
        from shoal.envs.turn_based import make_registered_turn_game

        return functools.partial(make_registered_turn_game, turn_based_id, env_id)
    module = _import_env_module(env_id)
    if not callable(getattr(module, "parallel_env", None)):  # turn-based: the AEC env as rows
        from shoal.envs.turn_based import turn_based_factory

        return turn_based_factory(module.__name__, env_id)
    return functools.partial(make_game, module.__name__, env_id, agent_id, image_layout)
