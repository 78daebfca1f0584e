"""The Python entry points: `train`, `evaluate` and `load`."""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch

from shoal import config as configs
from shoal import experiment, storage, training
from shoal.checkpoint import (
    POLICY_FORMAT,
    load_latest,
    policy_payload,
    read_any,
    save_policy,
)
from shoal.envs.config import EnvConfig
from shoal.envs.observations import ObservationConversion
from shoal.envs.registry import EnvSource, is_env_object, source_of, spec_of_source
from shoal.envs.spec import EnvSpec
from shoal.errors import (
    CheckpointError,
    ConfigError,
    ShoalError,
    user_error,
)
from shoal.run.layout import (
    CONFIG_FILE,
    SUMMARY_FILE,  # noqa: F401 (shoal.api.SUMMARY_FILE, as before)
)
from shoal.runtime.callbacks import Callback
from shoal.runtime.driver import Driver
from shoal.runtime.evaluate import EvalResult, evaluate_policy
from shoal.runtime.inline import run_inline
from shoal.runtime.recording import acting_for
from shoal.runtime.rows import Acting
from shoal.tree import leaves, map_tree

# What `env` may be: an id or `module:function` string, a gymnasium.Env (copied for each env
# copy), a function making one (or a dm_env.Environment; given a seed if it takes one), or a
# Gymnasium vector env.
EnvLike = str | gym.Env | gym.vector.VectorEnv | Callable[..., Any]


@dataclass(frozen=True)
class TrainResult:
    run_dir: Path | str  # a folder, or the bucket URL of a run in --runs-dir URL
    env_steps: int
    episodes: int
    stop_reason: str
    train_return_mean: float | None
    evaluation: EvalResult | None  # the final greedy evaluation
    summary: dict[str, Any]
    sampled_evaluation: EvalResult | None = None  # the final evaluation sampling actions
    # resume="auto" found the run already ended on its budget and did nothing (the fields are
    # its summary's).
    already_complete: bool = False


def train(
    algo: str | None = None,
    env: EnvLike | None = None,
    *,
    seed: int | None = None,
    total_steps: int | None = None,
    config: str | Path | None = None,
    agent: dict[str, Any] | None = None,
    run: dict[str, Any] | None = None,
    env_config: dict[str, Any] | None = None,
    resume: str | Path | Literal["auto"] | None = None,
    trust_run: bool = False,
    callbacks: Sequence[Callback] = (),
    started: float | None = None,
) -> TrainResult:
    """Train `algo` on `env` (or continue the run in `resume`) and evaluate the result.

    `agent`, `run` and `env_config` override fields of the agent's config, `RunConfig` and
    `EnvConfig`, over the preset for `env` and the YAML `config` file. `env` is an id, a
    `module:function` factory, or an env object (`EnvLike`): an env instance, a function making
    one, or a Gymnasium vector env (which sets `num_envs`). A run on an env object is continued
    by passing the env again with `resume`. Continuing a run whose config names modules to
    import (a `module:function` env or torso) needs `trust_run=True`.
    A custom torso (`agent={"torso": make_torso}`) may be the function or class itself: it is
    recorded as its `module:function` path; one defined in a script or notebook (`__main__`)
    is found in this process only, so put it in a module for `runtime="ray"` or to load the
    run from another process.
    `callbacks` (`shoal.Callback`s) are called in this process as the run goes; one returning
    False stops it. The result holds the final greedy and sampling evaluations. `max_time`
    (in `run`) bounds the whole call, evaluation included, counted from `started` (a
    `time.time()`; default: the call, the command line's: its start).
    `resume="auto"` (with `run_name`) starts the run, or continues it if it exists, or does
    nothing if it already ended on its budget (`shoal.requeue`): what a requeued job runs.
    A run stopped by Ctrl-C returns with `stop_reason` "interrupted", one stopped by SIGTERM
    with "terminated"; neither is evaluated.
    Example: `shoal.train("ppo", "CartPole-v1", seed=1)`, or `shoal.train("ppo", my_env)`.
    """
    started = time.time() if started is None else started
    _check_arguments(algo, seed, total_steps, config, agent, run, env_config, resume, trust_run)
    _require("started", started, (int, float, _NONE), "a time.time() value")
    callbacks = _checked_callbacks(callbacks)
    run = dict(run or {})
    if total_steps is not None:
        run["total_steps"] = total_steps
    if agent is not None:
        agent = {key: _import_path(key, value) for key, value in agent.items()}
    opened = training.open_run(algo, env, seed, config, agent, run, env_config, resume, trust_run)
    if isinstance(opened, training.Finished):  # resume="auto" found it ended on its budget
        return _already_complete(opened.where, opened.summary)
    driver = _launch(opened, callbacks, started)
    summary = training.summarise(opened, driver)
    greedy, sampled = (driver.final.get(mode) for mode in ("greedy", "sample"))
    return TrainResult(
        opened.store.where,
        driver.counter.env_steps,
        driver.counter.episodes,
        summary["stop_reason"],
        driver.counter.mean_return,
        None if greedy is None else greedy.result,
        summary,
        None if sampled is None else sampled.result,
    )


def _launch(opened: training.Opened, callbacks: Sequence[Callback], started: float) -> Driver:
    """Run `opened` on its launcher until it stops, evaluated; a ShoalError is raised again
    saying what the run left (`training.failed`)."""
    store, program = opened.store, opened.program()
    if store.remote:  # the bucket gets each checkpoint, and the rows and events before it
        callbacks = [*callbacks, training.Upload(store)]
    try:
        store.sync()  # a resumed run's changed config
        if opened.resolved.run.runtime == "ray":
            from shoal.runtime.ray_launcher import run_ray  # Ray is imported only for ray runs

            return run_ray(program, opened.state, callbacks, started)
        return run_inline(program, opened.state, callbacks, started)
    except ShoalError as err:
        raise training.failed(user_error(err), store, fresh=opened.fresh) from None


def _check_arguments(
    algo: Any,
    seed: Any,
    total_steps: Any,
    config: Any,
    agent: Any,
    run: Any,
    env_config: Any,
    resume: Any,
    trust_run: Any,
) -> None:
    """`train`'s arguments of the wrong type, refused with a ConfigError that says what."""
    _require("algo", algo, (str, _NONE), "an algorithm name such as 'ppo'")
    _require("seed", seed, (int, float, str, _NONE), "an integer")
    _require("total_steps", total_steps, (int, float, str, _NONE), "an integer such as 100_000")
    _require("config", config, (*_PATH, _NONE), "the path of a YAML file")
    for name, value in (("agent", agent), ("run", run), ("env_config", env_config)):
        _require(name, value, (Mapping, _NONE), "a dict of settings, e.g. {'num_envs': 8}")
    _require("resume", resume, (*_PATH, _NONE), "the path of a run directory, or 'auto'")
    _require("trust_run", trust_run, (bool,), "True or False")


def _checked_callbacks(callbacks: Any) -> list[Callback]:
    """`callbacks` as a list, each a `shoal.Callback` (or with all its methods)."""
    if isinstance(callbacks, Callback):
        callbacks = [callbacks]
    _require("callbacks", callbacks, (list, tuple), "a list of shoal.Callback objects")
    for callback in callbacks:
        missing = [m for m in _CALLBACK_METHODS if not callable(getattr(callback, m, None))]
        if missing:
            raise ConfigError(
                f"callbacks must be shoal.Callback objects; {callback!r:.60} lacks "
                f"{', '.join(missing)}. Subclass shoal.Callback and override the methods you "
                "need (each returning False stops the run)."
            )
    return list(callbacks)


_CALLBACK_METHODS = ("on_start", "on_row", "on_evaluation", "on_checkpoint", "on_end")


def _already_complete(run_dir: Path | str, summary: dict[str, Any]) -> TrainResult:
    """What resume="auto" returns for a run that already ended on its budget."""
    evaluations = []
    for key in ("evaluation", "evaluation_sampled"):
        try:
            evaluations.append(EvalResult(**summary[key]))
        except (KeyError, TypeError):  # not evaluated (--eval-episodes 0), or another version's
            evaluations.append(None)
    return TrainResult(
        run_dir,
        int(summary["env_steps"]),
        int(summary.get("episodes", 0)),
        summary["stop_reason"],
        summary.get("train_return_mean"),
        evaluations[0],
        summary,
        evaluations[1],
        already_complete=True,
    )


def _import_path(key: str, value: Any) -> Any:
    """An agent setting given as a function or class (a custom torso) as the
    'module:qualname' path that config.yaml records and each process imports; other values
    as they are. A function no path can name (a lambda, one defined inside another) is
    refused, saying what to do."""
    if isinstance(value, str | bytes | int | float | bool | list | tuple | dict) or not callable(
        value
    ):
        return value
    module, name = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    found: Any = None
    if module and name and "<" not in name:
        try:
            found = importlib.import_module(module)
            for part in name.split("."):
                found = getattr(found, part)
        except Exception:  # not importable by its name: refused below
            found = None
    if found is not value:
        raise ConfigError(
            f"agent.{key} got {value!r:.60}, which no import path names (a lambda, or a "
            "function defined inside another), so the run's config.yaml could not record it. "
            "Define it at the top level of a module (or of your script or notebook) and pass "
            "the function, or its path 'package.module:function'."
        )
    return f"{module}:{name}"


_PATH = (str, os.PathLike)
_NONE = type(None)


def _require(name: str, value: Any, kinds: tuple[type, ...], what: str) -> None:
    """A ConfigError for an argument of the wrong type, rather than an AttributeError or a
    TypeError from deep inside (bool is not taken for an int)."""
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise ConfigError(f"{name} must be {what}, got {type(value).__name__} {value!r:.60}.")


class _Stream:
    """One stream of `predict` calls: its rows' store and how many calls it has had."""

    def __init__(self, acting: Acting) -> None:
        self.acting, self.turn = acting, 0


@dataclass(frozen=True, eq=False)
class PolicyState:
    """The recurrent state `predict` returns, to be passed back to the next `predict` call.

    Opaque: it names a stream of episodes whose state each call moves on in place (no copy per
    step), so only the newest state of a stream can be continued."""

    stream: _Stream
    turn: int


class LoadedPolicy:
    """A trained policy: `act(obs)` or `predict(obs, state)` takes one observation or a batch.

    Recurrent policies (LSTM IMPALA, R2D2, Agent57) carry state between calls. With `act`, the
    policy holds it: after each env step call `step_result(reward, terminated | truncated)`
    (scalars for one env, arrays for a batch) so that the next `act` sees the reward and ended
    episodes start afresh; a second `act` without it is refused. With `predict`, the caller
    holds it (as in Stable-Baselines3).
    `save(path)` writes the policy to one file that `shoal.load(path)` reads.
    """

    def __init__(
        self,
        path: Path,
        deterministic: bool = True,
        trust_run: bool = False,
        env: EnvLike | None = None,
    ) -> None:
        self.path = Path(path)
        self._env = env
        saved = read_any(self.path) if self.path.is_file() else None
        if isinstance(saved, dict) and saved["format"] == POLICY_FORMAT:
            self._from_saved(saved, trust_run, env)
            self.run_dir = None
        else:
            # A checkpoint file of a run directory is read with its run's config.
            self.run_dir = self.path.parent.parent if saved is not None else self.path
            self._from_run_dir(self.run_dir, trust_run, env, saved)
        self.net = self.agent.make_networks(self.spec, self.config)
        try:
            self.net.load_state_dict(self._network)
        except (RuntimeError, KeyError) as err:
            if env is not None:  # the spaces of the env passed shaped the network
                raise ConfigError(
                    f"The env passed does not fit the policy in {path}: its spaces (observation "
                    f"{self.spec.observation_space}, action {self.spec.action_space}) differ "
                    "from those the policy was trained on. Pass the env it was trained on."
                ) from None
            raise CheckpointError(
                f"The checkpoint in {path} does not fit the network its config describes: {err}"
            ) from None
        mode = "greedy" if deterministic else "sample"
        # The policies' state: e.g. Agent57's evaluator bandit.
        self.acting = acting_for(
            self.agent, self.spec, self.config, self.net, self._policy_state, mode
        )
        self.recurrent = bool(self.acting.policy.initial_state(np.arange(1)))
        self._awaiting_result = False  # a recurrent `act` since the last `step_result`

    def _from_run_dir(
        self, run_dir: Path, trust_run: bool, env: EnvLike | None, state: Any
    ) -> None:
        if isinstance(state, str):  # a file that is neither a saved policy nor a checkpoint
            raise CheckpointError(
                f"{self.path} is {state}. shoal.load takes a run directory, a checkpoint from "
                "its checkpoints/, or a file written by policy.save(path)."
            )
        # A run trained on an env object: no file can make its env, but its checkpoints hold
        # the env's spaces, which is all acting needs; `evaluate` still asks for the env.
        env_object = _recorded_env_object(run_dir) if env is None else None
        stand_in = _env_passed_again if env_object is not None else env
        resolved = experiment.read_run_dir(run_dir, trust=trust_run, env=stand_in)
        if state is None:
            state = load_latest(run_dir / "checkpoints", resolved.algo)
        if state is None:
            raise CheckpointError(f"{run_dir} has no checkpoint yet; train it first.")
        self.algo, self.agent, self.env_id = resolved.algo, resolved.agent, resolved.env_id
        self.config, self.env_config = resolved.agent_config, resolved.env_config
        self.seed, self.env_steps = resolved.seed, int(state["env_steps"])
        self._source: EnvSource | None = resolved.source
        self._network = state["learner"]["network"]
        self._policy_state = state.get("policies", {})
        if env_object is None:
            self.spec = experiment.spec_of(resolved)
        elif "spec" in state:
            self.env_id, self._source = env_object, None
            self.spec = EnvSpec.from_data(state["spec"])
        else:  # a checkpoint of an older shoal: no spaces kept
            raise ConfigError(experiment.env_object_needed(run_dir, env_object))

    def _from_saved(self, saved: dict[str, Any], trust_run: bool, env: EnvLike | None) -> None:
        from shoal import catalog  # only the interface layer knows the agents

        if not trust_run:  # a policy file is as foreign as a run directory: it imports nothing
            stored = {k: saved.get(k) for k in ("env", "env_config", "agent")}
            if env is not None:  # the env passed replaces the recorded one
                stored["env"] = None
            experiment.refuse_untrusted_code(stored, self.path, "policy", "a saved policy's")
        self.algo, self.env_id = saved["algo"], saved["env"]
        self.agent = catalog.get_agent(self.algo)
        self.config = configs.build(self.agent.config_cls, saved["agent"], "agent")
        self.env_config = configs.build(EnvConfig, saved["env_config"], "env_config")
        self.seed, self.env_steps = int(saved["seed"]), int(saved["env_steps"])
        self.spec = EnvSpec.from_data(saved["spec"])
        self._source = None  # made when first needed: acting needs no env
        self._network, self._policy_state = saved["network"], saved["policies"]

    @property
    def env_source(self) -> EnvSource:
        """How the policy's env is made: the env passed to `load`, else the recorded id."""
        if self._source is None:
            env = self.env_id if self._env is None else self._env
            if isinstance(env, str) and is_env_object(env):
                raise ConfigError(experiment.env_object_needed(self.path, env))
            source = source_of(env, self.env_config)
            _check_fits(spec_of_source(source), self.spec)
            self._source = source
        return self._source

    def save(self, path: str | Path) -> Path:
        """Write the policy to one file (weights, spaces and configs; read back with
        `torch.load(weights_only=True)`, so loading it runs no code) that `shoal.load(path)`
        loads. The file is written whole or not at all."""
        _require("path", path, _PATH, "the path of a file to write, e.g. 'cartpole.pt'")
        path = Path(path)
        if path.is_dir():
            raise ConfigError(f"{path} is a folder; save takes a file path, e.g. {path}/policy.pt.")
        save_policy(
            path,
            policy_payload(
                algo=self.algo,
                env_id=self.env_id,
                seed=self.seed,
                env_steps=self.env_steps,
                agent_config=self.config,
                env_config=self.env_config,
                spec=self.spec,
                network=self.net.state_dict(),
                policies=self._policy_state,
            ),
        )
        return path

    def act(self, obs: Any) -> np.ndarray:
        """The action for one observation, or the actions `[n, ...]` for a batch `[n, ...]`.

        Observations are as the env itself returns them (e.g. MiniGrid's dict of an (H, W, C)
        image, an int direction and the mission text), converted as in training. Observations
        that are not numeric, hold NaN or inf, or fit neither the observation space's shape nor
        a batch of it raise a ShoalError. A recurrent policy's next `act` needs the
        `step_result` of this one first (else it would act as if the reward were 0)."""
        if self._awaiting_result:
            raise ShoalError(
                f"act was called twice without step_result in between, on a recurrent policy "
                f"({self.algo}) that acts on the previous step's reward and needs to know where "
                "episodes end. After each env step call policy.step_result(reward, terminated "
                "or truncated), or use policy.predict(obs, state, reward=reward), which takes "
                "the reward with each call and returns the state to pass back."
            )
        batch, single = self._batch(obs, "act")
        actions = self.acting.act(batch)[0]
        self._awaiting_result = self.recurrent
        return actions[0] if single else actions

    def predict(
        self,
        obs: Any,
        state: PolicyState | None = None,
        deterministic: bool = True,
        *,
        reward: Any = None,
        episode_start: Any = None,
    ) -> tuple[np.ndarray, PolicyState | None]:
        """`(action, state)` for one observation or a batch `[n, ...]`, as in Stable-Baselines3
        (observations as the env returns them, as for `act`).

        `state` is None at the start of episodes, then what the previous call returned (it is
        None throughout for feed-forward policies). For recurrent policies that see the last
        reward (R2D2, Agent57) pass it as `reward`; `episode_start` (bool, per observation)
        marks observations that begin a new episode, for a batch whose episodes end apart."""
        _require("deterministic", deterministic, (bool,), "True or False")
        batch, single = self._batch(obs, "predict")
        n = len(leaves(batch)[0])
        if state is None:
            stream = _Stream(Acting(self.acting.policy, self.spec))
        else:
            stream = self._continued(state, n)
            rewards = np.zeros(n, np.float32) if reward is None else reward
            starts = np.zeros(n, bool) if episode_start is None else episode_start
            stream.acting.observe(
                self._per_row(rewards, n, "reward"), self._per_row(starts, n, "episode_start")
            )
        stream.acting.mode = "greedy" if deterministic else "sample"
        actions = stream.acting.act(batch)[0]
        stream.turn += 1
        new = PolicyState(stream, stream.turn) if self.recurrent else None
        return (actions[0] if single else actions), new

    def _continued(self, state: Any, n: int) -> _Stream:
        if (
            not isinstance(state, PolicyState)
            or state.stream.acting.policy is not self.acting.policy
        ):
            raise ShoalError(
                "predict's state must be None (new episodes) or the state the previous "
                f"predict call of this policy returned; got {type(state).__name__}."
            )
        if state.stream.turn != state.turn:
            raise ShoalError(
                "predict got an older state of a stream that has moved on; pass back the state "
                "the last predict call returned (or None to start new episodes)."
            )
        if state.stream.acting.rows != n:
            raise ShoalError(
                f"predict got {n} observations with a state of {state.stream.acting.rows}; keep "
                "the batch size of a stream, or pass state=None to start new episodes."
            )
        return state.stream

    @staticmethod
    def _per_row(value: Any, n: int, name: str) -> np.ndarray:
        try:
            array = np.broadcast_to(np.asarray(value, np.float32), (n,))
        except (ValueError, TypeError):
            raise ShoalError(
                f"predict's {name} must be a number, or one per observation ({n}); got "
                f"{value!r:.60}."
            ) from None
        return array.astype(bool) if name == "episode_start" else array

    def _batch(self, obs: Any, caller: str) -> tuple[Any, bool]:
        """`obs` converted as training converted the env's observations, checked against the
        observation space, as a batch `[n, ...]`, and whether it was one observation."""
        raw = self.spec.raw_observation_space
        if raw is not None:
            try:
                config = self.env_config
                obs = ObservationConversion(raw, config.image_layout, config.minigrid_image)(obs)
            except ValueError as err:
                raise ShoalError(
                    f"{caller} takes observations as {self.env_id} returns them, or a batch of "
                    f"them; {err}"
                ) from None
        boxes = self.spec.obs_boxes
        if isinstance(boxes, dict) != isinstance(obs, Mapping) or (
            isinstance(boxes, dict) and set(obs) != set(boxes)
        ):
            wanted = f"dicts with keys {sorted(boxes)}" if isinstance(boxes, dict) else "arrays"
            got = (
                f"a dict with keys {sorted(obs)}"
                if isinstance(obs, Mapping)
                else type(obs).__name__
            )
            raise ShoalError(f"{self.env_id} observations are {wanted}; {caller} got {got}.")
        batch = map_tree(lambda x, box: self._checked(x, box, caller), obs, boxes)
        pairs = [(batch[k], box) for k, box in boxes.items()] if isinstance(boxes, dict) else []
        sizes = {
            len(x) if x.ndim > len(box.shape) else None for x, box in pairs or [(batch, boxes)]
        }
        if len(sizes) > 1:
            raise ShoalError(f"{caller} got observation keys with different batch sizes.")
        single = sizes == {None}
        return (map_tree(lambda x: x[None], batch) if single else batch), single

    def _checked(self, obs: Any, box: Any, caller: str) -> np.ndarray:
        try:
            array = np.asarray(obs)
        except ValueError:  # ragged nested lists
            array = np.asarray(None)
        if array.dtype.kind not in "biuf":
            raise ShoalError(
                f"{caller} got a non-numeric observation ({type(obs).__name__}: {obs!r:.60}); "
                f"{self.env_id} observations are {box.dtype} arrays of shape {box.shape}."
            )
        batched = array.ndim == len(box.shape) + 1 and array.shape[1:] == box.shape
        if array.shape != box.shape and not (batched and len(array) > 0):
            raise ShoalError(
                f"{caller} got an observation of shape {array.shape}; {self.env_id} observations "
                f"have shape {box.shape}, or {('n', *box.shape)} for a batch of n."
            )
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise ShoalError(
                f"{caller} got an observation holding NaN or inf; the policy's actions would be "
                "meaningless. Check the environment, or clip the observation first."
            )
        return array.astype(box.dtype, copy=False)

    def step_result(self, reward: Any, ended: Any) -> None:
        """Report what the last action led to: its reward(s) and which episodes ended."""
        self.acting.observe(
            np.atleast_1d(np.asarray(reward, np.float32)), np.atleast_1d(np.asarray(ended, bool))
        )
        self._awaiting_result = False


def _recorded_env_object(run_dir: Path) -> str | None:
    """The description of the env object a run was trained on (`<env object CartPole-v1>`), or
    None for a run on an id or factory (or no readable config: `read_run_dir` says why)."""
    try:
        env = configs.load_yaml(run_dir / CONFIG_FILE).get("env")
    except (ShoalError, OSError, AttributeError):
        return None
    return env if isinstance(env, str) and is_env_object(env) else None


def _env_passed_again() -> Any:
    """What stands for an env object when a run's config is read for acting only."""
    raise ConfigError("This policy was trained on an env object; pass it again as env=.")


def _check_fits(env: EnvSpec, policy: EnvSpec) -> None:
    """The env given for a policy must have the spaces it was trained on."""
    for what in ("observation_space", "action_space"):
        if getattr(env, what) != getattr(policy, what):
            raise ConfigError(
                f"The env passed has the {what.replace('_', ' ')} {getattr(env, what)}; the "
                f"policy was trained on {getattr(policy, what)} ({policy.env_id}). Pass the env "
                "it was trained on."
            )


def load(
    path: str | Path,
    deterministic: bool = True,
    trust_run: bool = False,
    env: EnvLike | None = None,
) -> LoadedPolicy:
    """The policy in `path`: a run directory (its newest checkpoint), one of its checkpoint
    files, or a file written by `LoadedPolicy.save`; a local path or a bucket URL
    (`s3://BUCKET/runs/RUN`, `gs://...`).

    `env` replaces the env the policy was trained on for `evaluate`. A run trained on an env
    object acts without it (its checkpoints hold the env's spaces), but `evaluate` needs it. A
    run or policy file whose config names modules to import (a `module:function` env or torso,
    an `import_module`) is loaded only with `trust_run=True` (a factory replaced by `env`
    excepted): importing runs the module's code."""
    _require("path", path, _PATH, "the path of a run directory or of a saved policy")
    _require("deterministic", deterministic, (bool,), "True or False")
    _require("trust_run", trust_run, (bool,), "True or False")
    if not storage.is_url(path):
        return LoadedPolicy(Path(path), deterministic, trust_run, env)
    local, store = storage.fetch(str(path))  # a copy of what the URL names, read then removed
    try:
        return LoadedPolicy(local, deterministic, trust_run, env)
    except ShoalError as err:
        raise type(err)(store.say(str(err))) from None
    finally:
        store.close()


def evaluate(
    run_dir: str | Path,
    episodes: int = 10,
    deterministic: bool = True,
    seed: int | None = None,
    trust_run: bool = False,
    env: EnvLike | None = None,
) -> EvalResult:
    """Mean return over `episodes` fresh episodes of the policy in `run_dir` (anything `load`
    takes), on `env` if given (an env instance, a function making one, or an id), else on the
    env it was trained on (`trust_run` as for `load`)."""
    _require("episodes", episodes, (int,), "a whole number of episodes")
    _require("seed", seed, (int, _NONE), "an integer")
    if episodes <= 0:
        raise ConfigError(f"episodes must be > 0, got {episodes}.")
    policy = load(run_dir, deterministic, trust_run, env)
    torch.manual_seed(policy.seed)
    # Evaluation seeds differ from training seeds so the agent meets episodes it has not seen.
    eval_seed = policy.seed + 10_000 if seed is None else seed
    return evaluate_policy(
        policy.acting, policy.env_source.factory, policy.spec, episodes, eval_seed
    )
