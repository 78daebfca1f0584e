"""Atari on envpool (Weng et al. 2022, "EnvPool: A Highly Parallel Reinforcement Learning
Environment Execution Engine") behind shoal's `VectorEnv` protocol.

envpool steps the emulators in C++ threads with the same protocol as `shoal.envs.atari`
(Mnih et al. 2015 preprocessing, Machado et al. 2018 sticky actions as an option): no-op starts
of 1..noop_max frames, frame skip 4 with a max over the last two frames, 84x84 grey by area
interpolation, a stack of 4 channels-first, a cap in agent steps counted after the no-ops. Its
fire-on-reset, reward clipping and episodic life are switched off unless the options ask.

Autoreset. envpool 1.2.5 (`env_type="gymnasium"`) resets on the *next* step: the step on which
an episode ends returns its last observation, and the following `step` ignores that env's action,
returns the first observation of the next episode with reward 0 and counts as a step. shoal's
convention is the same-step autoreset of `shoal.envs.vector`, so here envs that just finished are
reset at once (`reset(env_ids)`), their last observations go to `final_obs` and `obs` holds the
first observation of the next episode. Every `step` is then a real agent step in every env.
"""

from __future__ import annotations

import importlib.util

import gymnasium as gym
import numpy as np

from shoal.envs.atari import AtariOptions, atari_game
from shoal.envs.spec import EnvSpec
from shoal.envs.vector import VectorStep
from shoal.errors import EnvError, did_you_mean

__all__ = ["EnvpoolVectorEnv", "envpool_available", "envpool_task_id"]


def envpool_available() -> bool:
    """Whether envpool can be imported (without importing it)."""
    return importlib.util.find_spec("envpool") is not None


def envpool_task_id(env_id: str) -> str:
    """envpool's id for an Atari id: `ALE/Pong-v5` and `PongNoFrameskip-v4` give `Pong-v5`."""
    return f"{atari_game(env_id)}-v5"


class EnvpoolVectorEnv:
    """`num_envs` copies of an Atari game stepped by envpool, with shoal's same-step autoreset.

    Env i is seeded with `seed + i` when envpool is created (envpool cannot be reseeded by
    `reset`). `num_threads` is envpool's worker thread count (0: its default). Observations are
    `[E, frame_stack, screen_size, screen_size]` uint8, rewards unclipped float32;
    `episode_returns` and `episode_lengths` are the undiscounted returns and the lengths in agent
    steps of the episodes that ended at this step.
    """

    def __init__(
        self,
        env_id: str,
        num_envs: int,
        seed: int,
        options: AtariOptions | None = None,
        num_threads: int = 0,
    ) -> None:
        options = options or AtariOptions()
        if not envpool_available():
            raise EnvError(
                "The envpool backend needs envpool: pip install envpool, or use the gymnasium "
                "backend (--env.backend gymnasium)."
            )
        if options.noop_max < 1:
            raise EnvError(
                "envpool always takes at least one no-op frame at reset, so noop_max=0 cannot "
                "be honoured; set noop_max >= 1 or use the gymnasium backend."
            )
        if num_envs < 1:
            raise EnvError(f"num_envs must be >= 1, got {num_envs}.")
        import envpool

        task = envpool_task_id(env_id)
        if task not in envpool.list_all_envs():
            known = [t for t in envpool.list_all_envs() if t.endswith("-v5")]
            raise EnvError(
                f"envpool has no Atari game {task!r} (from {env_id!r}).{did_you_mean(task, known)}"
                " Use --env.backend gymnasium to run it on ale-py."
            )
        size = options.screen_size
        self._pool = envpool.make(
            task,
            env_type="gymnasium",
            num_envs=num_envs,
            batch_size=num_envs,
            num_threads=num_threads,
            seed=seed,
            max_episode_steps=options.max_steps,
            noop_max=options.noop_max,
            frame_skip=options.frame_skip,
            stack_num=options.frame_stack,
            img_height=size,
            img_width=size,
            gray_scale=True,
            use_inter_area_resize=True,
            repeat_action_probability=options.repeat_action_probability,
            full_action_space=options.full_action_space,
            episodic_life=options.terminal_on_life_loss,
            zero_discount_on_life_loss=False,
            reward_clip=False,
            use_fire_reset=False,
        )
        observation_space = gym.spaces.Box(0, 255, (options.frame_stack, size, size), np.uint8)
        action_space = gym.spaces.Discrete(int(self._pool.action_space.n))
        self.spec = EnvSpec(env_id, observation_space, action_space, options.frame_skip)
        self.num_envs = num_envs
        self.frames_per_step = options.frame_skip
        self.options = options
        self._all = np.arange(num_envs, dtype=np.int32)
        self._returns = np.zeros(num_envs, np.float64)
        self._lengths = np.zeros(num_envs, np.int64)
        self._started = False

    def reset(self) -> np.ndarray:
        """Reset every env; returns observations `[E, C, H, W]`."""
        obs, info = self._pool.reset(self._all)
        self._returns[:] = 0
        self._lengths[:] = 0
        self._started = True
        return _in_env_order(obs, info["env_id"], self.num_envs)

    def step(self, actions: np.ndarray) -> VectorStep:
        """Apply actions `[E]`; finished episodes restart within this same step."""
        self.send(actions)
        return self.recv()

    def send(self, actions: np.ndarray) -> None:
        """Start a step with actions `[E]` and return at once; `recv` waits for it.

        Between the two, envpool's threads step the emulators while the caller works (the
        double-buffered collector acts on the other half of its envs meanwhile).
        """
        if not self._started:
            raise EnvError("Call reset() on the envpool vector env before step().")
        actions = np.asarray(actions).astype(np.int32, copy=False).reshape(self.num_envs)
        if actions.min() < 0 or actions.max() >= self.spec.num_actions:
            # envpool indexes the action set in C++ without a check; fail here instead.
            raise EnvError(
                f"{self.spec.env_id}: actions must be in [0, {self.spec.num_actions}), got "
                f"{actions.tolist()}."
            )
        self._pool.send(actions, self._all)

    def recv(self) -> VectorStep:
        """The step started by `send`."""
        obs, reward, terminated, truncated, info = self._pool.recv()
        order = np.asarray(info["env_id"])
        if not np.array_equal(order, self._all):
            index = np.argsort(order)
            obs, reward = obs[index], reward[index]
            terminated, truncated = terminated[index], truncated[index]
        reward = np.asarray(reward, np.float32)
        terminated = np.asarray(terminated, bool)
        truncated = np.asarray(truncated, bool)
        self._returns += reward
        self._lengths += 1
        done = np.flatnonzero(terminated | truncated)
        if len(done) == 0:
            return VectorStep(obs, reward, terminated, truncated)
        final_obs = {int(i): obs[i].copy() for i in done}
        returns = [float(r) for r in self._returns[done]]
        lengths = [int(n) for n in self._lengths[done]]
        self._returns[done] = 0
        self._lengths[done] = 0
        first_obs, info = self._pool.reset(done.astype(np.int32))
        obs[np.asarray(info["env_id"])] = first_obs
        return VectorStep(obs, reward, terminated, truncated, final_obs, returns, lengths)

    def close(self) -> None:
        self._pool.close()


def _in_env_order(obs: np.ndarray, env_ids: np.ndarray, num_envs: int) -> np.ndarray:
    if len(env_ids) != num_envs:
        raise EnvError(f"envpool returned {len(env_ids)} observations for {num_envs} envs.")
    ordered = np.empty_like(obs)
    ordered[np.asarray(env_ids)] = obs
    return ordered
