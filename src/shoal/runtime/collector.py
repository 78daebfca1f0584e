"""The actor loop for unroll-based agents: step a vector env T times and assemble an Unroll."""

from __future__ import annotations

import numpy as np

from shoal.agents.base import Policy, Transitions, Unroll
from shoal.envs.vector import VectorEnv
from shoal.tree import assign, map_tree


class UnrollCollector:
    """Collects `[T, E]` unrolls from one vector env, carrying the last observation over."""

    def __init__(self, env: VectorEnv, policy: Policy, length: int) -> None:
        self.env = env
        self.policy = policy
        self.length = length
        self.obs = env.reset()
        # Recurrent policies keep per-env state and must hear when an episode ends.
        self._episode_ended = getattr(policy, "episode_ended", None)
        # Policies that take the previous reward as an input (R2D2) hear each step's rewards.
        self._observe_rewards = getattr(policy, "observe_rewards", None)
        # Replay agents turn unrolls into n-step transitions on the actor.
        self._prepare = getattr(policy, "prepare", None)
        self.finished_returns: list[float] = []
        self.finished_lengths: list[int] = []

    def collect(self) -> Unroll:
        """T steps of every env. Episode statistics accumulate in `finished_*` until drained."""
        if getattr(self.env, "halves", None) and getattr(self.policy, "acts_per_env", False):
            return self._collect_double_buffered()
        length, num_envs = self.length, self.env.num_envs
        obs = self.env.spec.allocate_obs(length + 1, num_envs)
        rewards = np.empty((length, num_envs), np.float32)
        terminated = np.empty((length, num_envs), bool)
        truncated = np.empty((length, num_envs), bool)
        actions_list, extras_list = [], []
        final_obs, final_index = [], []
        for t in range(length):
            assign(obs, t, self.obs)
            actions, extras = self.policy.act(self.obs)
            step = self.env.step(actions)
            actions_list.append(actions)
            extras_list.append(extras)
            rewards[t] = step.reward
            terminated[t] = step.terminated
            truncated[t] = step.truncated
            if self._observe_rewards is not None:
                self._observe_rewards(step.reward)
            if self._episode_ended is not None:
                self._episode_ended(step.terminated | step.truncated)
            for b, last in step.final_obs.items():
                if step.truncated[b] and not step.terminated[b]:
                    final_obs.append(last)
                    final_index.append((t, b))
            self.finished_returns += step.episode_returns
            self.finished_lengths += step.episode_lengths
            self.obs = step.obs
        assign(obs, length, self.obs)
        extras = {k: np.stack([e[k] for e in extras_list]) for k in extras_list[0]}
        return Unroll(
            obs=obs,
            actions=np.stack(actions_list),
            rewards=rewards,
            terminated=terminated,
            truncated=truncated,
            extras=extras,
            final_obs=(
                map_tree(lambda *xs: np.stack(xs), *final_obs)
                if final_obs
                else self.env.spec.allocate_obs(0)
            ),
            final_index=np.array(final_index, np.int64).reshape(-1, 2),
            behaviour_version=getattr(self.policy, "version", 0),
        )

    def _collect_double_buffered(self) -> Unroll:
        """`collect` for a split env: each half steps while the policy acts on the other.

        Only for policies whose `act` treats envs independently (`acts_per_env`): the policy
        sees each half as its own batch, and no `episode_ended` is called.
        """
        env, length = self.env, self.length
        obs = env.spec.allocate_obs(length + 1, env.num_envs)
        rewards = np.empty((length, env.num_envs), np.float32)
        terminated = np.empty((length, env.num_envs), bool)
        truncated = np.empty((length, env.num_envs), bool)
        actions: list[list[np.ndarray]] = [[] for _ in range(length)]
        extras: list[list[dict[str, np.ndarray]]] = [[] for _ in range(length)]
        final_obs, final_index = [], []

        def record(t: int, half: int) -> None:
            step, part, offset = env.halves[half].recv(), env.slices[half], env.offsets[half]
            rewards[t, part], terminated[t, part], truncated[t, part] = (
                step.reward,
                step.terminated,
                step.truncated,
            )
            for b, last in step.final_obs.items():
                if step.truncated[b] and not step.terminated[b]:
                    final_obs.append(last)
                    final_index.append((t, offset + b))
            self.finished_returns += step.episode_returns
            self.finished_lengths += step.episode_lengths
            self.obs[part] = step.obs

        for t in range(length):
            for half, part in enumerate(env.slices):
                if t > 0:
                    record(t - 1, half)
                obs[t, part] = self.obs[part]
                half_actions, half_extras = self.policy.act(self.obs[part])
                env.halves[half].send(half_actions)
                actions[t].append(half_actions)
                extras[t].append(half_extras)
        for half in range(len(env.halves)):
            record(length - 1, half)
        obs[length] = self.obs
        return Unroll(
            obs=obs,
            actions=np.stack([np.concatenate(a) for a in actions]),
            rewards=rewards,
            terminated=terminated,
            truncated=truncated,
            extras={
                k: np.stack([np.concatenate([e[k] for e in step]) for step in extras])
                for k in extras[0][0]
            },
            final_obs=np.stack(final_obs) if final_obs else env.spec.allocate_obs(0),
            final_index=np.array(final_index, np.int64).reshape(-1, 2),
            behaviour_version=getattr(self.policy, "version", 0),
        )

    def collect_for_learner(self) -> Unroll | Transitions:
        """An unroll, or what the policy's `prepare` makes of it for a replay learner."""
        unroll = self.collect()
        return unroll if self._prepare is None else self._prepare(unroll)

    def drain_episodes(self) -> tuple[list[float], list[int]]:
        returns, lengths = self.finished_returns, self.finished_lengths
        self.finished_returns, self.finished_lengths = [], []
        return returns, lengths
