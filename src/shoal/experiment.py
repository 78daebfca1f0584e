"""Resolve what a user asked for into a Program: configs layered, checked, and a run directory.

Layers, later wins: the agent's defaults, the preset for the env id, a YAML config file, then
explicit overrides. Everything is checked before the run directory is created, so a mistake
leaves nothing behind.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shoal import catalog, config
from shoal.agents.base import Agent
from shoal.envs.config import EnvConfig
from shoal.envs.registry import EnvSource, is_env_object, source_of, spec_of_source
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.run import storage
from shoal.run.layout import CONFIG_FILE
from shoal.run.storage import RunStore
from shoal.runtime.config import RunConfig
from shoal.runtime.program import Program, run_layout

_FILE_KEYS = ("algo", "env", "seed", "run", "agent", "env_config")


@dataclass(frozen=True)
class Resolved:
    """A checked experiment that has no run directory yet."""

    algo: str
    agent: Agent
    env_id: str
    seed: int
    run: RunConfig
    agent_config: Any
    env_config: EnvConfig
    source: EnvSource  # how the env is built; for an env object, the one thing that holds it

    def as_dict(self) -> dict[str, Any]:
        return {
            "algo": self.algo,
            "env": self.env_id,
            "seed": self.seed,
            "run": config.to_dict(self.run),
            "agent": config.to_dict(self.agent_config),
            "env_config": config.to_dict(self.env_config),
        }


def read_config_file(path: str | Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    data = config.load_yaml(path)
    for key in data:
        if key not in _FILE_KEYS:
            raise ConfigError(
                f"Unknown key {key!r} in {path}.{config.did_you_mean(key, _FILE_KEYS)} "
                f"Valid top-level keys: {', '.join(_FILE_KEYS)}."
            )
    for section in ("run", "agent", "env_config"):
        if not isinstance(data.get(section, {}), dict):
            raise ConfigError(f"{section!r} in {path} must be a mapping of keys to values.")
    return data


def resolve(
    algo: str | None,
    env: Any,
    seed: int | None = None,
    config_file: str | Path | None = None,
    agent_overrides: dict[str, Any] | None = None,
    run_overrides: dict[str, Any] | None = None,
    env_overrides: dict[str, Any] | None = None,
) -> Resolved:
    """Check and layer every setting; raises a ShoalError subclass on the first mistake.

    `env` is an id or `module:function` string or an env object (`registry.source_of`)."""
    file = read_config_file(config_file)
    algo = algo or file.get("algo")
    env = file.get("env") if env is None else env
    if not algo:
        raise ConfigError("Name an algorithm, e.g. `shoal train ppo --env CartPole-v1`.")
    if env is None or env == "":
        raise ConfigError(
            f"Name an environment with --env, e.g. `shoal train {algo} --env CartPole-v1`."
        )
    agent = catalog.get_agent(algo)
    env_config = config.build(
        EnvConfig, {**file.get("env_config", {}), **(env_overrides or {})}, "env_config"
    )
    source = source_of(env, env_config)  # unknown ids fail here, before anything is written
    pixels = env_config.dm_control_pixels
    preset = catalog.preset_for(algo, source.like or source.env_id, pixels=pixels)
    run_values = {**preset["run"], **file.get("run", {}), **(run_overrides or {})}
    if source.num_envs is not None:  # a vector env object says how many envs it steps
        _check_num_envs(source, (run_overrides or {}).get("num_envs"))
        run_values["num_envs"] = source.num_envs
    run = config.build(RunConfig, run_values, "run")
    # Each layer's old setting names are renamed before the layers merge, so that an old name
    # in a later layer (a flag, a saved run) overrides the new name in an earlier one (a preset).
    agent_config = config.build(
        agent.config_cls,
        {
            **renamed(agent, preset["agent"]),
            **renamed(agent, file.get("agent", {})),
            **renamed(agent, agent_overrides or {}),
        },
        "agent",
    )
    try:
        agent.validate(agent_config, run_layout(run))
    except ValueError as err:
        raise ConfigError(f"Invalid agent config: {err}") from None
    seed = config.coerce(int, seed if seed is not None else file.get("seed", 0), "seed")
    return Resolved(algo, agent, source.env_id, seed, run, agent_config, env_config, source)


def renamed(agent: Agent, layer: Any) -> Any:
    """One layer of agent settings with its old names replaced (`config.renamed`)."""
    return config.renamed(agent.config_cls, layer, "agent") if isinstance(layer, dict) else layer


def _check_num_envs(source: EnvSource, asked: Any) -> None:
    if asked is not None and config.coerce(int, asked, "num_envs") != source.num_envs:
        raise ConfigError(
            f"The vector env passed as env steps {source.num_envs} envs, and num_envs asks for "
            f"{asked}. Leave num_envs out (the vector env's size is used), or pass a vector env "
            f"of {asked} envs."
        )


def new_run_dir(resolved: Resolved) -> RunStore:
    """Create `runs_dir/<name>` (never reusing one; a folder, or a bucket URL staged locally:
    `shoal.run.storage`) and write the resolved config into it."""
    name = resolved.run.run_name
    if name is None:
        env_id = resolved.source.like or resolved.env_id
        if is_env_object(env_id):  # "<callable make_env>": the function's name
            env_id = env_id.strip("<>").split()[-1]
        elif ":" in env_id and not env_id.startswith(("minatar:", "vizdoom:")):
            env_id = env_id.rsplit(":", 1)[1]  # a factory: its function's name
        env = re.sub(r"[^A-Za-z0-9._-]+", "_", env_id)
        name = f"{resolved.algo}-{env}-{time.strftime('%Y%m%d-%H%M%S')}"
    return storage.create_run(
        resolved.run.runs_dir,
        name,
        fixed_name=resolved.run.run_name is not None,
        config_text=config.dump_yaml(resolved.as_dict()),
    )


def read_run_dir(
    run_dir: str | Path,
    run_overrides: dict[str, Any] | None = None,
    *,
    trust: bool = False,
    env: Any = None,
) -> Resolved:
    """The resolved config stored in a run directory, with `run_overrides` applied, on `env`
    (an id or env object) if given, else on the env it names.

    A run trained on an env object records only a description of it: reading it without `env`
    is a ConfigError that says to pass the env again.

    Resolving imports the modules the config names (a `module:function` env or torso, an
    `import_module`), so a run directory from elsewhere could run code: unless `trust`, those
    outside shoal itself are refused with a ConfigError that says to pass --trust-run.
    """
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(
            f"{run_dir} is not a shoal run directory (no {CONFIG_FILE}). "
            "Pass a directory created by `shoal train`, e.g. runs/ppo-CartPole-v1-20260101-120000."
        )
    data = config.load_yaml(path)
    if env is None:
        env = data.get("env")
        if isinstance(env, str) and is_env_object(env):
            raise ConfigError(env_object_needed(run_dir, env))
    else:
        data = {**data, "env": None}  # the env passed replaces the recorded one
        if (data.get("env_config") or {}).get("vector") == "numpy" and not isinstance(env, str):
            # A run that stepped CartPole-v1 as one numpy array, continued on an env object:
            # the object's copies step one by one.
            data["env_config"] = {**data["env_config"], "vector": "inline"}
    if not trust:
        refuse_untrusted_code(data, path, "run", "a run directory's")
    return resolve(
        data.get("algo"),
        env,
        data.get("seed"),
        None,
        data.get("agent", {}),
        {**data.get("run", {}), **(run_overrides or {})},
        # Runs saved before env settings were stored have none: they ran with the defaults.
        data.get("env_config", {}),
    )


_IMPORT_PATH = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):[A-Za-z_][\w.]*$")


# The packages of the env families shoal serves (its extras): importing one of them registers
# that family's envs, which shoal does itself when it builds them, so a stored config naming one
# (`--env.import-module minigrid`) runs no code the user did not install for shoal.
ENV_FAMILY_MODULES = frozenset(
    {
        "gymnasium",
        "ale_py",
        "envpool",
        "minatar",
        "minigrid",
        "vizdoom",
        "dm_control",
        "mujoco",
        "pettingzoo",
        "mpe2",
        "dm_env",
    }
)


def code_to_import(data: dict[str, Any]) -> list[str]:
    """What a stored config would import from outside shoal and its env families' packages,
    e.g. "env 'pkg.envs:make'"."""
    found = []
    env = data.get("env")
    factory = isinstance(env, str) and ":" in env and not is_env_object(env)
    if factory and not env.startswith(("minatar:", "vizdoom:")):  # families, not modules
        found.append((env.partition(":")[0], f"env {env!r}"))
    env_config = data.get("env_config")
    if isinstance(env_config, dict) and env_config.get("import_module"):
        module = str(env_config["import_module"])
        found.append((module, f"env_config.import_module {module!r}"))
    agent = data.get("agent")
    for key, value in agent.items() if isinstance(agent, dict) else ():
        match = _IMPORT_PATH.match(value) if isinstance(value, str) else None
        if match:
            found.append((match.group(1), f"agent.{key} {value!r}"))
    trusted = ENV_FAMILY_MODULES | {"shoal"}
    return [what for module, what in found if module.split(".")[0] not in trusted]


def refuse_untrusted_code(data: dict[str, Any], where: str | Path, what: str, whose: str) -> None:
    """Raise a ConfigError naming --trust-run if the stored config `data` (of a run directory
    or a saved policy file, read from `where`) names code outside shoal that loading it would
    import: a file from elsewhere must run no code unless its user says they trust it."""
    named = code_to_import(data)
    if named:
        raise ConfigError(
            f"{where} names code that loading the {what} would import: {'; '.join(named)}. "
            f"shoal imports {whose} modules only if you trust it: pass --trust-run (Python: "
            f"trust_run=True) if you made this {what} or trust whoever did."
        )


def env_object_needed(where: str | Path, description: str) -> str:
    """What to do with a run or saved policy trained on an env object no file can hold."""
    return (
        f"{where} was trained on an env object ({description}), which its config cannot hold, "
        "so the env must be passed again from Python: shoal.evaluate(path, env=my_env), "
        "shoal.load(path, env=my_env) or shoal.train(resume=path, env=my_env), with my_env an "
        "env instance or a function making one. The command line cannot do this; to use it, "
        "train on a 'package.module:function' factory instead."
    )


def program(resolved: Resolved, run_dir: Path, spec: EnvSpec) -> Program:
    return Program(
        agent=resolved.agent,
        agent_config=resolved.agent_config,
        run=resolved.run,
        env_config=resolved.env_config,
        env_source=resolved.source,
        spec=spec,
        seed=resolved.seed,
        run_dir=run_dir,
    )


def spec_of(resolved: Resolved) -> EnvSpec:
    return spec_of_source(resolved.source)
