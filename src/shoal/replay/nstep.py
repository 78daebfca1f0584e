"""Actor-side assembly of n-step transitions from a stream of vector-env steps.

For each env step t the accumulator emits, once known, the transition

    (obs_t, a_t, R_t = Σ_{k<m} γ^k r_{t+k}, discount = γ^m, obs_{t+m}),

with m = n (Sutton & Barto 2018, eq. 7.1; the n-step targets of Ape-X, Horgan et al. 2018, and
Rainbow). An episode end within the n steps shortens m and flushes every pending transition of that
env: after a termination the discount is 0 (nothing to bootstrap from); after a truncation it is
`γ^m` and `next_obs` is the true final observation (`final_obs`), never the reset observation that
a same-step-autoreset vector env returns in `next_obs`.

Each output is a dict of `[M, ...]` arrays with exactly the fields `TransitionReplay.add` takes:
per env, transitions come out in step order, with `first` (obs_t starts an episode), `last` (the
episode ended at step t), `steps` (m) and `stream` (the env's stream id). The work per call is
vectorised over envs; the only Python loop is over the n ages of pending transitions.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["NStepAccumulator"]


class NStepAccumulator:
    """Turns per-step `[E, ...]` env data into n-step transitions (see the module docstring).

    Args:
        num_envs: E, envs stepped together.
        n: the largest number of rewards summed into one transition.
        gamma: the discount per step.
        stream_ids: `[E]` ids that tell this actor's envs apart in a shared replay
            (default `0..E-1`; give each actor its own range).
    """

    def __init__(
        self, num_envs: int, n: int, gamma: float, stream_ids: np.ndarray | None = None
    ) -> None:
        if num_envs < 1 or n < 1:
            raise ValueError(f"num_envs and n must be >= 1, got {num_envs} and {n}.")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}.")
        self.num_envs, self.n, self.gamma = int(num_envs), int(n), float(gamma)
        ids = np.arange(num_envs) if stream_ids is None else np.asarray(stream_ids, np.int64)
        if ids.shape != (num_envs,):
            raise ValueError(f"stream_ids must have shape [E] = ({num_envs},), got {ids.shape}.")
        self.stream_ids = ids.astype(np.int64)
        self._obs: np.ndarray | None = None  # [n, E, ...], slot t % n holds obs_t
        self._action: np.ndarray | None = None  # [n, E, ...]
        self._reward = np.zeros((n, num_envs), np.float64)
        self._first = np.zeros((n, num_envs), bool)
        self.reset()

    def reset(self) -> None:
        """Drop pending transitions; the next observation of every env starts an episode."""
        self._pending = np.zeros(self.num_envs, np.int64)  # steps not yet emitted, per env
        self._starting = np.ones(self.num_envs, bool)
        self._t = 0

    def step(
        self,
        obs: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        next_obs: np.ndarray,
        final_obs: Mapping[int, np.ndarray] | np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """Record one step of E envs and return the transitions it completes.

        Args:
            obs: `[E, ...]` observations the actions were taken in.
            action: `[E, ...]` actions.
            reward, terminated, truncated: `[E]`.
            next_obs: `[E, ...]` observations after the step (reset observations where an
                episode ended, with same-step autoreset).
            final_obs: the last observation of each ended episode: `{env: obs}` (as
                `VectorStep.final_obs`) or an `[E, ...]` array read at ended envs. Needed
                whenever an episode ends.

        Returns:
            `obs`, `next_obs` `[M, ...]`, `action [M, ...]`, `reward`, `discount` float32,
            `steps` int64, `first`, `last` bool, `stream` int64, all `[M]`, M >= 0.
        """
        e, n = self.num_envs, self.n
        obs, next_obs, action = np.asarray(obs), np.asarray(next_obs), np.asarray(action)
        term = np.asarray(terminated, bool)
        ended = term | np.asarray(truncated, bool)
        for name, x in (("obs", obs), ("next_obs", next_obs), ("action", action)):
            if x.shape[:1] != (e,):
                raise ValueError(f"{name} must have shape [E, ...] with E = {e}, got {x.shape}.")
        if self._obs is None or self._action is None:
            self._obs = np.zeros((n, *obs.shape), obs.dtype)
            self._action = np.zeros((n, *action.shape), action.dtype)
        if obs.shape != self._obs.shape[1:] or next_obs.shape != obs.shape:
            raise ValueError(f"obs and next_obs must have shape {self._obs.shape[1:]}.")
        final = next_obs
        if ended.any():
            final = next_obs.copy()
            for i in np.flatnonzero(ended):
                if final_obs is None or (isinstance(final_obs, Mapping) and i not in final_obs):
                    raise ValueError(
                        f"Env {i} ended at this step but final_obs has no entry for it; pass "
                        "the last observation of each ended episode (VectorStep.final_obs)."
                    )
                final[i] = final_obs[int(i)]

        slot = self._t % n
        self._obs[slot], self._action[slot] = obs, action
        self._reward[slot] = np.asarray(reward, np.float64).reshape(e)
        self._first[slot] = self._starting
        self._pending += 1

        full = ~ended & (self._pending == n)
        out: dict[str, list[np.ndarray]] = {}
        ret = np.zeros(e, np.float64)
        returns = []  # returns[j]: Σ_{i<=j} γ^i r_{t-j+i}, the return of the step j steps ago
        for j in range(n):
            ret = self._reward[(self._t - j) % n] + self.gamma * ret
            returns.append(ret)
        for j in range(n - 1, -1, -1):  # oldest first, so each env's steps come out in order
            envs = np.flatnonzero((ended & (j < self._pending)) | (full & (j == n - 1)))
            s = (self._t - j) % n
            discount = np.where(term[envs], 0.0, self.gamma ** (j + 1))
            fields = {
                "obs": self._obs[s, envs],
                "action": self._action[s, envs],
                "reward": returns[j][envs].astype(np.float32),
                "discount": discount.astype(np.float32),
                "next_obs": final[envs],  # obs_{t+1} of the emitting envs, or their final obs
                "steps": np.full(len(envs), j + 1, np.int64),
                "first": self._first[s, envs],
                "last": ended[envs] & (j == 0),
                "stream": self.stream_ids[envs],
            }
            for key, value in fields.items():
                out.setdefault(key, []).append(value)

        self._pending[ended] = 0
        self._pending[full] -= 1
        self._starting = ended
        self._t += 1
        return {key: np.concatenate(parts) for key, parts in out.items()}
