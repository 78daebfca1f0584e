"""CartPole-v1 stepped as one numpy array: Gymnasium's `CartPoleVectorEnv` behind shoal's
`VectorEnv` protocol (`--env.vector numpy`).

Stepping 8 `gym.make("CartPole-v1")` envs one by one costs about 25 µs each in Python (the env
and its TimeLimit, OrderEnforcing and PassiveEnvChecker wrappers); on PPO's CartPole preset that
was a fifth of the time to solve. Gymnasium's vector CartPole steps all of them in a few numpy
operations, with the same dynamics, rewards, 500-step limit and start distribution.

Two differences from the per-env vector, both documented for `--env.vector numpy`:

- Autoreset. Gymnasium's vector CartPole resets on the *next* step (`AutoresetMode.NEXT_STEP`):
  the step on which an episode ends returns its last observation, the next one ignores that
  env's action. shoal's convention is the same-step autoreset of `shoal.envs.vector`, so here
  the envs that just finished get a new start state at once, drawn from the vector env's own
  generator as its reset would, and `step` returns it in `obs`, the last one in `final_obs`.
  That uses the vector env's `state`, `steps` and `prev_done` arrays; the tests check the
  dynamics against `gym.make("CartPole-v1")` step by step, so a Gymnasium release that changes
  them fails there.
- Seeding. The vector env has one generator for all its envs, seeded with `seed` at the first
  reset, where the per-env vector seeds env i with `seed + i`: the same seed gives the same
  run, but not the same episodes as `--env.vector inline`.
"""

from __future__ import annotations

import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

from shoal.envs.spec import EnvSpec
from shoal.envs.vector import VectorStep

__all__ = ["NUMPY_VECTOR_ENVS", "NumpyCartPoleVectorEnv"]

# The env ids `--env.vector numpy` can step (Gymnasium ships a numpy vector env for these).
NUMPY_VECTOR_ENVS = ("CartPole-v1",)
_MAX_EPISODE_STEPS = 500  # CartPole-v1's registered limit


class NumpyCartPoleVectorEnv:
    """`num_envs` CartPole-v1 envs in one `CartPoleVectorEnv`, with same-step autoreset."""

    def __init__(self, num_envs: int, spec: EnvSpec, seed: int) -> None:
        self.num_envs = num_envs
        self.spec = spec
        self.seed = seed
        self.env = CartPoleVectorEnv(num_envs=num_envs, max_episode_steps=_MAX_EPISODE_STEPS)
        self._returns = np.zeros(num_envs, np.float64)
        self._lengths = np.zeros(num_envs, np.int64)

    def reset(self) -> np.ndarray:
        obs, _ = self.env.reset(seed=self.seed)
        self._returns[:] = 0
        self._lengths[:] = 0
        return obs

    def step(self, actions: np.ndarray) -> VectorStep:
        obs, reward, terminated, truncated, _ = self.env.step(
            np.asarray(actions, dtype=np.int64).reshape(self.num_envs)
        )
        self._returns += reward
        self._lengths += 1
        done = terminated | truncated
        final_obs: dict[int, np.ndarray] = {}
        returns: list[float] = []
        lengths: list[int] = []
        if done.any():
            ended = np.flatnonzero(done)
            for i in ended:
                final_obs[int(i)] = obs[i].copy()
            returns = self._returns[ended].tolist()
            lengths = self._lengths[ended].tolist()
            self._returns[ended] = 0
            self._lengths[ended] = 0
            obs = self._restart(done, obs)
        return VectorStep(
            obs,
            reward.astype(np.float32, copy=False),
            terminated.copy(),
            truncated.copy(),
            final_obs,
            returns,
            lengths,
        )

    def _restart(self, done: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """New start states for the `done` envs now, as the vector env's next step would draw
        them, and its pending next-step reset of them cancelled."""
        env = self.env
        state = env.state
        assert state is not None  # reset() ran
        state[:, done] = env.np_random.uniform(low=env.low, high=env.high, size=(4, done.sum()))
        env.steps[done] = 0
        env.prev_done[done] = False
        obs = obs.copy()
        obs[done] = state[:, done].T.astype(np.float32)
        return obs

    def close(self) -> None:
        self.env.close()
