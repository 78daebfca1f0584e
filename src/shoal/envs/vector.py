"""An in-process vector of environments with same-step autoreset and episode bookkeeping.

When an episode ends at step t, `step` returns the first observation of the next episode in
`obs` and the last observation of the finished one in `final_obs`, so the learner can bootstrap
truncated episodes from their real final state and never mixes two episodes in one return.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from shoal.envs.spec import EnvFactory, EnvSpec
from shoal.errors import EnvError
from shoal.tree import assign, leaves, map_tree


@dataclass
class VectorStep:
    """The result of one step of E environments."""

    obs: np.ndarray  # [E, ...] observation after the step (reset obs where an episode ended)
    reward: np.ndarray  # [E] float32
    terminated: np.ndarray  # [E] bool
    truncated: np.ndarray  # [E] bool
    final_obs: dict[int, np.ndarray] = field(default_factory=dict)  # env index -> last obs
    episode_returns: list[float] = field(default_factory=list)  # of episodes that ended here
    episode_lengths: list[int] = field(default_factory=list)
    # Named figures of episodes that ended here beyond each row's return, e.g. a multi-agent
    # game's summed `team_return`; the run reports each one's recent mean as `<name>_mean`.
    episode_metrics: dict[str, list[float]] = field(default_factory=dict)


class VectorEnv(Protocol):
    """E environments stepped together with same-step autoreset (see the module docstring).

    Implementations: `InProcessVectorEnv`, `SubprocessVectorEnv`, the envpool adapter. All
    seed env i with `seed + i` on the first `reset`, return observations with the spec's shape
    and dtype, and raise `EnvError` naming the env and step for NaN or wrongly shaped output.

    A vector env whose rows can be empty (a multi-agent env's absent agents,
    `shoal.envs.pettingzoo_vector`) also has `active` `[E]` bool, the rows whose current
    observation is real; the actor loop records it and learners do not learn from the others.
    Without it every row is always active.
    """

    num_envs: int
    spec: EnvSpec

    def reset(self) -> np.ndarray: ...

    def step(self, actions: np.ndarray) -> VectorStep: ...

    def close(self) -> None: ...


class InProcessVectorEnv:
    """Steps E environments one after another in this process (Box or Dict observations)."""

    def __init__(self, factories: Sequence[EnvFactory], spec: EnvSpec, seed: int) -> None:
        self.envs = make_each(factories, spec)
        self.spec = spec
        self.num_envs = len(self.envs)
        self.seed = seed
        self._obs = spec.allocate_obs(self.num_envs)
        self._returns = np.zeros(self.num_envs, np.float64)
        self._lengths = np.zeros(self.num_envs, np.int64)
        self._steps = 0
        self._discrete = spec.discrete
        for i, env in enumerate(self.envs):
            env.action_space.seed(seed + i)

    def reset(self) -> np.ndarray:
        """Reset all envs (env i seeded with seed + i) and return observations [E, ...]."""
        for i, env in enumerate(self.envs):
            try:
                obs, _ = env.reset(seed=self.seed + i)
            except EnvError:
                raise
            except Exception as err:
                raise env_failure(self.spec, i, self._steps, "reset", err) from err
            self._store(i, obs)
        self._returns[:] = 0
        self._lengths[:] = 0
        check_finite(self.spec, self._obs, None, self._steps)
        return map_tree(np.copy, self._obs)

    def step(self, actions: np.ndarray) -> VectorStep:
        """Apply actions [E, ...] and return the batched result."""
        self._steps += 1
        rewards = np.empty(self.num_envs, np.float32)
        terminated = np.empty(self.num_envs, bool)
        truncated = np.empty(self.num_envs, bool)
        final_obs: dict[int, np.ndarray] = {}
        returns: list[float] = []
        lengths: list[int] = []
        for i, env in enumerate(self.envs):
            action = int(actions[i]) if self._discrete else actions[i]
            # try costs nothing until it catches: the message names env, index and step.
            try:
                obs, reward, term, trunc, _ = env.step(action)
            except EnvError:
                raise
            except Exception as err:
                raise env_failure(self.spec, i, self._steps, "step", err) from err
            try:
                rewards[i] = reward
            except (TypeError, ValueError):
                raise EnvError(
                    f"{self.spec.env_id} (env {i}) returned a reward of type "
                    f"{type(reward).__name__} ({reward!r:.60}) at step {self._steps}; a reward "
                    "must be a number."
                ) from None
            terminated[i] = term
            truncated[i] = trunc
            if term or trunc:
                final_obs[i] = checked_obs(self.spec, obs, i, self._steps)
                returns.append(float(self._returns[i] + reward))
                lengths.append(int(self._lengths[i] + 1))
                self._returns[i] = 0
                self._lengths[i] = 0
                try:
                    obs, _ = env.reset()
                except EnvError:
                    raise
                except Exception as err:
                    raise env_failure(self.spec, i, self._steps, "reset", err) from err
            else:
                self._returns[i] += reward
                self._lengths[i] += 1
            self._store(i, obs)
        check_finite(self.spec, self._obs, rewards, self._steps)
        obs_copy = map_tree(np.copy, self._obs)
        return VectorStep(obs_copy, rewards, terminated, truncated, final_obs, returns, lengths)

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def _store(self, i: int, obs: object) -> None:
        # Checked, not assigned directly: numpy would broadcast a (1,) observation into (3,).
        assign(self._obs, i, checked_obs(self.spec, obs, i, self._steps))


def in_process_vector_env(factories: Sequence[EnvFactory], spec: EnvSpec, seed: int) -> VectorEnv:
    """The envs of `factories` stepped in this process: an `InProcessVectorEnv`, or for a
    multi-agent env (`spec.num_agents`) its games with their agents as rows."""
    if spec.num_agents:
        from shoal.envs.pettingzoo_vector import PettingZooVectorEnv

        return PettingZooVectorEnv(factories, spec, seed)
    return InProcessVectorEnv(factories, spec, seed)


def make_each(factories: Sequence[EnvFactory], spec: EnvSpec) -> list:
    """One env of each factory; a factory that raises (the first env, made to read the spaces,
    was made, so a later call: a license, a port, a display, a file one env holds) closes the
    envs made so far and raises an EnvError naming it."""
    envs: list = []
    for i, make in enumerate(factories):
        try:
            envs.append(make())
        except Exception as err:
            for env in envs:
                with contextlib.suppress(Exception):
                    env.close()
            if isinstance(err, EnvError):
                raise
            raise EnvError(
                f"Making env {i} of {len(factories)} of {spec.env_id} failed: "
                f"{type(err).__name__}: {err}. Its factory made an env before (to read the "
                "spaces), so it fails on a later call: the error is in the environment's code "
                "or what it needs (a license, a port, a display, a file one env holds open); "
                "fix it there, or try fewer envs (--num-envs)."
            ) from None
    return envs


def env_failure(spec: EnvSpec, index: int, step: int, call: str, err: Exception) -> EnvError:
    """An exception from inside env `index`'s `call` ("step" or "reset") as an EnvError."""
    return EnvError(
        f"{spec.env_id} (env {index}) raised {type(err).__name__} in {call}() at step {step}: "
        f"{err}. The error is in the environment's code: fix it there."
    )


def checked_obs(spec: EnvSpec, obs: object, index: int, step: int) -> np.ndarray:
    """`obs` as an array of the spec's shape and dtype, or an EnvError naming env and step."""
    boxes = spec.obs_boxes
    if isinstance(boxes, dict):
        if not isinstance(obs, dict) or set(obs) != set(boxes):
            raise EnvError(
                f"{spec.env_id} (env {index}) returned an observation with keys "
                f"{sorted(obs) if isinstance(obs, dict) else type(obs).__name__} at step {step}; "
                f"its observation space has keys {sorted(boxes)}."
            )
        return {k: _checked_box(spec, k, boxes[k], obs[k], index, step) for k in boxes}
    return _checked_box(spec, None, boxes, obs, index, step)


def _checked_box(spec, key, box, value, index: int, step: int) -> np.ndarray:
    what = "an observation" if key is None else f"observation[{key!r}]"
    try:
        array = np.asarray(value, dtype=box.dtype)
    except (TypeError, ValueError):
        raise EnvError(
            f"{spec.env_id} (env {index}) returned {what} that is not numeric at step {step} "
            f"({type(value).__name__}: {value!r:.60}); its observation space holds {box.dtype} "
            f"arrays of shape {box.shape}."
        ) from None
    if array.shape != box.shape:
        raise EnvError(
            f"{spec.env_id} (env {index}) returned {what} of shape {array.shape} at step {step}; "
            f"its observation space says {box.shape}."
        )
    return array


def check_finite(spec: EnvSpec, obs, rewards: np.ndarray | None, step: int) -> None:
    """One vectorised check per step: cheap, and it names the env before NaN reaches the net."""
    for leaf in leaves(obs):
        if np.issubdtype(leaf.dtype, np.floating) and not np.isfinite(leaf).all():
            bad = int(np.nonzero(~np.isfinite(leaf.reshape(len(leaf), -1)).all(1))[0][0])
            raise EnvError(
                f"{spec.env_id} (env {bad}) returned a non-finite observation (NaN or inf) "
                f"at step {step}. Check the environment's dynamics or clip its output."
            )
    if rewards is not None and not np.isfinite(rewards).all():
        bad = int(np.nonzero(~np.isfinite(rewards))[0][0])
        raise EnvError(
            f"{spec.env_id} (env {bad}) returned a non-finite reward (NaN or inf) at step {step}."
        )
