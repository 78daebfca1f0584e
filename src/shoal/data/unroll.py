"""What an actor hands on: `[T, B]` steps of a vector env, time-major, and the step after them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shoal.tree import Tree, map_tree

__all__ = ["Unroll", "concat_unrolls"]


@dataclass
class Unroll:
    """T steps of B environments, time-major, plus the step to bootstrap from.

    Observations keep the env's dtype (uint8 frames stay uint8). `final_obs[k]` is the last
    observation of the episode that was truncated at step `final_index[k] = (t, b)`: the
    observation in `obs[t + 1, b]` is already the next episode's first one.

    `extras` holds what the policy returned while acting, and what the runtime recorded beside
    it: `first` `[T, B]` (obs[t] starts an episode) and, for a recurrent policy, the state each
    step started from under the state's own keys (e.g. `core_h`, `core_c` `[T, B, H]`).
    """

    obs: Tree  # [T + 1, B, ...]; a dict of such arrays for a Dict observation space
    actions: np.ndarray  # [T, B, ...] as the policy chose them (before clipping to bounds)
    rewards: np.ndarray  # [T, B] float32
    terminated: np.ndarray  # [T, B] bool
    truncated: np.ndarray  # [T, B] bool
    extras: dict[str, np.ndarray]  # [T, B, ...]
    final_obs: Tree  # [K, ...], per key as `obs`
    final_index: np.ndarray  # [K, 2] int64 (t, b)
    behaviour_version: int = 0  # learner version of the weights that acted
    env_slot: int = 0  # the run-wide slot of env column 0 (which actor's envs these are)

    @property
    def length(self) -> int:
        return int(self.rewards.shape[0])

    @property
    def batch_size(self) -> int:
        return int(self.rewards.shape[1])


def concat_unrolls(unrolls: list[Unroll]) -> Unroll:
    """Unrolls of the same length side by side: `[T, B1] + [T, B2] -> [T, B1 + B2]`."""
    if len(unrolls) == 1:
        return unrolls[0]
    lengths = sorted({u.length for u in unrolls})
    if len(lengths) > 1:
        raise ValueError(
            f"Unrolls in one batch must have the same length T, got lengths {lengths}; "
            "collect them with the same unroll_length."
        )
    offsets = np.cumsum([0] + [u.batch_size for u in unrolls[:-1]])
    final_index = [
        u.final_index + np.array([0, off]) for u, off in zip(unrolls, offsets, strict=True)
    ]
    return Unroll(
        obs=map_tree(lambda *xs: np.concatenate(xs, axis=1), *[u.obs for u in unrolls]),
        actions=np.concatenate([u.actions for u in unrolls], axis=1),
        rewards=np.concatenate([u.rewards for u in unrolls], axis=1),
        terminated=np.concatenate([u.terminated for u in unrolls], axis=1),
        truncated=np.concatenate([u.truncated for u in unrolls], axis=1),
        extras={
            k: np.concatenate([u.extras[k] for u in unrolls], axis=1) for k in unrolls[0].extras
        },
        final_obs=map_tree(lambda *xs: np.concatenate(xs), *[u.final_obs for u in unrolls]),
        final_index=np.concatenate(final_index).astype(np.int64),
        behaviour_version=min(u.behaviour_version for u in unrolls),
        env_slot=min(u.env_slot for u in unrolls),
    )
